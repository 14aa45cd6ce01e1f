// Runs the Store contract on both implementations, then the LMDB-only checks: group commit, per-write rollback,
// and refusing (never repairing) a store it cannot read.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import type { LmdbDbs } from '../../src/store/lmdb/env.js';
import { DataDirLockedError, SchemaError } from '../../src/store/lmdb/errors.js';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { LoggedStore } from '../../src/store/log/logged-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { row, runStoreContract } from './contract.js';
import { setSchema } from './lmdb-raw.js';

runStoreContract(
  'MemoryStore',
  async () => {
    const store = new MemoryStore();
    await store.open();
    return { store, cleanup: () => store.close(), sharedBodies: () => store.sharedBodies() };
  },
);

runStoreContract('LmdbStore', async () => {
  const dir = tempDir();
  let current: LmdbStore = await openLmdb(dir);
  return {
    store: current,
    sharedBodies: () => current.sharedBodies(),
    reopen: async () => (current = await openLmdb(dir)),
    cleanup: async () => {
      await current.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

// Twice: LMDB applying behind the log as in production, and never (until close), so every read after a write goes
// through the overlay of unapplied writes.
for (const [name, applyMs] of [['LoggedStore', undefined], ['LoggedStore, LMDB not applied', 1e9]] as const) runStoreContract(name, async () => {
  const dir = tempDir();
  const open = async (): Promise<LoggedStore> => {
    // Small segments, so that the contract's writes also roll the log.
    const s = new LoggedStore({ path: dir, log: { segmentBytes: 1024 * 1024 }, ...(applyMs ? { applyMs } : {}) });
    await s.open();
    return s;
  };
  let current = await open();
  return {
    store: current,
    sharedBodies: () => current.sharedBodies(),
    reopen: async () => (current = await open()),
    cleanup: async () => {
      await current.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('LmdbStore', () => {
  const dirs: string[] = [];
  const stores: Store[] = [];
  const fresh = async (): Promise<{ dir: string; store: LmdbStore }> => {
    const dir = tempDir();
    dirs.push(dir);
    const store = await openLmdb(dir);
    stores.push(store);
    return { dir, store };
  };
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it('commits the writes of one event turn together (group commit)', async () => {
    const { store } = await fresh();
    const q = await store.queueId('q');
    const body = new Uint8Array(1024).fill(7);
    const before = lastTxnId(store);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.write([
          { op: 'put', qid: q, row: row(i + 1), body },
          { op: 'nextSeq', qid: q, nextSeq: i + 2 },
        ]),
      ),
    );
    // One transaction is one fdatasync with overlappingSync off; allow a split, never one per write.
    expect(lastTxnId(store) - before).toBeLessThanOrEqual(2);
    expect(store.load(q).rows).toHaveLength(100);
    expect(store.load(q).nextSeq).toBe(101);
  });

  it('rolls back only the write that could not be applied, even when it shares a commit', async () => {
    const { store } = await fresh();
    const q = await store.queueId('q');
    // A key longer than LMDB's key limit fails inside the transaction, after the row put succeeded.
    const bad = store.write([
      { op: 'put', qid: q, row: row(1), body: new Uint8Array([1]) },
      { op: 'dedup', qid: q, key: 'x'.repeat(3000), until: 1 },
    ]);
    const good = store.write([{ op: 'put', qid: q, row: row(3), body: new Uint8Array([3]) }]);
    await expect(bad).rejects.toThrow(/key size/i);
    await good;
    expect(store.load(q).rows.map((r) => r.seq)).toEqual([3]);
    expect(store.readBody(q, 1)).toBeUndefined();
  });

  // Rows share msgpack structures (one per row shape, saved in the rows database). A write that is rolled back
  // after it introduced a new shape must not leave the saved structures out of step with the ones in memory.
  it('reads every row shape back after a rolled-back write introduced one, also after a reopen', async () => {
    const dir = tempDir();
    dirs.push(dir);
    let store = await openLmdb(dir);
    const q = await store.queueId('q');
    const shaped = row(1, { state: 'locked', lock: { token: 't', until: 9 }, sessionId: 's', props: { a: 1 } });
    const bad = store.write([
      { op: 'put', qid: q, row: shaped },
      { op: 'dedup', qid: q, key: 'x'.repeat(3000), until: 1 },
    ]);
    await expect(bad).rejects.toThrow(/key size/i);
    const later = row(2, { state: 'locked', lock: { token: 'u', until: 10 }, sessionId: 't', props: { a: 2 } });
    await store.write([{ op: 'put', qid: q, row: later }, { op: 'put', qid: q, row: row(3, { deferred: true, state: 'deferred' }) }]);
    expect(store.load(q).rows).toEqual([later, row(3, { deferred: true, state: 'deferred' })]);
    await store.close();
    store = await openLmdb(dir);
    expect(store.load(q).rows).toEqual([later, row(3, { deferred: true, state: 'deferred' })]);
    await store.write([{ op: 'put', qid: q, row: shaped }]);
    expect(store.load(q).rows).toEqual([shaped, later, row(3, { deferred: true, state: 'deferred' })]);
    await store.close();
  });

  it('rejects writes once closed instead of throwing', async () => {
    const { store } = await fresh();
    const q = await store.queueId('q');
    await store.close();
    await expect(store.write([{ op: 'put', qid: q, row: row(1) }])).rejects.toThrow(/not open/);
  });

  it('refuses an unknown schema version and leaves the data alone', async () => {
    const { dir, store } = await fresh();
    const q = await store.queueId('q');
    await store.write([{ op: 'put', qid: q, row: row(1), body: new Uint8Array([1, 2, 3]) }]);
    await store.close();
    await setSchema(dir, 99);

    const refused = new LmdbStore({ path: dir });
    const err = await refused.open().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SchemaError);
    expect((err as Error).message).toMatch(/schema version 99/);

    await setSchema(dir, 1);
    const back = await openLmdb(dir);
    stores.push(back);
    expect(back.load(await back.queueId('q')).rows).toEqual([row(1)]);
    expect(back.readBody(q, 1)).toEqual(Buffer.from([1, 2, 3]));
  });

  it('refuses an LMDB environment that holds data but no schema version', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const env = open({ path: dir, maxDbs: 32, overlappingSync: false });
    await env.openDB('names', {}).put('someone-elses', 1);
    await env.close();
    await expect(new LmdbStore({ path: dir }).open()).rejects.toThrow(SchemaError);
  });

  it('fails with a clear error when the path cannot be a store directory', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const file = path.join(dir, 'not-a-directory');
    fs.writeFileSync(file, 'keep me');
    await expect(new LmdbStore({ path: file }).open()).rejects.toThrow(
      /^cannot use .*not-a-directory as the data directory: a file is in the way \(EEXIST\); remove the file, or choose another with --data-dir/,
    );
    expect(fs.readFileSync(file, 'utf8')).toBe('keep me');
  });

  it('refuses a second store on a directory another one holds, naming the holder, until it closes', async () => {
    const { dir, store } = await fresh();
    const q = await store.queueId('q');
    await store.write([{ op: 'put', qid: q, row: row(1) }]);
    const second = new LmdbStore({ path: dir });
    const err = await second.open().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DataDirLockedError);
    expect((err as Error).message).toBe(
      `the data directory ${dir} is in use by another peeklock (PID ${process.pid}); stop that broker, or give this one its own --data-dir (or Broker.DataDir)`,
    );
    // The refused store never opened the environment, and the holder is untouched.
    expect(store.load(q).rows).toEqual([row(1)]);
    await store.close();
    const third = await openLmdb(dir);
    stores.push(third);
    expect(third.load(await third.queueId('q')).rows).toEqual([row(1)]);
  });

  it('names a store from a newer peeklock as such, with what to do', async () => {
    const { dir, store } = await fresh();
    await store.queueId('q');
    await store.close();
    await setSchema(dir, 5);
    await expect(new LmdbStore({ path: dir }).open()).rejects.toThrow(
      `the data directory ${dir} holds a store written by a newer peeklock (schema version 5; this build reads version 4); run that newer peeklock, or choose another --data-dir (or Broker.DataDir)`,
    );
  });
});

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-store-'));
}

async function openLmdb(dir: string): Promise<LmdbStore> {
  const store = new LmdbStore({ path: dir });
  await store.open();
  return store;
}

function lastTxnId(store: LmdbStore): number {
  const { dbs } = store as unknown as { dbs: LmdbDbs };
  return (dbs.env.getStats() as { lastTxnId: number }).lastTxnId;
}
