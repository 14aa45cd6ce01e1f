// Accepted means on disk (docs/durability.md, "The promises"): SIGKILL the broker (a child process) while producers
// have sends in flight, restart it on the same data directory, drain the queue, and check that no send the broker
// accepted was lost. History per send: ok (accepted), fail (rejected) or info (unknown: the connection died first).

import { afterAll, describe, expect, it } from 'vitest';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { connect, drain, sendMany, type SendOutcome } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { size } from '../helpers/fault.js';

const CYCLES = size(3, 50);
const PER_CYCLE = 2000;
const { config, dataDir, dir } = writeConfig([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }]);

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function bodyFor(id: string): Buffer {
  return Buffer.concat([Buffer.from(id + ':'), crypto.createHash('sha256').update(id).digest()]);
}

describe('kill -9 under send load', () => {
  it('loses no accepted message across SIGKILL and restart', async () => {
    const history = new Map<string, SendOutcome>();
    const figures = { test: 'kill9', cycles: CYCLES, ok: 0, fail: 0, info: 0, lost: 0, corrupt: 0, unexpected: 0, duplicated: 0, recovered: 0, restartMs: [] as number[] };
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const broker = await startChild(['--config', config, '--data-dir', dataDir]);
      figures.restartMs.push(Math.round(broker.startMs));
      const conns = await Promise.all([connect(broker.port), connect(broker.port)]);
      const ids = conns.map((_, c) => Array.from({ length: PER_CYCLE / 2 }, (_, i) => `c${cycle}-p${c}-${i}`));
      const runs = conns.map((conn, c) => sendMany(conn, 'q', ids[c]!, 64, bodyFor('x')));
      // Kill while sends are in flight: after the first few hundred are accepted.
      await new Promise((r) => setTimeout(r, 150 + Math.random() * 250));
      broker.proc.kill('SIGKILL');
      await exited(broker.proc);
      for (const outcomes of await Promise.all(runs)) for (const [id, o] of outcomes) history.set(id, o);
      for (const conn of conns) conn.close();
    }
    const broker = await startChild(['--config', config, '--data-dir', dataDir]);
    const conn = await connect(broker.port);
    const received = await drain(conn, 'q');
    conn.close();
    broker.proc.kill('SIGTERM');
    expect(await exited(broker.proc)).toBe(0);

    const seen = new Map<string, number>();
    for (const m of received) seen.set(m.id, (seen.get(m.id) ?? 0) + 1);
    for (const [id, o] of history) {
      figures[o]++;
      if (o === 'ok' && !seen.has(id)) figures.lost++;
      if (o === 'info' && seen.has(id)) figures.recovered++;
    }
    for (const [id, n] of seen) {
      if (!history.has(id)) figures.unexpected++;
      if (n > 1) figures.duplicated++;
    }
    const expectedBody = bodyFor('x');
    figures.corrupt = received.filter((m) => !m.body.equals(expectedBody)).length;
    process.stdout.write(JSON.stringify({ ...figures, long: !!process.env.PEEKLOCK_LONG }) + '\n');
    expect(figures.ok).toBeGreaterThan(0);
    expect(figures.info + figures.ok).toBeGreaterThan(0);
    expect(figures.lost).toBe(0);
    expect(figures.corrupt).toBe(0);
    expect(figures.unexpected).toBe(0);
    expect(figures.duplicated).toBe(0);
  }, size(60_000, 600_000)); // 50 cycles of start, load and SIGKILL outlast the default minute
});
