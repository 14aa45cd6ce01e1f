// A transaction is all or nothing across a crash (docs/durability.md, "Transactions"): a Qpid Proton client runs
// transactions "complete input inK + send inK-o0..2 via `in` to `out`" with several open at once, and the broker
// is killed with SIGKILL after a random delay, so transactions are cut at random points between declare and
// discharge. After the restarts each input is either still there with none of its outputs, or gone with all three
// exactly once; and every transaction whose discharge was accepted is applied.

import { afterAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connect, sendMany } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, size, sleep } from '../helpers/fault.js';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { entityKey } from '../../src/broker/entities.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const PYTHON = '/usr/bin/python3';
const hasProton = spawnSync(PYTHON, ['-c', 'import proton'], { stdio: 'ignore' }).status === 0;
const DRIVER = fileURLToPath(new URL('./proton_txn_load.py', import.meta.url));
const MIN_TRIALS = size(200, 2_000);
const BUDGET_MS = size(45_000, 600_000);
const INPUTS = size(3_000, 30_000);

const { config, dataDir, dir } = writeConfig([
  { Name: 'in', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 1000 } },
  { Name: 'out', Properties: {} },
]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs the Proton driver against `port` until the broker goes away; resolves with its events. */
function drive(port: number): { events: { ev: string; id: string }[]; done: Promise<void> } {
  const events: { ev: string; id: string }[] = [];
  const proc = spawn('timeout', ['60', PYTHON, DRIVER, String(port), '8'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let buf = '';
  proc.stdout.on('data', (c: Buffer) => {
    buf += c.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) if (l.trim()) events.push(JSON.parse(l));
  });
  return { events, done: new Promise((r) => proc.once('exit', () => r())) };
}

describe.skipIf(!hasProton && !process.env.CI)('kill -9 during transactions', () => {
  it('leaves every transaction applied entirely or not at all, and loses no acknowledged commit', async () => {
    const args = ['--config', config, '--data-dir', dataDir];
    let broker = await startChild(args);
    const conn: Any = await connect(broker.port);
    const ids = Array.from({ length: INPUTS }, (_, i) => `in${i}`);
    const sent = await sendMany(conn, 'in', ids, 200, Buffer.from('x'));
    conn.close();
    expect([...sent.values()].every((o) => o === 'ok')).toBe(true);

    const declared = new Set<string>();
    const committed = new Set<string>();
    let trials = 0;
    let cycles = 0;
    const t0 = Date.now();
    while ((trials < MIN_TRIALS || cycles < 3) && Date.now() - t0 < BUDGET_MS) {
      const d = drive(broker.port);
      await sleep(400 + Math.random() * 1_200);
      broker.proc.kill('SIGKILL');
      await exited(broker.proc);
      await d.done;
      cycles++;
      for (const e of d.events) {
        if (e.ev === 'declare') {
          trials++;
          declared.add(e.id);
        }
        if (e.ev === 'committed') committed.add(e.id);
      }
      broker = await startChild(args);
    }
    broker.proc.kill('SIGTERM');
    expect(await exited(broker.proc)).toBe(0);

    // Read what the broker recovered from: the stored rows of `in` and `out`.
    const store = new LmdbStore({ path: dataDir });
    await store.open();
    const rowsOf = async (path: string): Promise<string[]> =>
      store.load(await store.queueId(entityKey(path))).rows.map((r: Any) => r.messageId as string);
    const inputs = new Set(await rowsOf('in'));
    const outputs = new Map<string, number>();
    for (const id of await rowsOf('out')) outputs.set(id, (outputs.get(id) ?? 0) + 1);
    await store.close();

    let applied = 0;
    let partial = 0;
    let lostCommit = 0;
    let duplicated = 0;
    for (const id of ids) {
      const outs = [0, 1, 2].map((i) => outputs.get(`${id}-o${i}`) ?? 0);
      if (outs.some((n) => n > 1)) duplicated++;
      const present = outs.filter((n) => n > 0).length;
      if (inputs.has(id) && present === 0) continue;
      if (!inputs.has(id) && present === 3) applied++;
      else partial++;
      if (committed.has(id) && (inputs.has(id) || present !== 3)) lostCommit++;
    }
    for (const id of committed) if (inputs.has(id)) lostCommit++;
    emit({ test: 'kill9-transactions', cycles, trials, declared: declared.size, committed: committed.size, applied, partial, lostCommit, duplicated });
    expect(trials).toBeGreaterThanOrEqual(MIN_TRIALS);
    expect(partial).toBe(0);
    expect(duplicated).toBe(0);
    expect(lostCommit).toBe(0);
    expect(applied).toBeGreaterThanOrEqual(committed.size);
    expect(committed.size).toBeGreaterThan(0);
  }, size(120_000, 900_000));
});
