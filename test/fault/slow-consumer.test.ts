// Memory is bounded (docs/durability.md, "The promises"): a consumer grants a lot of credit and stops reading its
// socket. The broker must not buffer the queue for it (memory bounded: it stops offering once the socket backlog passes
// a cap); the locks of what it was sent expire and a healthy consumer gets every message; a drain is answered.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { connect, sendMany } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, receiveLocked, rssMB, settle, size, sleep, until } from '../helpers/fault.js';
import { OUTBOUND_HIGH_WATER } from '../../src/amqp/output.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const N = size(2_000, 5_000);
/** Extra time the long size needs: 2.5 times the messages, each stored, sent, locked and completed on one core. */
const SLOW = size(1, 3);
const BODY = 64 * 1024;
const { config, dataDir, dir } = writeConfig(
  [
    { Name: 'q', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 100 } },
    { Name: 'empty' },
    // Locks long enough that nothing lapses while the consumer is paused: every message is delivered once.
    { Name: 'ordered', Properties: { LockDuration: 'PT5M' } },
  ],
  { MaxMessageSizeBytes: 1_048_576 },
);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Largest receive plus send buffer TCP may grow to on this machine (tcp_rmem / tcp_wmem maxima). */
function kernelBuffers(): number {
  const max = (f: string): number => Number(fs.readFileSync(f, 'utf8').trim().split(/\s+/)[2] ?? 0);
  return max('/proc/sys/net/ipv4/tcp_rmem') + max('/proc/sys/net/ipv4/tcp_wmem');
}

/** One gauge's value from the broker's /metrics text (first sample whose line starts with `series`). */
async function metric(httpPort: number, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line ? Number(line.slice(series.length + 1)) : NaN;
}

