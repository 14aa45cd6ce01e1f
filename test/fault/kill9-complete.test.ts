// T2 (reliability.md): SIGKILL the broker while consumers complete messages, restart, repeat; then drain.
// A complete the broker confirmed must never be delivered again (resurrected = 0), every message ends
// completed exactly once among confirmed completes, and a message's delivery count only goes up.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { connect, sendMany } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, receiveLocked, settle, size, sleep, type Locked } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const CYCLES = size(3, 50);
const PRELOAD = size(1_500, 20_000);
const { config, dataDir, dir } = writeConfig([{ Name: 'q', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 100 } }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('T2: kill -9 under complete load', () => {
  it('never redelivers a confirmed complete; delivery counts are monotone', async () => {
    const args = ['--config', config, '--data-dir', dataDir];
    let broker = await startChild(args);
    const ids = Array.from({ length: PRELOAD }, (_, i) => `m${i}`);
    let conn: Any = await connect(broker.port);
    const sent = await sendMany(conn, 'q', ids, 200, Buffer.from('x'));
    conn.close();
    expect([...sent.values()].every((o) => o === 'ok')).toBe(true);

    const confirmedAt = new Map<string, number>(); // id → time its complete was confirmed
    const counts = new Map<string, number[]>(); // id → delivery counts seen, in order
    const deliveries: { id: string; at: number }[] = [];
    const uncertain = new Set<string>();
    let nonMonotone = 0;
    const restartMs: number[] = [];
    const record = (m: Locked): void => {
      deliveries.push({ id: m.id, at: m.at });
      const seen = counts.get(m.id) ?? [];
      if (seen.length && m.deliveryCount <= seen[seen.length - 1]!) nonMonotone++;
      seen.push(m.deliveryCount);
      counts.set(m.id, seen);
    };
    // 4 consumers: receive, "work" 0–20 ms, complete; until stopped.
    const consume = (c: Any, stop: () => boolean): Promise<void>[] =>
      [0, 1, 2, 3].map(async () => {
        const r = receiveLocked(c, 'q', 50, true);
        let i = 0;
        const end = Date.now() + 120_000;
        while (!stop() && Date.now() < end) {
          if (i >= r.got.length) {
            await sleep(5);
            continue;
          }
          const m = r.got[i++]!;
          record(m);
          await sleep(Math.random() * 20);
          const a = await settle(m.delivery, 'complete', 3_000);
          if (a.outcome === 'ok') confirmedAt.set(m.id, Date.now());
          // Unknown outcome (the broker died first): it may have committed; it must not count as lost.
          if (a.outcome === 'info') uncertain.add(m.id);
        }
      });

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      conn = await connect(broker.port);
      let killed = false;
      const workers = consume(conn, () => killed);
      await sleep(1_000 + Math.random() * 2_000);
      broker.proc.kill('SIGKILL');
      await exited(broker.proc);
      killed = true;
      await Promise.all(workers);
      conn.close();
      broker = await startChild(args);
      restartMs.push(Math.round(broker.startMs));
    }
    // Final drain: locks held at the last kill come back after at most one lock duration.
    conn = await connect(broker.port);
    const deadline = Date.now() + 60_000;
    let quietSince = Date.now();
    let last = deliveries.length;
    const settled = (): number => new Set([...confirmedAt.keys(), ...uncertain]).size;
    const workers = consume(conn, () => settled() >= PRELOAD || Date.now() > deadline || Date.now() - quietSince > 7_000);
    while (settled() < PRELOAD && Date.now() < deadline && Date.now() - quietSince <= 7_000) {
      await sleep(100);
      if (deliveries.length !== last) {
        last = deliveries.length;
        quietSince = Date.now();
      }
    }
    await Promise.all(workers);
    conn.close();
    broker.proc.kill('SIGTERM');
    const code = await exited(broker.proc);
    if (code !== 0) process.stdout.write(broker.output().split('\n').slice(-6).join('\n'));
    expect(code).toBe(0);

    let resurrected = 0;
    for (const d of deliveries) {
      const t = confirmedAt.get(d.id);
      if (t !== undefined && d.at > t) resurrected++;
    }
    const redelivered = [...counts.values()].filter((c) => c.length > 1).length;
    const lost = ids.filter((id) => !confirmedAt.has(id) && !uncertain.has(id)).length;
    emit({
      test: 'T2',
      cycles: CYCLES,
      runs: PRELOAD,
      ok: confirmedAt.size,
      info: [...uncertain].filter((id) => !confirmedAt.has(id)).length,
      lost,
      resurrected,
      redelivered,
      nonMonotone,
      maxDeliveryCount: Math.max(...[...counts.values()].flat()),
      restartMs,
    });
    expect(resurrected).toBe(0);
    expect(nonMonotone).toBe(0);
    expect(lost).toBe(0);
    expect(redelivered).toBeGreaterThan(0);
  }, size(180_000, 1_800_000));
});
