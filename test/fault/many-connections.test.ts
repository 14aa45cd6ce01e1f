// Thousands of connections on loopback. Each logs in (SASL PLAIN), opens and attaches
// one receiver; all must stay up; one more than Broker.MaxConnections is opened and closed with
// amqp:resource-limit-exceeded; after they all close, the broker's open file descriptors return to baseline.
// Every connection is accounted for: opened, failed (with the first error), or never tried because the opening
// phase ran out of time; the descriptor limits of both processes and the kernel's listen-queue drops are
// reported beside them, since each could cap the count.

import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { connect } from '../helpers/amqp-client.js';
import { emit, rssMB, sharedChild, size, sleep, until } from '../helpers/fault.js';
import { RawConn, loginPrefix } from '../helpers/raw-amqp.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const N = size(2_000, 10_000);
/** Time to open them all: the long size has five times the connections. */
const OPEN_MS = size(90_000, 300_000);
const child = sharedChild([{ Name: 'q' }], { MaxConnections: N });
const fds = (): number => fs.readdirSync(`/proc/${child.broker.proc.pid}/fd`).length;

/** The soft limit on open files of a process (`self` or a pid), from /proc. */
function fileLimit(pid: number | 'self'): number {
  const line = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.split(/\s{2,}/)[1];
  return soft === 'unlimited' ? Infinity : Number(soft);
}

/** The kernel's count of connections dropped or overflowed at a listen queue (TcpExt ListenDrops + ListenOverflows). */
function listenDrops(): number {
  const lines = fs.readFileSync('/proc/net/netstat', 'utf8').split('\n').filter((l) => l.startsWith('TcpExt:'));
  const [names, values] = lines.map((l) => l.split(/\s+/));
  let n = 0;
  names?.forEach((name, i) => {
    if (name === 'ListenDrops' || name === 'ListenOverflows') n += Number(values?.[i] ?? 0);
  });
  return n;
}

describe('many connections', () => {
  it(`holds ${N} connections, refuses one more cleanly, and frees every descriptor`, async () => {
    const broker = child.broker;
    const fdBefore = fds();
    const rssBefore = rssMB(broker.proc.pid);
    const conns: Any[] = [];
    const connectMs: number[] = [];
    // Each side holds N sockets plus its own files: a lower descriptor limit would cap the count.
    const limits = { test: fileLimit('self'), broker: fileLimit(broker.proc.pid!) };
    const dropsBefore = listenDrops();
    let failed = 0;
    let firstError: string | null = null;
    let dropped = 0;
    let next = 0;
    const t0 = performance.now();
    const deadline = Date.now() + OPEN_MS;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < N && Date.now() < deadline) {
          next++;
          const t1 = performance.now();
          try {
            const c = await connect(broker.port);
            c.open_receiver({ source: { address: 'q' }, credit_window: 0 });
            c.on('disconnected', () => dropped++);
            conns.push(c);
            connectMs.push(performance.now() - t1);
          } catch (err) {
            failed++;
            firstError ??= String(err);
          }
        }
      }),
    );
    const openMs = Math.round(performance.now() - t0);
    const notTried = N - next;
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
      firstError,
      notTried,
      openMs,
      fileLimitTest: limits.test,
      fileLimitBroker: limits.broker,
      listenDrops: listenDrops() - dropsBefore,
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
    expect(Math.min(limits.test, limits.broker)).toBeGreaterThan(N + 100);
    // The exact account: all opened, none failed, none left untried by the time limit.
    expect({ ok: conns.length, fail: failed, firstError, notTried }).toEqual({ ok: N, fail: 0, firstError: null, notTried: 0 });
    expect(droppedBeforeClose).toBe(0);
    expect(refusal).toBe('amqp:resource-limit-exceeded');
    expect(fdAfter).toBeLessThanOrEqual(fdBefore + 10);
    expect(broker.proc.exitCode).toBeNull();
  }, OPEN_MS + 60_000);
});
