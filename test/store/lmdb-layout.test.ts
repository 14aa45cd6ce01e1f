// The LMDB store's derived databases (held index, counters, shared-body references, session index): kept across a
// reopen, and built from the rows when a store written by schema version 1 or 2 is opened.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { SCHEMA_VERSION } from '../../src/store/lmdb/keys.js';
import { setSchema } from './lmdb-raw.js';
import type { StoreOp } from '../../src/store/store.js';
import { row } from './contract.js';

const dirs: string[] = [];
const stores: LmdbStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function openStore(dir: string): Promise<LmdbStore> {
  const store = new LmdbStore({ path: dir });
  await store.open();
  stores.push(store);
  return store;
}

async function closeStore(store: LmdbStore): Promise<void> {
  await store.close();
  stores.splice(stores.indexOf(store), 1);
}

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-layout-'));
  dirs.push(dir);
  return dir;
}

const lock = { token: '34343434-0000-0000-0000-000000000001', until: 1_700_000_100_000 };

// A queue with active and held rows and own bodies, and a topic body shared by three subscription rows.
async function fill(store: LmdbStore): Promise<{ q: number; subs: number[] }> {
  const q = await store.queueId('orders');
  const topic = await store.queueId('news');
  const subs = [await store.queueId('news/Subscriptions/a'), await store.queueId('news/Subscriptions/b'), await store.queueId('news/Subscriptions/c')];
  const ops: StoreOp[] = [
    { op: 'put', qid: q, row: row(1, { size: 3 }), body: new Uint8Array([1, 1, 1]) },
    { op: 'put', qid: q, row: row(2, { size: 2, state: 'locked', lock }), body: new Uint8Array([2, 2]) },
    { op: 'put', qid: q, row: row(3, { size: 1, state: 'deferred', deferred: true }), body: new Uint8Array([3]) },
    { op: 'put', qid: q, row: row(4, { size: 4, state: 'scheduled', scheduledAt: 1_800_000_000_000 }), body: new Uint8Array([4, 4, 4, 4]) },
    { op: 'nextSeq', qid: q, nextSeq: 5 },
    { op: 'sharedBody', qid: topic, seq: 1, body: new Uint8Array([9, 9, 9]) },
    ...subs.map((qid): StoreOp => ({ op: 'put', qid, row: row(1, { size: 3, topicSeq: 1, bodyRef: [topic, 1] }) })),
  ];
  await store.write(ops);
  return { q, subs };
}

// Everything the store answers about the filled data, for before/after comparisons.
function snapshot(store: LmdbStore, q: number, subs: number[]): unknown {
  const bodies = (qid: number, seqs: number[]): (string | undefined)[] =>
    seqs.map((s) => {
      const b = store.readBody(qid, s);
      return b && Buffer.from(b).toString('hex');
    });
  return {
    load: store.load(q),
    front: store.loadFront(q),
    bodies: bodies(q, [1, 2, 3, 4]),
    subs: subs.map((s) => ({ load: store.load(s), front: store.loadFront(s), body: bodies(s, [1]) })),
    shared: store.sharedBodies(),
  };
}

// Turns a store written by this build into what schema version 1 left on disk: the same rows, bodies and marks,
// without the derived databases. Same environment flags as the store (LMDB refuses mixed sync flags).
async function downgradeToV1(dir: string): Promise<void> {
  const env = open({ path: dir, maxDbs: 32, overlappingSync: false });
  for (const name of ['held', 'counters', 'refs', 'sessionRows']) await env.openDB(name, {}).drop();
  await env.openDB('meta', {}).put('schema', 1);
  await env.close();
}

// What schema version 2 left on disk: everything but the session index.
async function downgradeToV2(dir: string): Promise<void> {
  const env = open({ path: dir, maxDbs: 32, overlappingSync: false });
  await env.openDB('sessionRows', {}).drop();
  await env.openDB('meta', {}).put('schema', 2);
  await env.close();
}

async function rawSchema(dir: string): Promise<{ schema: unknown; dbs: string[] }> {
  const env = open({ path: dir, maxDbs: 32, overlappingSync: false });
  const schema = env.openDB('meta', {}).get('schema');
  const dbs = [...env.getKeys()].map(String);
  await env.close();
  return { schema, dbs };
}

