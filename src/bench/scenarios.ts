// The standard scenarios, run the same way against every broker: durable send with W in flight, peek-lock
// receive + complete with credit W, send and receive at once (unpaced, and paced at a fixed offered load for
// latency), and — where the broker has peek-lock expiry — the lag between a lock's expiry and redelivery.
// Each run is measured with the broker's CPU and RSS; medians over the repeats are reported.

import { connect, closeConn, e2eRun, median, receiveRun, receiverOpts, sendRun, Samples, Watchdog, type Any, type Target } from './generator.js';
import { ProcSampler } from './peers.js';
import { addDeltas, commitFigures, fdatasyncLoop, scrapeWaits, WAIT_METRICS, type Histograms } from './commit.js';
import { monotonicUs, noteWindow } from './profile.js';

/** Locks held per connection: under rhea's 2,048 unsettled deliveries per session. */
const HOLD_PER_CONN = 2000;

/** One line of the report: a scenario on one broker, medians over the repeats. */
export interface Row {
  scenario: string;
  broker: string;
  n: number;
  [metric: string]: string | number;
}

/** What to run. */
export interface Plan {
  messages: number;
  repeats: number;
  /** Offered load of the paced end-to-end scenario, msg/s. */
  rate: number;
  /** Messages of the paced scenario. */
  pacedMessages: number;
  /** Only the W=100 1 KiB send/receive pair and the e2e scenarios (for a quick look). */
  quick: boolean;
  log: (line: string) => void;
}

/** Median of each numeric metric over the runs, rounded to 0.01. */
function medians(runs: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(runs[0] ?? {})) out[k] = Math.round(median(runs.map((r) => r[k]!)) * 100) / 100;
  return out;
}

/** Runs `fn`, which moves `n` messages, with the broker's CPU (in all and per message) and RSS measured around it. */
async function measured(t: Target, n: number, label: string, fn: () => Promise<Record<string, number>>): Promise<Record<string, number>> {
  const s = new ProcSampler(t.pid, label);
  s.start();
  try {
    const r = await fn();
    return { ...r, ...s.stop(n) };
  } finally {
    s.stop();
  }
}

