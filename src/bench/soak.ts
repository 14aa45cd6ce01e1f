// `--soak-minutes N`: N minutes of durable sends paced at a fixed rate (default 1,000 msg/s) while a peek-lock
// receiver takes and completes them, on a fresh peeklock. Every minute's worth of messages is a window: the
// broker's RSS (VmRSS, RssAnon, RssFile) is read when the window's last message is completed, and send → accepted
// and send → received p50/p99 are computed over the window's messages. The RSS series is called flat after
// warm-up only when every sample after the warm-up stays within the stated tolerance of their median.

import { closeConn, connect, indexedTemplate, openSender, receiverOpts, Samples, senderOpts, Watchdog, type Any } from './generator.js';
import { ProcSampler, startPeeklock } from './peers.js';

/** What to run. */
export interface SoakPlan {
  minutes: number;
  /** Offered load, msg/s. */
  rate: number;
  log: (line: string) => void;
}

/** A window is flat when every sample is within this fraction of the windows' median, or within FLAT_MB. */
const FLAT_FRACTION = 0.05;
const FLAT_MB = 10;
/** In flight at most: as the paced end-to-end scenario. */
const WINDOW = 1000;

/** The verdict on an RSS series (MB per minute): warm-up minutes, spread after it, and whether that is flat. */
export function flatness(series: number[]): { warmUpMin: number; spreadMB: number; toleranceMB: number; verdict: string } {
  const warmUpMin = Math.max(1, Math.ceil(series.length / 10));
  const after = series.slice(warmUpMin);
  if (after.length < 3) return { warmUpMin, spreadMB: NaN, toleranceMB: NaN, verdict: `too short to judge (${after.length} sample${after.length === 1 ? '' : 's'} after ${warmUpMin} min warm-up; need 3)` };
  const sorted = [...after].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  const tol = Math.max(FLAT_MB, Math.round(median * FLAT_FRACTION));
  const spread = Math.max(...after.map((x) => Math.abs(x - median)));
  const range = `${sorted[0]}–${sorted.at(-1)} MB after ${warmUpMin} min warm-up`;
  const verdict = spread <= tol ? `flat: ${range}, within ±${tol} MB of their median ${median} MB` : `not flat: ${range}, a sample ${spread} MB from their median ${median} MB (tolerance ±${tol} MB)`;
  return { warmUpMin, spreadMB: spread, toleranceMB: tol, verdict };
}

/** Runs the soak on a fresh peeklock; one row of figures with per-minute series (space-separated). */
export async function soak(plan: SoakPlan): Promise<Record<string, string | number>> {
  const perMin = plan.rate * 60;
  const total = perMin * plan.minutes;
  const t = await startPeeklock([{ name: 'soak' }]);
  const sconn = await connect(t, 'bench-soak-send');
  const rconn = await connect(t, 'bench-soak-recv');
  const proc = new ProcSampler(t.pid);
  const acc = Array.from({ length: plan.minutes }, () => new Samples(perMin));
  const e2e = Array.from({ length: plan.minutes }, () => new Samples(perMin));
  const rss: { VmRSS: number; RssAnon: number; RssFile: number; cpuS: number }[] = [];
  // Send times by message index; far more slots than messages are ever in flight.
  const sentAt = new Float64Array(1 << 20);
  const mask = sentAt.length - 1;
  const dog = new Watchdog();
  let tick: NodeJS.Timeout | undefined;
  let cpu0 = proc.cpuSeconds();
  const t0 = performance.now();
  try {
    const receiver = rconn.open_receiver(receiverOpts(t, 'soak', WINDOW));
    await new Promise<void>((resolve) => receiver.once('receiver_open', resolve));
    const sender = await openSender(sconn, senderOpts(t, 'soak'));
    const { bytes, offset } = indexedTemplate(1024);
    await dog.guard(
      'soak',
      new Promise<void>((resolve, reject) => {
        let sent = 0;
        let accepted = 0;
        let completed = 0;
        const finish = (): void => {
          if (accepted === total && completed === total) resolve();
        };
        const pump = (): void => {
          const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * plan.rate) + 1);
          while (sent < due && sent - accepted < WINDOW && sender.sendable()) {
            const b = Buffer.from(bytes);
            b.writeUInt32BE(sent, offset);
            sentAt[sent & mask] = performance.now();
            const d = sender.send(b, undefined, 0);
            d.i = sent++;
          }
          if (sent < total) tick = setTimeout(pump, 1);
        };
        sender.on('accepted', (ctx: Any) => {
          const i = ctx.delivery.i as number;
          acc[Math.floor(i / perMin)]!.add(performance.now() - sentAt[i & mask]!);
          accepted++;
          finish();
        });
        sender.on('rejected', (ctx: Any) => reject(new Error(`send rejected: ${JSON.stringify(ctx.delivery.remote_state?.error)}`)));
        receiver.on('message', (ctx: Any) => {
          const i = ctx.message.application_properties?.i as number;
          e2e[Math.floor(i / perMin)]!.add(performance.now() - sentAt[i & mask]!);
          ctx.delivery.accept();
          dog.tick();
        });
        receiver.on('settled', () => {
          if (++completed % perMin === 0) {
            const cpu = proc.cpuSeconds();
            rss.push({ VmRSS: proc.statusMB('VmRSS'), RssAnon: proc.statusMB('RssAnon'), RssFile: proc.statusMB('RssFile'), cpuS: Math.round((cpu - cpu0) * 10) / 10 });
            cpu0 = cpu;
            const m = rss.length;
            const a = acc[m - 1]!.summary();
            plan.log(`  soak minute ${m}/${plan.minutes}: RSS ${rss[m - 1]!.VmRSS} MB (anon ${rss[m - 1]!.RssAnon}, file ${rss[m - 1]!.RssFile}), send→accepted p50 ${a.p50Ms} p99 ${a.p99Ms} ms, broker CPU ${rss[m - 1]!.cpuS} s`);
          }
          finish();
        });
        for (const c of [sconn, rconn]) c.on('disconnected', () => reject(new Error(`${t.name}: disconnected during the soak`)));
        pump();
      }),
    );
    const secs = (performance.now() - t0) / 1000;
    const series = (xs: number[]): string => xs.join(' ');
    const accS = acc.map((s) => s.summary());
    const e2eS = e2e.map((s) => s.summary());
    const flat = flatness(rss.map((r) => r.VmRSS));
    return {
      scenario: `soak ${plan.minutes} min @${plan.rate}/s 1KiB send + receive+complete (per-minute series)`,
      messages: total,
      msgsPerSec: Math.round(total / secs),
      rssMB: series(rss.map((r) => r.VmRSS)),
      rssAnonMB: series(rss.map((r) => r.RssAnon)),
      rssFileMB: series(rss.map((r) => r.RssFile)),
      brokerCpuS: series(rss.map((r) => r.cpuS)),
      acceptedP50Ms: series(accS.map((s) => s.p50Ms!)),
      acceptedP99Ms: series(accS.map((s) => s.p99Ms!)),
      receivedP99Ms: series(e2eS.map((s) => s.p99Ms!)),
      rssVerdict: flat.verdict,
    };
  } finally {
    clearTimeout(tick);
    await Promise.all([closeConn(sconn), closeConn(rconn)]);
    await t.stop();
  }
}
