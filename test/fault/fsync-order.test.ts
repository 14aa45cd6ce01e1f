// The durability barrier (docs/durability.md, "The durability barrier"). The broker runs under strace with every
// fdatasync delayed by 300 ms; the client notes when each send was invoked and when its `accepted` arrived, strace
// notes when each flush of the write-ahead log's segment started and returned. Every accepted send and every
// confirmed complete must have a log flush that started after it was invoked and returned before the answer (a
// settle-on-commit bug answers ~300 ms earlier). kill -9 cannot catch this: the page cache survives it (docs/durability.md, "What kill -9 can and cannot lose").

import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import rhea from 'rhea';
import { connect } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, receiveLocked, settle, size, sleep, tracee } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const hasStrace = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
const SENDS = size(500, 5_000);
const COMPLETES = size(200, 2_000);
const { config, dataDir, dir } = writeConfig([{ Name: 'q', Properties: { LockDuration: 'PT5M' } }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * Sync intervals [start, end] in epoch ms from an `strace -f -y -ttt -T` log, of the write-ahead log's segments only
 * (`*.seg`): LMDB's own syncs (its apply transactions, checkpoints) must not count as covering an answer.
 */
function syncs(log: string): [number, number][] {
  const out: [number, number][] = [];
  const started = new Map<string, number>();
  for (const line of log.split('\n')) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, pid, ts, rest] = m as unknown as [string, string, string, string];
    const t = Number(ts) * 1000;
    const onLog = /^f(data)?sync\(\d+<[^>]*\.seg>/.test(rest);
    if (onLog && /<unfinished/.test(rest)) started.set(pid, t);
    else if (/^<\.\.\. f(data)?sync resumed>/.test(rest) && started.has(pid)) {
      out.push([started.get(pid)!, t]);
      started.delete(pid);
    } else if (onLog && /= 0.*<[\d.]+>$/.test(rest)) {
      const dur = Number(/<([\d.]+)>$/.exec(rest)?.[1] ?? 0) * 1000;
      out.push([t, t + dur]);
    }
  }
  return out;
}

describe.skipIf(!hasStrace && !process.env.CI)('durability barrier: no accepted before the covering fsync', () => {
  it('answers every send and complete only after a sync that covers it', async () => {
    const traceFile = path.join(dir, 'strace.log');
    const broker = await startChild(['--config', config, '--data-dir', dataDir], {
      prefix: ['strace', '-f', '-y', '-ttt', '-T', '-o', traceFile, '-e', 'trace=fdatasync,fsync', '-e', 'inject=fdatasync:delay_enter=300000'],
    });
    const conn: Any = await connect(broker.port);
    const ops: { invoked: number; answered: number; kind: string }[] = [];
    // 4 sender links, each with up to 25 sends in flight.
    await Promise.all(
      [0, 1, 2, 3].map(
        (l) =>
          new Promise<void>((resolve) => {
            const sender = conn.open_sender({ target: { address: 'q' } });
            const invoked = new Map<number, number>();
            let next = 0;
            let done = 0;
            const per = SENDS / 4;
            const timer = setTimeout(resolve, 60_000);
            const pump = (): void => {
              while (next < per && next - done < 25 && sender.sendable()) {
                const d = sender.send({ message_id: `l${l}-${next}`, body: rhea.message.data_section(Buffer.alloc(512, l)) });
                invoked.set(d.id, Date.now());
                next++;
              }
            };
            sender.on('sendable', pump);
            sender.on('accepted', (ctx: Any) => {
              ops.push({ invoked: invoked.get(ctx.delivery.id)!, answered: Date.now(), kind: 'send' });
              if (++done === per) {
                clearTimeout(timer);
                resolve();
              } else pump();
            });
          }),
      ),
    );
    const r = receiveLocked(conn, 'q', COMPLETES);
    const got = await r.waitFor(COMPLETES, 30_000);
    await Promise.all(
      got.slice(0, COMPLETES).map(async (m) => {
        const invoked = Date.now();
        const a = await settle(m.delivery, 'complete', 30_000);
        if (a.outcome === 'ok') ops.push({ invoked, answered: Date.now(), kind: 'complete' });
      }),
    );
    conn.close();
    const node = tracee(broker.proc.pid!);
    if (node) process.kill(node, 'SIGTERM');
    await exited(broker.proc);
    await sleep(100);
    const intervals = syncs(fs.readFileSync(traceFile, 'utf8'));
    let early = 0;
    for (const op of ops) {
      // Allow 2 ms for the two processes' clock reads.
      if (!intervals.some(([s, e]) => s >= op.invoked - 2 && e <= op.answered + 2)) early++;
    }
    const lat = ops.filter((o) => o.kind === 'send').map((o) => o.answered - o.invoked).sort((a, b) => a - b);
    const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
    const spanS = (Math.max(...ops.map((o) => o.answered)) - Math.min(...ops.map((o) => o.invoked))) / 1000;
    emit({
      test: 'fsync-order',
      runs: ops.length,
      ok: ops.filter((o) => o.kind === 'send').length,
      completes: ops.filter((o) => o.kind === 'complete').length,
      syncs: intervals.length,
      acksBeforeCoveringSync: early,
      p50Ms: q(0.5),
      p99Ms: q(0.99),
      opsPerSec: Math.round(ops.length / spanS),
    });
    expect(ops.filter((o) => o.kind === 'send')).toHaveLength(SENDS);
    expect(ops.filter((o) => o.kind === 'complete')).toHaveLength(COMPLETES);
    expect(intervals.length).toBeGreaterThan(0);
    expect(early).toBe(0);
    // Group commit: far more than one operation per 300 ms sync.
    expect(ops.length / spanS).toBeGreaterThan(10);
  }, 120_000);
});
