// A transaction is all or nothing across a crash (docs/durability.md, "Transactions"): a Qpid Proton client runs
// transactions "complete input inK + send inK-o0..2 via `in` to `out`" with several open at once, and the broker
// is killed with SIGKILL after a random delay, so transactions are cut at random points between declare and
// discharge. After the restarts each input is either still there with none of its outputs, or gone with all three
// exactly once; and every transaction whose discharge was accepted is applied.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { connect, sendMany } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, size, sleep } from '../helpers/fault.js';
import { driveTransactions as drive, hasProton, transactionOutcomes } from '../helpers/proton-txn.js';
import { LoggedStore } from '../../src/store/log/logged-store.js';
import { entityKey } from '../../src/broker/catalog/entities.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const MIN_TRIALS = size(200, 2_000);
const BUDGET_MS = size(45_000, 600_000);
const INPUTS = size(3_000, 30_000);

const { config, dataDir, dir } = writeConfig([
  { Name: 'in', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 1000 } },
  { Name: 'out', Properties: {} },
]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

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
    const store = new LoggedStore({ path: dataDir });
    await store.open();
    const rowsOf = async (path: string): Promise<string[]> =>
      store.load(await store.queueId(entityKey(path))).rows.map((r: Any) => r.messageId as string);
    const inputs = new Set(await rowsOf('in'));
    const outIds = await rowsOf('out');
    await store.close();

    const outcome = transactionOutcomes(ids, inputs, outIds, committed);
    const { applied } = outcome;
    const [partial, duplicated] = [outcome.partial.length, outcome.duplicated.length];
    let lostCommit = outcome.lostCommit.length;
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