describe('LmdbStore layout', () => {
  it('keeps counters, held rows and shared-body references across close and reopen', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const { q, subs } = await fill(store);
    const before = snapshot(store, q, subs);
    expect(before).toMatchObject({ front: { count: 4, bytes: 10, nextSeq: 5 }, shared: 1 });
    await closeStore(store);

    const again = await openStore(dir);
    expect(snapshot(again, q, subs)).toEqual(before);
    // The reopened counts go on from where they were.
    await again.write([{ op: 'delete', qid: q, seq: 2 }, { op: 'delete', qid: subs[0]!, seq: 1 }, { op: 'delete', qid: subs[1]!, seq: 1 }]);
    expect(again.loadFront(q)).toMatchObject({ count: 3, bytes: 8 });
    expect(again.loadFront(q).held.map((r) => r.seq)).toEqual([3, 4]);
    expect(again.sharedBodies()).toBe(1);
    await again.write([{ op: 'delete', qid: subs[2]!, seq: 1 }]);
    expect(again.sharedBodies()).toBe(0);
  });

  it('migrates a schema-1 store on open: same rows and bodies, counters, held rows and references built', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const { q, subs } = await fill(store);
    const before = snapshot(store, q, subs);
    await closeStore(store);
    await downgradeToV1(dir);
    const v1 = await rawSchema(dir);
    expect(v1.schema).toBe(1);
    expect(v1.dbs).not.toContain('held');

    const migrated = await openStore(dir);
    expect(snapshot(migrated, q, subs)).toEqual(before);
    // The references were counted from the rows: the body goes with the third delete, not before.
    await migrated.write([{ op: 'delete', qid: subs[0]!, seq: 1 }, { op: 'delete', qid: subs[1]!, seq: 1 }]);
    expect(migrated.sharedBodies()).toBe(1);
    await migrated.write([{ op: 'delete', qid: subs[2]!, seq: 1 }]);
    expect(migrated.sharedBodies()).toBe(0);
    // And the counters keep counting from the migrated values.
    await migrated.write([{ op: 'put', qid: q, row: row(5, { size: 100 }), body: new Uint8Array(100) }]);
    expect(migrated.loadFront(q)).toMatchObject({ count: 5, bytes: 110 });
    await closeStore(migrated);
    expect((await rawSchema(dir)).schema).toBe(SCHEMA_VERSION);
  });

  it('migrates a schema-2 store on open: the session index is built from the rows', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const q = await store.queueId('sess');
    const ops: StoreOp[] = [1, 2, 3, 4, 5].map((seq) => ({ op: 'put', qid: q, row: row(seq, { sessionId: seq % 2 ? 'odd' : 'even', size: 1 }), body: new Uint8Array(1) }));
    await store.write([...ops, { op: 'put', qid: q, row: row(6, { size: 1 }), body: new Uint8Array(1) }]);
    await closeStore(store);
    await downgradeToV2(dir);
    const v2 = await rawSchema(dir);
    expect(v2.schema).toBe(2);
    expect(v2.dbs).not.toContain('sessionRows');

    const migrated = await openStore(dir);
    expect([...migrated.sessionIds(q)]).toEqual(['even', 'odd']);
    expect([...migrated.sessionSeqsFrom(q, 'odd', 0)]).toEqual([1, 3, 5]);
    expect(migrated.sessionRowsFrom(q, 'even', 0, 10).map((r) => r.seq)).toEqual([2, 4]);
    // And it is kept from then on.
    await migrated.write([{ op: 'delete', qid: q, seq: 3 }]);
    expect([...migrated.sessionSeqsFrom(q, 'odd', 0)]).toEqual([1, 5]);
    await closeStore(migrated);
    expect((await rawSchema(dir)).schema).toBe(SCHEMA_VERSION);
  });

  it('marks a schema-3 store version 4 on open, changing no row: an older build, which would not replay the log, refuses it', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const q = await store.queueId('q');
    await store.write([{ op: 'put', qid: q, row: row(1, { size: 1 }), body: new Uint8Array(1) }]);
    await closeStore(store);
    await setSchema(dir, 3);
    const reopened = await openStore(dir);
    expect(reopened.load(q).rows).toEqual([row(1, { size: 1 })]);
    await closeStore(reopened);
    expect((await rawSchema(dir)).schema).toBe(4);
    expect(SCHEMA_VERSION).toBe(4);
  });

  it('migrates an empty schema-1 store and a schema-1 queue with only active rows', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const q = await store.queueId('q');
    await store.write(Array.from({ length: 50 }, (_, i): StoreOp => ({ op: 'put', qid: q, row: row(i + 1, { size: 10 }), body: new Uint8Array(10) })));
    await closeStore(store);
    await downgradeToV1(dir);
    const migrated = await openStore(dir);
    expect(migrated.loadFront(q)).toEqual({ nextSeq: 51, count: 50, bytes: 500, held: [] });
    expect(migrated.loadFront(await migrated.queueId('never-used'))).toEqual({ nextSeq: 1, count: 0, bytes: 0, held: [] });
  });
});