/** Runs the standard scenarios against one broker. */
export async function runStandard(t: Target, plan: Plan): Promise<Row[]> {
  const rows: Row[] = [];
  const q = 'bench';
  const matrix: [number, number][] = plan.quick ? [[100, 1024]] : [[1, 1024], [100, 1024], [1000, 1024], [100, 65536]];
  for (const [w, size] of matrix) {
    // W=1 is one round trip (and for durable brokers one fsync) per message; 64 KiB moves 64× the bytes.
    const n = w === 1 ? Math.min(plan.messages, 2000) : size > 4096 ? Math.min(plan.messages, 4000) : plan.messages;
    const credit = Math.max(w, 10);
    const kib = `${size / 1024}KiB`;
    const sends: Record<string, number>[] = [];
    const recvs: Record<string, number>[] = [];
    // Under the W=100 1 KiB send load, peeklock's own commit round trip and its waits (its histograms, before and
    // after each run).
    const probe = w === 100 && size === 1024 ? t.commitProbe : undefined;
    const waits: Histograms = new Map();
    for (let r = 0; r < plan.repeats; r++) {
      const before = probe && (await scrapeWaits(probe.metricsUrl));
      sends.push(await measured(t, n, `send W=${w} ${kib}`, () => sendRun(t, q, n, w, size)));
      if (probe && before) addDeltas(waits, before, await scrapeWaits(probe.metricsUrl));
      recvs.push(await measured(t, n, `receive+complete credit=${credit} ${kib}`, () => receiveRun(t, q, n, credit)));
    }
    rows.push({ scenario: `send W=${w} ${kib}`, broker: t.name, n, ...medians(sends) });
    rows.push({ scenario: `receive+complete credit=${credit} ${kib}`, broker: t.name, n, ...medians(recvs) });
    plan.log(`  ${t.name}: W=${w} ${kib} send ${rows.at(-2)!.msgsPerSec}/s, receive ${rows.at(-1)!.msgsPerSec}/s`);
    if (probe) {
      for (const { metric, label } of WAIT_METRICS) {
        const c = commitFigures(waits.get(metric) ?? new Map());
        rows.push({ scenario: `${label} under send W=${w} ${kib}`, broker: t.name, n: c.commits!, p50Ms: c.p50Ms!, p99Ms: c.p99Ms! });
      }
      // The same disk, same directory, same run, with the broker idle: the floor a commit could reach.
      const d = fdatasyncLoop(probe.dataDir);
      rows.push({ scenario: 'disk 4KiB write + fdatasync (data dir, idle)', broker: t.name, n: d.syncs!, p50Ms: d.p50Ms!, p99Ms: d.p99Ms!, maxMs: d.maxMs! });
      const c = rows.at(-1 - WAIT_METRICS.length)!;
      plan.log(`  ${t.name}: commit p50 ${c.p50Ms} ms p99 ${c.p99Ms} ms (${c.n} commits); fdatasync p50 ${d.p50Ms} ms p99 ${d.p99Ms} ms`);
    }
  }
  const e2e: Record<string, number>[] = [];
  const paced: Record<string, number>[] = [];
  const pacedN = Math.min(plan.pacedMessages, plan.messages);
  for (let r = 0; r < plan.repeats; r++) {
    e2e.push(await measured(t, plan.messages, 'e2e W=100 1KiB', () => e2eRun(t, q, plan.messages, 100, 1024, 0)));
    paced.push(await measured(t, pacedN, `e2e @${plan.rate}/s 1KiB`, () => e2eRun(t, q, pacedN, 1000, 1024, plan.rate)));
  }
  const pick = (m: Record<string, number>, prefix: string): Record<string, number> => ({
    msgsPerSec: m.msgsPerSec!,
    p50Ms: m[`${prefix}p50Ms`]!,
    p99Ms: m[`${prefix}p99Ms`]!,
    maxMs: m[`${prefix}maxMs`]!,
    cpuS: m.cpuS!,
    cpuUsPerMsg: m.cpuUsPerMsg!,
    maxRssMB: m.maxRssMB!,
  });
  const e = medians(e2e);
  const p = medians(paced);
  rows.push({ scenario: 'e2e W=100 1KiB send→received', broker: t.name, n: plan.messages, ...pick(e, '') });
  rows.push({ scenario: `e2e @${plan.rate}/s 1KiB send→accepted`, broker: t.name, n: pacedN, ...pick(p, 'accepted_') });
  rows.push({ scenario: `e2e @${plan.rate}/s 1KiB send→received`, broker: t.name, n: pacedN, ...pick(p, '') });
  plan.log(`  ${t.name}: e2e ${e.msgsPerSec}/s; paced p99 accepted ${p.accepted_p99Ms} ms, received ${p.p99Ms} ms`);
  return rows;
}

/**
 * Locks `n` messages of `queue` without settling, then measures the time from each lock's expiry
 * (x-opt-locked-until) to the message's redelivery to a second receiver. peeklock only (Service Bus annotations).
 */
