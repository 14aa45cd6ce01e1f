// Graceful shutdown: SIGTERM under send load. The broker stops accepting, lets in-flight sends finish or
// fail, closes the store and exits 0 within 10 s; a restart finds every message it had accepted.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { connect, drain, sendMany, type SendOutcome } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, size, sleep } from '../helpers/fault.js';

const CYCLES = size(2, 20);
const { config, dataDir, dir } = writeConfig([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('graceful shutdown under load', () => {
  it('exits 0 promptly and loses no accepted send', async () => {
    const args = ['--config', config, '--data-dir', dataDir];
    const history = new Map<string, SendOutcome>();
    const shutdownMs: number[] = [];
    const codes: (number | string | null)[] = [];
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const broker = await startChild(args);
      const conns = await Promise.all([connect(broker.port), connect(broker.port)]);
      const runs = conns.map((c, i) => sendMany(c, 'q', Array.from({ length: 5_000 }, (_, n) => `c${cycle}-p${i}-${n}`), 64, Buffer.from('payload')));
      await sleep(300 + Math.random() * 500);
      const t0 = performance.now();
      broker.proc.kill('SIGTERM');
      codes.push(await exited(broker.proc));
      shutdownMs.push(Math.round(performance.now() - t0));
      for (const outcomes of await Promise.all(runs)) for (const [id, o] of outcomes) history.set(id, o);
      for (const c of conns) c.close();
    }
    const broker = await startChild(args);
    const conn = await connect(broker.port);
    // A generous idle gap: on a loaded machine a pause of half a second must not end the drain and count as loss.
    const seen = new Set((await drain(conn, 'q', 2_000)).map((m) => m.id));
    conn.close();
    broker.proc.kill('SIGTERM');
    await exited(broker.proc);
    const figures = { test: 'shutdown', cycles: CYCLES, ok: 0, fail: 0, info: 0, lost: 0, recovered: 0, shutdownMs, codes };
    for (const [id, o] of history) {
      figures[o]++;
      if (o === 'ok' && !seen.has(id)) figures.lost++;
      if (o === 'info' && seen.has(id)) figures.recovered++;
    }
    emit(figures);
    expect(codes.every((c) => c === 0)).toBe(true);
    expect(Math.max(...shutdownMs)).toBeLessThan(10_000);
    expect(figures.ok).toBeGreaterThan(0);
    expect(figures.lost).toBe(0);
  }, 120_000);
});
