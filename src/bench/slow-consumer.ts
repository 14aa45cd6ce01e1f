// Scale scenario `slow`: a backlog of 128 MB in 64 KiB messages streamed to one peek-lock consumer that grants
// credit for all of it at once but reads its socket slowly (a duty cycle of reading and pausing). The broker's
// RSS is sampled throughout: what the broker holds for such a consumer must not grow with the credit it grants.

import fs from 'node:fs';
import { closeConn, connect, receiverOpts, sendRun, Watchdog, type Any } from './generator.js';
import { ProcSampler, startPeeklock } from './peers.js';

/** Sizes of the slow-consumer scenario. */
export interface SlowPlan {
  /** Backlog in bytes (default 128 MiB). */
  bytes: number;
  /** Size of each message. */
  messageBytes: number;
  /** Of each `cycleMs`, the consumer reads its socket for `readMs` and pauses it for the rest. */
  readMs: number;
  cycleMs: number;
}

/** The scenario: 128 MiB of 64 KiB messages, read 5 ms out of every 100 ms. */
export const SLOW_DEFAULTS: SlowPlan = { bytes: 128 * 1024 * 1024, messageBytes: 64 * 1024, readMs: 5, cycleMs: 100 };

/** Runs the scenario on a fresh peeklock; one row of figures. */
export async function slowConsumer(plan: SlowPlan = SLOW_DEFAULTS): Promise<Record<string, string | number>> {
  const n = Math.ceil(plan.bytes / plan.messageBytes);
  const t = await startPeeklock([{ name: 'slow', lock: 'PT5M' }]);
  try {
    const load = await sendRun(t, 'slow', n, 100, plan.messageBytes);
    const proc = new ProcSampler(t.pid);
    const rssLoaded = proc.statusMB('VmRSS');
    proc.start();
    const conn = await connect(t, 'slow-consumer');
    const dog = new Watchdog();
    let got = 0;
    const t0 = performance.now();
    // Anonymous memory (heap, buffers) apart from the mapped data file, which the kernel may drop at will.
    const max = { RssAnon: 0, RssFile: 0 };
    const sampler = setInterval(() => {
      for (const k of ['RssAnon', 'RssFile'] as const) max[k] = Math.max(max[k], statusMB(t.pid, k));
    }, 50);
    const duty = setInterval(() => {
      conn.socket.resume();
      setTimeout(() => got < n && conn.socket.pause(), plan.readMs);
    }, plan.cycleMs);
    try {
      await dog.guard(
        'slow consumer',
        new Promise<void>((resolve) => {
          const receiver = conn.open_receiver(receiverOpts(t, 'slow', 0));
          receiver.on('message', (ctx: Any) => {
            ctx.delivery.accept();
            dog.tick();
            if (++got === n) resolve();
          });
          // All the credit at once, as a client with a large prefetch does.
          receiver.add_credit(n);
        }),
      );
    } finally {
      clearInterval(duty);
      clearInterval(sampler);
      conn.socket.resume();
    }
    const seconds = (performance.now() - t0) / 1000;
    const r = proc.stop();
    await closeConn(conn);
    return {
      scenario: `slow consumer ${Math.round(plan.bytes / 1048576)} MiB × ${plan.messageBytes / 1024} KiB, credit ${n}, reading ${plan.readMs}/${plan.cycleMs} ms`,
      loadPerSec: load.msgsPerSec!,
      rssLoadedMB: rssLoaded,
      streamS: Math.round(seconds * 10) / 10,
      maxRssMB: r.maxRssMB,
      maxRssAnonMB: max.RssAnon,
      maxRssFileMB: max.RssFile,
    };
  } finally {
    await t.stop();
  }
}

/** A field of /proc/<pid>/status in MB, or 0. */
function statusMB(pid: number | undefined, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}
