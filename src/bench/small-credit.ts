// The small-credit scenarios (`--small-credit`): peek-lock receive + complete the way the Service Bus SDKs' two
// everyday receivers drive a link, rather than with a large credit window.
// - `subscribe()` with maxConcurrentCalls 1 grants credit 1 and adds one credit only after the handler has
//   returned and the complete has been confirmed: one message in flight, a full round trip and a commit each.
// - `receiveMessages(10)` grants 10 credits, waits for the 10 messages, then the caller completes them (here all
//   at once) and asks again once the completes are confirmed: batches of 10, a round trip per batch.
// Each run first fills the queue with `n` 1 KiB messages; medians over the repeats, like the standard rows.

import { closeConn, connect, median, receiverOpts, sendRun, Watchdog, type Any, type Target } from './generator.js';
import { ProcSampler } from './peers.js';
import type { Row } from './scenarios.js';

/** How the receiver grants credit: one at a time after each confirmed complete, or batches of 10. */
export type CreditPattern = 'subscribe' | 'batch10';

/** Receives and completes `n` messages of `queue` with the SDK-like credit pattern; msgs/s. */
export async function smallCreditRun(t: Target, queue: string, n: number, pattern: CreditPattern): Promise<Record<string, number>> {
  const conn = await connect(t, `bench-${pattern}`);
  const dog = new Watchdog();
  const batch = pattern === 'subscribe' ? 1 : 10;
  const t0 = performance.now();
  try {
    const receiver = conn.open_receiver(receiverOpts(t, queue, 0));
    await dog.guard(
      `${t.name} ${pattern}`,
      new Promise<void>((resolve, reject) => {
        let completed = 0;
        let held: Any[] = [];
        let unconfirmed = 0;
        const ask = (): void => {
          if (completed >= n) return resolve();
          receiver.add_credit(Math.min(batch, n - completed));
        };
        // A complete is confirmed by the broker's settled disposition; a broker that settles first (RabbitMQ
        // refuses rcv-settle-mode second) confirms nothing, so its complete counts once sent.
        const confirmed = (): void => {
          completed++;
          dog.tick();
          if (--unconfirmed === 0) ask();
        };
        receiver.on('message', (ctx: Any) => {
          held.push(ctx.delivery);
          if (held.length < Math.min(batch, n - completed)) return;
          const settle = held;
          held = [];
          unconfirmed = settle.length;
          for (const d of settle) d.accept();
          if (t.rcvSettleMode === 0) for (let i = settle.length; i > 0; i--) confirmed();
        });
        receiver.on('settled', () => {
          if (t.rcvSettleMode !== 0) confirmed();
        });
        receiver.on('receiver_error', (ctx: Any) => reject(new Error(`receiver error: ${JSON.stringify(ctx.receiver.error)}`)));
        conn.on('disconnected', () => reject(new Error(`${t.name}: disconnected during receive`)));
        ask();
      }),
    );
    return { msgsPerSec: Math.round(n / ((performance.now() - t0) / 1000)) };
  } finally {
    await closeConn(conn);
  }
}

/** Both small-credit scenarios against one broker, `repeats` runs each of `n` messages; one Row per pattern. */
export async function runSmallCredit(t: Target, n: number, repeats: number, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  const labels: Record<CreditPattern, string> = {
    subscribe: 'receive+complete credit=1 (subscribe) 1KiB',
    batch10: 'receive+complete credit=10 batches (receiveMessages(10)) 1KiB',
  };
  for (const pattern of ['subscribe', 'batch10'] as const) {
    const runs: Record<string, number>[] = [];
    for (let r = 0; r < repeats; r++) {
      await sendRun(t, 'bench', n, 100, 1024);
      const s = new ProcSampler(t.pid, labels[pattern]);
      s.start();
      try {
        runs.push({ ...(await smallCreditRun(t, 'bench', n, pattern)), ...s.stop(n) });
      } finally {
        s.stop();
      }
    }
    const m = (k: string): number => Math.round(median(runs.map((x) => x[k] ?? NaN)) * 100) / 100;
    rows.push({ scenario: labels[pattern], broker: t.name, n, msgsPerSec: m('msgsPerSec'), cpuS: m('cpuS'), cpuUsPerMsg: m('cpuUsPerMsg'), maxRssMB: m('maxRssMB') });
    log(`  ${t.name}: ${labels[pattern]} ${rows.at(-1)!.msgsPerSec}/s`);
  }
  return rows;
}
