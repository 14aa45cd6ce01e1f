// compactBatch drops ops a later op of the same LMDB transaction makes pointless; LMDB must end in exactly the state
// the full batch leaves. Random batches over a few messages (puts with and without bodies, shared bodies, deletes,
// history images, an entity's clear) are applied both ways to two stores that start equal, and every database is
// compared. The directed cases pin what each rule drops, so a rule that stopped dropping would fail too.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyOps } from '../../src/store/lmdb/apply-ops.js';
import { compactBatch } from '../../src/store/lmdb/compact-batch.js';
import { openDbs, type LmdbDbs } from '../../src/store/lmdb/env.js';
import { messageKey } from '../../src/store/lmdb/keys.js';
import type { MessageRow } from '../../src/store/row.js';
import type { StoreOp } from '../../src/store/store.js';
import { prng } from '../helpers/prng.js';
import { row } from './contract.js';

const envs: { dbs: LmdbDbs; dir: string }[] = [];
afterEach(async () => {
  for (const { dbs, dir } of envs.splice(0)) {
    await dbs.env.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

async function fresh(): Promise<LmdbDbs> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-compact-'));
  const dbs = await openDbs(dir);
  envs.push({ dbs, dir });
  return dbs;
}

type Records = { ops: StoreOp[] }[];

function applyFull(dbs: LmdbDbs, records: Records): void {
  dbs.env.transactionSync(() => {
    for (const r of records) applyOps(dbs, structuredClone(r.ops));
  });
}

function applyCompacted(dbs: LmdbDbs, records: Records): StoreOp[][] {
  return dbs.env.transactionSync(() => {
    const kept = compactBatch(structuredClone(records), (qid, seq) => dbs.rows.get(messageKey(qid, seq)) !== undefined);
    for (const ops of kept) applyOps(dbs, ops);
    return kept;
  });
}

/** Every database the ops write, as plain data. */
function dump(dbs: LmdbDbs): Record<string, unknown[]> {
  const all = (t: { getRange(): Iterable<{ key: unknown; value: unknown }> }): unknown[] =>
    [...t.getRange()].map(({ key, value }) => [key, value instanceof Uint8Array ? Buffer.from(value).toString('hex') : value]);
  return {
    rows: all(dbs.rows),
    bodies: all(dbs.bodies),
    held: all(dbs.held),
    counters: all(dbs.counters),
    refs: all(dbs.refs),
    sessionRows: all(dbs.sessionRows),
    history: all(dbs.history),
  };
}


const QIDS = [1, 2];
const TOPIC = 9;
const STATES: MessageRow['state'][] = ['active', 'locked', 'deferred', 'scheduled'];

function randomOp(next: () => number): StoreOp {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const qid = pick(QIDS);
  const seq = 1 + Math.floor(next() * 3);
  // A message's session never changes: it follows from its key.
  const session = seq % 2 === 0 ? { sessionId: `s${qid}` } : {};
  const r = (): MessageRow => row(seq, { state: pick(STATES), size: Math.floor(next() * 100), deliveryCount: Math.floor(next() * 3), ...session });
  const k = next();
  if (k < 0.2) return { op: 'put', qid, row: r(), body: Uint8Array.of(qid, seq, Math.floor(next() * 255)) };
  if (k < 0.45) return { op: 'put', qid, row: r() };
  if (k < 0.55) return { op: 'put', qid, row: { ...r(), bodyRef: [TOPIC, 1 + Math.floor(next() * 2)] } };
  if (k < 0.7) return { op: 'delete', qid, seq };
  if (k < 0.85) return { op: 'history', qid, seq, record: next() < 0.2 ? null : { attempts: [{ n: Math.floor(next() * 9), via: 'receive', lockedAt: 1, lockedUntil: 2 }], events: [], overlaps: [] } };
  if (k < 0.9) return { op: 'sharedBody', qid: TOPIC, seq: 1 + Math.floor(next() * 2), body: Uint8Array.of(7, 7) };
  if (k < 0.93) return { op: 'clear', qid };
  return { op: 'nextSeq', qid, nextSeq: Math.floor(next() * 10) };
}

function randomBatch(next: () => number, records: number): Records {
  return Array.from({ length: records }, () => ({ ops: Array.from({ length: 1 + Math.floor(next() * 4) }, () => randomOp(next)) }));
}

describe('compactBatch', () => {
  it('leaves LMDB in the state the full batch leaves, on random batches from random starting states', async () => {
    const full = await fresh();
    const compacted = await fresh();
    let dropped = 0;
    for (let seed = 1; seed <= 600; seed++) {
      const next = prng(seed);
      // Both start from the same state: the previous rounds' end, plus a random prefix applied in full to both.
      const prefix = randomBatch(next, 3);
      applyFull(full, prefix);
      applyFull(compacted, prefix);
      const batch = randomBatch(next, 2 + Math.floor(next() * 10));
      applyFull(full, batch);
      const kept = applyCompacted(compacted, batch);
      dropped += batch.reduce((n, r) => n + r.ops.length, 0) - kept.reduce((n, ops) => n + ops.length, 0);
      expect(dump(compacted), `seed ${seed}`).toEqual(dump(full));
    }
    // The random batches exercised the rules, not only the identity.
    expect(dropped).toBeGreaterThan(100);
  });

  it("drops a lock's put followed by the complete's delete, and the history images a later one replaces", async () => {
    const dbs = await fresh();
    applyFull(dbs, [{ ops: [{ op: 'put', qid: 1, row: row(1, { size: 5 }), body: Uint8Array.of(1) }] }]);
    const h = { attempts: [], events: [], overlaps: [] };
    const kept = applyCompacted(dbs, [
      { ops: [{ op: 'put', qid: 1, row: row(1, { state: 'locked', size: 5 }) }, { op: 'history', qid: 1, seq: 1, record: h }] },
      { ops: [{ op: 'put', qid: 1, row: row(1, { size: 5 }) }, { op: 'history', qid: 1, seq: 1, record: h }] },
      { ops: [{ op: 'delete', qid: 1, seq: 1 }] },
    ]);
    expect(kept).toEqual([[], [], [{ op: 'delete', qid: 1, seq: 1 }]]);
    expect(dump(dbs).rows).toEqual([]);
  });

  it('drops a message stored and removed in one batch, but not a body put on a row LMDB holds', async () => {
    const dbs = await fresh();
    const body = Uint8Array.of(1, 2, 3);
    expect(applyCompacted(dbs, [{ ops: [{ op: 'put', qid: 1, row: row(1), body }] }, { ops: [{ op: 'delete', qid: 1, seq: 1 }] }])).toEqual([
      [],
      [{ op: 'delete', qid: 1, seq: 1 }],
    ]);
    applyFull(dbs, [{ ops: [{ op: 'put', qid: 1, row: row(2), body }] }]);
    const kept = applyCompacted(dbs, [{ ops: [{ op: 'put', qid: 1, row: row(2), body }] }, { ops: [{ op: 'delete', qid: 1, seq: 2 }] }]);
    expect(kept[0]).toHaveLength(1);
  });

  it('keeps every op on a row naming a shared body', async () => {
    const dbs = await fresh();
    const records: Records = [
      { ops: [{ op: 'sharedBody', qid: TOPIC, seq: 1, body: Uint8Array.of(9) }, { op: 'put', qid: 1, row: row(1, { bodyRef: [TOPIC, 1] }) }] },
      { ops: [{ op: 'put', qid: 1, row: row(1, { state: 'locked', bodyRef: [TOPIC, 1] }) }] },
      { ops: [{ op: 'delete', qid: 1, seq: 1 }] },
    ];
    expect(applyCompacted(dbs, records).map((ops) => ops.length)).toEqual([2, 1, 1]);
  });
});
