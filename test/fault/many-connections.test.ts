// Thousands of connections on loopback. Each logs in (SASL PLAIN), opens and attaches
// one receiver; all must stay up; one more than Broker.MaxConnections is opened and closed with
// amqp:resource-limit-exceeded; after they all close, the broker's open file descriptors return to baseline.

import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { connect } from '../helpers/amqp-client.js';
import { emit, rssMB, sharedChild, size, sleep, until } from '../helpers/fault.js';
import { RawConn, loginPrefix } from '../helpers/raw-amqp.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const N = size(2_000, 10_000);
const child = sharedChild([{ Name: 'q' }], { MaxConnections: N });
const fds = (): number => fs.readdirSync(`/proc/${child.broker.proc.pid}/fd`).length;

describe('many connections', () => {
  it(`holds ${N} connections, refuses one more cleanly, and frees every descriptor`, async () => {
    const broker = child.broker;
    const fdBefore = fds();
    const rssBefore = rssMB(broker.proc.pid);
    const conns: Any[] = [];
    const connectMs: number[] = [];
    let failed = 0;
    let dropped = 0;
    let next = 0;
    const deadline = Date.now() + 90_000;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < N && Date.now() < deadline) {
          next++;
          const t0 = performance.now();
          try {
            const c = await connect(broker.port);
            c.open_receiver({ source: { address: 'q' }, credit_window: 0 });
            c.on('disconnected', () => dropped++);
            conns.push(c);
            connectMs.push(performance.now() - t0);
          } catch {
            failed++;
          }
        }
      }),
    );
    await sleep(1_000);
    const rssAt = rssMB(broker.proc.pid);
    const extra = new RawConn(broker.port);
    await extra.ready();
    await extra.write(loginPrefix());
    await until(() => extra.closed, 10_000);
    const refusal = extra.find('close')?.fields.error?.condition;
    extra.destroy();
    const droppedBeforeClose = dropped;
    for (const c of conns) c.close();
    await until(() => fds() <= fdBefore + 10, 30_000);
    const fdAfter = fds();
    const sorted = [...connectMs].sort((a, b) => a - b);
    const q = (p: number): number => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN);
    emit({
      test: 'many-connections',
      runs: N,
      ok: conns.length,
      fail: failed,
      unexpectedDisconnects: droppedBeforeClose,
      refusal: refusal ?? null,
      p50Ms: q(0.5),
      p99Ms: q(0.99),
      rssBeforeMB: rssBefore,
      rssMaxMB: rssAt,
      rssPerConnKB: Math.round(((rssAt - rssBefore) * 1024) / Math.max(1, conns.length)),
      fdBefore,
      fdAfter,
    });
    expect(conns).toHaveLength(N);
    expect(droppedBeforeClose).toBe(0);
    expect(refusal).toBe('amqp:resource-limit-exceeded');
    expect(fdAfter).toBeLessThanOrEqual(fdBefore + 10);
    expect(broker.proc.exitCode).toBeNull();
  }, 150_000);
});