// `lockRate` paces the taking of locks (locks/s; 0 = as fast as the broker hands them out). Locks lapse in the
// order and at the rate they were taken, so at a rate the broker can redeliver at, the lag measures how late
// expiry happens with n locks outstanding; unpaced, every lock lapses within the time it took to take them
// all and the lag becomes a queue behind the redelivery throughput.
export async function expiryLag(t: Target, queue: string, n: number, lockSeconds: number, lockRate = 0): Promise<Record<string, number>> {
  await sendRun(t, queue, n, 1000, 1024);
  // An AMQP session holds at most 2,048 unsettled deliveries in rhea (its outgoing buffer), so locks are
  // spread over one connection per 2,000.
  const holders = await Promise.all(Array.from({ length: Math.ceil(n / HOLD_PER_CONN) }, (_, i) => connect(t, `bench-holder-${i}`)));
  const other = await connect(t, 'bench-other');
  const sampler = new ProcSampler(t.pid);
  sampler.start();
  try {
    // Locked-until by sequence number; an entry is removed when its redelivery is seen.
    const until = new Map<number, number>();
    let firstUntil = Infinity;
    const seqOf = (ctx: Any): number => Number(ctx.message.message_annotations['x-opt-sequence-number']);
    const dog = new Watchdog();
    const t0 = performance.now();
    let locked = 0;
    await dog.guard(
      'lock',
      new Promise<void>((resolve) => {
        const onMessage = (ctx: Any): void => {
          const lockedUntil = (ctx.message.message_annotations['x-opt-locked-until'] as Date).getTime();
          until.set(seqOf(ctx), lockedUntil);
          firstUntil = Math.min(firstUntil, lockedUntil);
          dog.tick();
          if (++locked === n) resolve();
        };
        const links = holders.map((h) => {
          const a = h.open_receiver(receiverOpts(t, queue, 0));
          a.on('message', onMessage);
          return a;
        });
        const credit = (i: number, k: number): void => links[i]!.add_credit(k);
        if (!lockRate) links.forEach((_, i) => credit(i, Math.min(HOLD_PER_CONN, n - i * HOLD_PER_CONN)));
        else paceCredit(links.length, n, lockRate, credit);
      }),
    );
    const lockSecs = (performance.now() - t0) / 1000;
    if (Date.now() > firstUntil) throw new Error(`taking ${n} locks took ${lockSecs.toFixed(1)} s, past the ${lockSeconds} s lock duration: raise --scale-lock-seconds`);
    // Settle mode first with autoaccept: the redelivered copies are completed as they arrive.
    const b = other.open_receiver({ ...receiverOpts(t, queue, 1000), autoaccept: true, rcv_settle_mode: 0 });
    // Under --profile, the window from the first lapse to the last redelivery.
    const lapsing = monotonicUs() + Math.max(0, firstUntil - Date.now()) * 1000;
    const lags = new Samples(n);
    let redelivered = 0;
    await dog.guard(
      'redelivery',
      new Promise<void>((resolve) => {
        b.on('message', (ctx: Any) => {
          const seq = seqOf(ctx);
          const lockedUntil = until.get(seq);
          if (lockedUntil === undefined) return;
          until.delete(seq);
          lags.add(Date.now() - lockedUntil);
          dog.tick();
          if (++redelivered === n) resolve();
        });
      }),
      lockSeconds * 1000 + 60_000,
    );
    noteWindow(t.pid, `lock expiry: ${n} locks lapsing and redelivered`, lapsing, monotonicUs());
    const s = lags.summary('lag_');
    return { locks: n, lockRate, lockPerSec: Math.round(n / lockSecs), lagP50Ms: s.lag_p50Ms!, lagP99Ms: s.lag_p99Ms!, lagMaxMs: s.lag_maxMs!, ...sampler.stop() };
  } finally {
    sampler.stop();
    await Promise.all([...holders, other].map((c) => closeConn(c)));
  }
}

/** Grants `n` credits in total at `rate` per second, filling holder i (HOLD_PER_CONN each) before holder i + 1. */
function paceCredit(holders: number, n: number, rate: number, credit: (holder: number, k: number) => void): void {
  const t0 = performance.now();
  let granted = 0;
  const tick = (): void => {
    const due = Math.min(n, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    while (granted < due) {
      const holder = Math.floor(granted / HOLD_PER_CONN);
      const k = Math.min(due - granted, (holder + 1) * HOLD_PER_CONN - granted);
      credit(holder, k);
      granted += k;
    }
    if (granted < n && holders > 0) setTimeout(tick, 10);
  };
  tick();
}