describe('slow consumer and credit', () => {
  it('holds at most the high-water mark plus one message for a connection that grants credit and stops reading, then delivers every message once in order', async () => {
    const broker = await startChild(['--config', config, '--data-dir', dataDir]);
    const listening = broker.output().split('\n').find((l) => l.includes('"http listening"'));
    const httpPort = (JSON.parse(listening!) as { httpPort: number }).httpPort;
    const producer: Any = await connect(broker.port);
    const ids = Array.from({ length: N }, (_, i) => `o${i}`);
    const sent = await sendMany(producer, 'ordered', ids, 100, Buffer.alloc(BODY, 2));
    expect([...sent.values()].every((o) => o === 'ok')).toBe(true);
    const rssBefore = rssMB(broker.proc.pid);

    const slow: Any = await connect(broker.port);
    const rx = receiveLocked(slow, 'ordered', 0);
    await sleep(100);
    slow.socket.pause();
    rx.receiver.add_credit(N * 2);
    // Let the broker fill the kernel's buffers and its own allowance, sampling what it reports it holds.
    let held = 0;
    let rssMax = rssBefore;
    for (let i = 0; i < 15; i++) {
      await sleep(200);
      held = Math.max(held, await metric(httpPort, 'peeklock_amqp_outgoing_buffered_bytes'));
      rssMax = Math.max(rssMax, rssMB(broker.proc.pid));
    }
    const peak = await metric(httpPort, 'peeklock_amqp_outgoing_buffered_bytes_peak');
    const locked = await metric(httpPort, 'peeklock_messages{entity="ordered",state="locked"}');
    const active = await metric(httpPort, 'peeklock_messages{entity="ordered",state="active"}');

    // Now it reads: everything arrives, each message once, in sequence order, on its first delivery.
    slow.socket.resume();
    let completed = 0;
    let settledUpTo = 0;
    const deadline = Date.now() + 60_000 * SLOW;
    while ((rx.got.length < N || settledUpTo < rx.got.length) && Date.now() < deadline) {
      while (settledUpTo < rx.got.length) {
        void settle(rx.got[settledUpTo++]!.delivery, 'complete').then((a) => a.outcome === 'ok' && completed++);
      }
      await sleep(10);
    }
    await until(() => completed >= N, 10_000);
    await sleep(300); // a duplicate would arrive by now
    for (const c of [producer, slow]) c.close();
    broker.proc.kill('SIGTERM');
    await exited(broker.proc);
    emit({
      test: 'slow-consumer-bound',
      runs: N,
      messageBytes: BODY,
      highWaterBytes: OUTBOUND_HIGH_WATER,
      peakConnectionBytes: peak,
      heldSampledBytes: held,
      lockedWhilePaused: locked,
      activeWhilePaused: active,
      received: rx.got.length,
      completed,
      rssBeforeMB: rssBefore,
      rssMaxMB: rssMax,
    });
    // The broker reached its allowance (the consumer really was slow) and went no further than one message past it
    // (each frame's few bytes of header on top).
    expect(peak).toBeGreaterThanOrEqual(OUTBOUND_HIGH_WATER);
    expect(peak).toBeLessThanOrEqual(OUTBOUND_HIGH_WATER + BODY + 64 * 1024);
    expect(held).toBeLessThanOrEqual(peak);
    // Messages held back were not locked: they stayed available in the queue.
    expect(active).toBeGreaterThan(0);
    expect(locked + active).toBe(N);
    expect(rx.got.map((m) => m.id)).toEqual(ids);
    expect(rx.got.every((m) => m.deliveryCount === 0)).toBe(true);
    expect(completed).toBe(N);
  }, 120_000 * SLOW);

  it('bounds memory for a consumer that stops reading; its messages go to a healthy one', async () => {
    const broker = await startChild(['--config', config, '--data-dir', dataDir]);
    const producer: Any = await connect(broker.port);
    const ids = Array.from({ length: N }, (_, i) => `m${i}`);
    const sent = await sendMany(producer, 'q', ids, 100, Buffer.alloc(BODY, 1));
    expect([...sent.values()].every((o) => o === 'ok')).toBe(true);
    const rssBefore = rssMB(broker.proc.pid);
    let rssMax = rssBefore;
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMB(broker.proc.pid))), 50);

    // The slow one: huge credit, then its socket is paused (it reads nothing more).
    const slow: Any = await connect(broker.port);
    const slowRx = receiveLocked(slow, 'q', 0);
    await sleep(100);
    slow.socket.pause();
    slowRx.receiver.add_credit(100_000);
    await sleep(1_000);

    // The healthy one: completes everything it gets, until every message is done (bounded).
    const healthy: Any = await connect(broker.port);
    // Credit is given back as messages are completed, so nothing waits long enough for its lock to lapse.
    const rx = receiveLocked(healthy, 'q', 50);
    const done = new Set<string>();
    let i = 0;
    const deadline = Date.now() + 40_000 * SLOW;
    while (done.size < N && Date.now() < deadline) {
      if (i >= rx.got.length) {
        await sleep(5);
        continue;
      }
      const m = rx.got[i++]!;
      // Up to the 50 credits in flight at once; credit comes back with each answer.
      void settle(m.delivery, 'complete').then((a) => {
        if (a.outcome === 'ok') done.add(m.id);
        rx.receiver.add_credit(1);
      });
    }
    clearInterval(sampler);

    // Drain on an empty queue is answered with the credit used up.
    const drainer = receiveLocked(healthy, 'empty', 0);
    drainer.receiver.drain = true;
    const t0 = performance.now();
    let drainMs = -1;
    drainer.receiver.once('receiver_drained', () => (drainMs = performance.now() - t0));
    drainer.receiver.add_credit(10);
    await until(() => drainMs >= 0, 5_000);

    // Let the slow one read again: what it was sent is stale, its completes fail with lock lost.
    slow.socket.resume();
    await until(() => slowRx.got.length > 0, 5_000);
    await sleep(500);
    const slowGot = slowRx.got.length;
    const late = slowGot ? await settle(slowRx.got[0]!.delivery, 'complete') : { outcome: 'none' };
    for (const c of [producer, slow, healthy]) c.close();
    broker.proc.kill('SIGTERM');
    await exited(broker.proc);
    emit({
      test: 'slow-consumer',
      runs: N,
      ok: done.size,
      slowPrefetched: slowGot,
      slowPrefetchedMB: Math.round((slowGot * BODY) / 1048576),
      lateComplete: (late as { condition?: string }).condition ?? late.outcome,
      drainMs: Math.round(drainMs),
      rssBeforeMB: rssBefore,
      rssMaxMB: rssMax,
      kernelBuffersMB: Math.round(kernelBuffers() / 1048576),
    });
    expect(done.size).toBe(N);
    expect(slowGot).toBeGreaterThan(0);
    // What the slow link holds is the kernel's socket buffers (both ends; loopback accounting varies, so with
    // a factor 2 of slack) plus the broker's 4 MiB backlog cap; without the cap the broker would hand it the
    // whole queue (up to rhea's 2048-delivery session window), all N here.
    expect(slowGot * BODY).toBeLessThanOrEqual(2 * kernelBuffers() + 4 * 1048576);
    expect(slowGot).toBeLessThan(N * 0.75);
    expect((late as { condition?: string }).condition).toBe('com.microsoft:message-lock-lost');
    expect(drainMs).toBeGreaterThanOrEqual(0);
    expect(drainMs).toBeLessThan(1_000);
  }, 90_000 * SLOW);
});
