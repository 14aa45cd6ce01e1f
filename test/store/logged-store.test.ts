// The logged store beyond the contract (docs/durability.md, "The write-ahead log"): reads see acknowledged writes
// that LMDB has not applied, a process killed between the log flush and the LMDB apply (or in the middle of a
// checkpoint) loses nothing on restart, replaying records LMDB already holds changes nothing, a store written
// before the log opens as it was, and a failed log flush stops the store with a StoreFatalError.
// The crashing writers are child processes on the built store (dist/), killed with SIGKILL.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreFatalError } from '../../src/store/lmdb/errors.js';
import { LOG_APPLIED_KEY } from '../../src/store/lmdb/keys.js';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { LoggedStore } from '../../src/store/log/logged-store.js';
import { nodeLogFs, type WriteAheadLog } from '../../src/store/log/wal.js';
import type { Store } from '../../src/store/store.js';
import { row } from './contract.js';

const dirs: string[] = [];
const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-logged-'));
  dirs.push(d);
  return d;
}

async function logged(dir: string, opts: Partial<ConstructorParameters<typeof LoggedStore>[0]> = {}): Promise<LoggedStore> {
  const s = new LoggedStore({ path: dir, log: { segmentBytes: 1024 * 1024 }, ...opts });
  await s.open();
  open.push(s);
  return s;
}

async function closeAll(): Promise<void> {
  for (const s of open.splice(0)) await s.close();
}

/** Everything a store holds for queue `q` (ids 1..3), as plain data, to compare two states. */
function dump(s: Store, qids: number[]): unknown {
  return qids.map((q) => ({
    load: s.load(q),
    front: s.loadFront(q),
    bodies: s.load(q).rows.map((r) => Buffer.from(s.readBody(q, r.seq) ?? []).toString('hex')),
    sessions: [...s.loadSessions(q)],
    sessionIds: [...s.sessionIds(q)],
    dedup: s.loadDedup(q),
    meta: s.loadMeta(q, 'rules'),
  }));
}

const DIST = path.resolve('dist/store/log/logged-store.js');

/**
 * Runs a writer in a child process on the built store and lets it kill itself with SIGKILL where `script` says
 * (`kill()`); returns the LSNs it saw acknowledged.
 */
function crashingWriter(dir: string, script: string): { acked: number; signal: string | null; stderr: string } {
  const code = `
    import { LoggedStore } from ${JSON.stringify(DIST)};
    import { nodeLogFs } from ${JSON.stringify(path.resolve('dist/store/log/wal.js'))};
    const dir = ${JSON.stringify(dir)};
    const kill = () => process.kill(process.pid, 'SIGKILL');
    const body = (i) => new Uint8Array(3000).fill(i & 0xff);
    const row = (seq, extra = {}) => ({ seq, state: 'active', deliveryCount: 0, enqueuedAt: 1, expiresAt: null, messageId: 'm' + seq, size: 3000, ...extra });
    let acked = 0;
    ${script}
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 60_000 });
  const acked = Number(/acked (\d+)/.exec(r.stdout)?.[1] ?? -1);
  return { acked, signal: r.signal, stderr: r.stderr };
}

describe('LoggedStore', () => {
  it('reads every acknowledged write before LMDB has applied it, and the same after', async () => {
    const dir = tempDir();
    const s = await logged(dir, { applyMs: 1e9 });
    const q = await s.queueId('q');
    const t = await s.queueId('t');
    await s.write([{ op: 'sharedBody', qid: t, seq: 1, body: new Uint8Array([9, 9]) }, { op: 'put', qid: q, row: row(1, { bodyRef: [t, 1] }) }]);
    await s.write([
      { op: 'put', qid: q, row: row(2), body: new Uint8Array([2]) },
      { op: 'put', qid: q, row: row(3, { sessionId: 's1', state: 'locked', lock: { token: 'x', until: 5 } }), body: new Uint8Array([3]) },
      { op: 'nextSeq', qid: q, nextSeq: 4 },
      { op: 'meta', qid: q, key: 'rules', value: { a: 1 } },
      { op: 'session', qid: q, sessionId: 's1', record: { state: new Uint8Array([1]), lockedUntil: 9, updatedAt: 1 } },
      { op: 'dedup', qid: q, key: 'k', until: 99 },
    ]);
    await s.write([{ op: 'delete', qid: q, seq: 2 }]);
    expect(s.overlaySize).toBeGreaterThan(0);
    const before = dump(s, [q, t]);
    expect(s.load(q).rows.map((r) => r.seq)).toEqual([1, 3]);
    expect(Buffer.from(s.readBody(q, 1)!)).toEqual(Buffer.from([9, 9]));
    expect(s.loadFront(q)).toMatchObject({ count: 2, nextSeq: 4, held: [{ seq: 3 }] });
    expect([...s.seqsFrom(q, 0)]).toEqual([1, 3]);
    expect(s.rowsFrom(q, 2, 10).map((r) => r.seq)).toEqual([3]);
    expect(s.sharedBodies()).toBe(1);
    // LMDB itself has none of it yet.
    const index = (s as unknown as { index: LmdbStore }).index;
    expect(index.appliedLsn()).toBe(0);
    expect(index.load(q).rows).toEqual([]);
    // A row handed out is the caller's: changing it changes nothing stored.
    s.readRow(q, 3)!.state = 'active';
    expect(s.readRow(q, 3)!.state).toBe('locked');
    await s.applied();
    expect(s.overlaySize).toBe(0);
    expect(index.appliedLsn()).toBe(3);
    expect(dump(s, [q, t])).toEqual(before);
  });

  it('a clear before LMDB applied it hides the rows LMDB still holds', async () => {
    const dir = tempDir();
    const s = await logged(dir, { applyMs: 1e9 });
    const q = await s.queueId('q');
    await s.write([1, 2, 3].map((i) => ({ op: 'put' as const, qid: q, row: row(i), body: new Uint8Array([i]) })));
    await s.applied();
    await s.write([{ op: 'clear', qid: q }]);
    await s.write([{ op: 'put', qid: q, row: row(7), body: new Uint8Array([7]) }]);
    expect(s.load(q).rows.map((r) => r.seq)).toEqual([7]);
    expect(s.loadFront(q).count).toBe(1);
    expect(s.readBody(q, 2)).toBeUndefined();
  });

  it('loses nothing acknowledged when the process dies between the log flush and the LMDB apply', async () => {
    const dir = tempDir();
    const r = crashingWriter(dir, `
      const s = new LoggedStore({ path: dir, applyMs: 1e9, log: { segmentBytes: 1048576 } });
      await s.open();
      const q = await s.queueId('q');
      for (let i = 1; i <= 400; i++) {
        await s.write([{ op: 'put', qid: q, row: row(i), body: body(i) }, { op: 'nextSeq', qid: q, nextSeq: i + 1 }]);
        acked = i;
      }
      await Promise.all([1, 2, 3].map((i) => s.write([{ op: 'delete', qid: q, seq: i }])));
      console.log('acked ' + acked);
      kill();
    `);
    expect(r.signal).toBe('SIGKILL');
    expect(r.acked).toBe(400);
    const s = await logged(dir);
    expect(s.recovered).toMatchObject({ replayed: 403 }); // 400 sends and 3 deletes; the queue id is not in the log
    const q = await s.queueId('q');
    const rows = s.load(q).rows;
    expect(rows.map((x) => x.seq)).toEqual(Array.from({ length: 397 }, (_, i) => i + 4));
    for (const x of rows) expect(Buffer.from(s.readBody(q, x.seq)!)).toEqual(Buffer.alloc(3000, x.seq & 0xff));
    expect(s.loadFront(q)).toMatchObject({ count: 397, bytes: 397 * 3000, nextSeq: 401 });
    // Recovery ended in a checkpoint: one fresh segment, LMDB durable through the last record.
    const index = (s as unknown as { index: LmdbStore }).index;
    expect(index.appliedLsn()).toBe(403);
    expect(fs.readdirSync(path.join(dir, 'log')).filter((f) => f.endsWith('.seg'))).toEqual(['00000000000000000404.seg']);
  });

  it('loses nothing when the process dies in the middle of a checkpoint, between two segment deletions', async () => {
    const dir = tempDir();
    const r = crashingWriter(dir, `
      let unlinks = 0;
      const fs = { ...nodeLogFs, unlinkSync: (f) => { if (++unlinks === 2 && armed) kill(); nodeLogFs.unlinkSync(f); } };
      let armed = false;
      const s = new LoggedStore({ path: dir, applyMs: 1, log: { segmentBytes: 1048576, fs } });
      await s.open();
      unlinks = 0;
      const q = await s.queueId('q');
      // 1,100 sends of 3 KB fill 4 segments of 1 MiB: no checkpoint runs on its own (past 4 it would).
      for (let i = 1; i <= 1100; i++) {
        await s.write([{ op: 'put', qid: q, row: row(i), body: body(i) }]);
        if (i % 2 === 0) await s.write([{ op: 'delete', qid: q, seq: i - 1 }]);
        acked = i;
      }
      console.log('acked ' + acked);
      await s.applied();
      unlinks = 0;
      armed = true;
      await s.checkpoint();
      console.log('checkpoint survived');
    `);
    expect(r.stderr).toBe('');
    expect(r.signal).toBe('SIGKILL');
    const s = await logged(dir);
    const q = await s.queueId('q');
    expect(s.load(q).rows.map((x) => x.seq)).toEqual(Array.from({ length: 550 }, (_, i) => 2 * (i + 1)));
    expect(s.loadFront(q)).toMatchObject({ count: 550, bytes: 550 * 3000 });
    expect(r.acked).toBe(1100);
  });

  it('holds the log near its bound under a steady load: a checkpoint that freed nothing is followed by another', async () => {
    const dir = tempDir();
    // A bound of one segment: every roll passes it. The checkpoint at the roll usually frees nothing (the old
    // segment's last records are not applied yet, 10 ms behind), so the bound holds only if the log asks again.
    const s = await logged(dir, { log: { segmentBytes: 1024 * 1024, maxBytes: 1024 * 1024 } });
    const wal = (s as unknown as { wal: WriteAheadLog }).wal;
    const q = await s.queueId('q');
    let most = 0;
    for (let i = 1; i <= 2000; i++) {
      await s.write([{ op: 'put', qid: q, row: row(i), body: Buffer.alloc(3000, i & 0xff) }]);
      if (i % 2 === 0) await s.write([{ op: 'delete', qid: q, seq: i - 1 }]);
      most = Math.max(most, wal.segmentStarts.length);
    }
    // 2,000 sends of 3 KB are 6 MiB of log; without a checkpoint every segment stays (the timer runs every 10 s).
    expect(most).toBeLessThanOrEqual(3);
    expect(s.load(q).rows).toHaveLength(1000);
  });

  it('replays records LMDB already holds without changing anything (idempotent replay)', async () => {
    const dir = tempDir();
    const s = await logged(dir, { applyMs: 1e9 });
    const q = await s.queueId('q');
    const t = await s.queueId('t');
    await s.write([{ op: 'sharedBody', qid: t, seq: 1, body: new Uint8Array([1]) }, ...[1, 2, 3].map((i) => ({ op: 'put' as const, qid: q, row: row(i, { bodyRef: [t, 1] as [number, number], sessionId: 's' }) }))]);
    await s.write([{ op: 'put', qid: q, row: row(4, { state: 'deferred' }), body: new Uint8Array([4]) }, { op: 'nextSeq', qid: q, nextSeq: 5 }]);
    await s.write([{ op: 'delete', qid: q, seq: 1 }, { op: 'dedup', qid: q, key: 'x', until: 5 }]);
    await s.write([{ op: 'put', qid: q, row: row(2, { state: 'locked', lock: { token: 'a', until: 1 }, sessionId: 's' }) }]);
    await s.applied();
    const expected = dump(s, [q, t]);
    const shared = s.sharedBodies();
    // Pretend LMDB lost its record of applying them: the log (still holding them, no checkpoint yet) replays all four.
    const index = (s as unknown as { index: LmdbStore }).index;
    await (index.tables().meta as unknown as { put(k: string, v: number): Promise<void> }).put(LOG_APPLIED_KEY, 0);
    (s as unknown as { checkpoint: () => Promise<void> }).checkpoint = async () => undefined;
    const wal = (s as unknown as { wal: { close(): Promise<void> } }).wal;
    await wal.close();
    (s as unknown as { wal: null }).wal = null;
    await index.close();
    open.splice(0);
    const again = await logged(dir);
    expect(again.recovered?.replayed).toBe(4);
    expect(dump(again, [q, t])).toEqual(expected);
    expect(again.sharedBodies()).toBe(shared);
  });

  it('opens a store written before the log (no segments, no LSN) as it was', async () => {
    const dir = tempDir();
    const old = new LmdbStore({ path: dir });
    await old.open();
    const q = await old.queueId('q');
    await old.write([{ op: 'put', qid: q, row: row(1), body: new Uint8Array([1]) }]);
    await old.close();
    const s = await logged(dir);
    expect(s.recovered).toMatchObject({ segments: 0, replayed: 0 });
    expect(await s.queueId('q')).toBe(q);
    expect(s.load(q).rows.map((r) => r.seq)).toEqual([1]);
    await s.write([{ op: 'put', qid: q, row: row(2), body: new Uint8Array([2]) }]);
    await closeAll();
    const again = await logged(dir);
    expect(again.load(q).rows.map((r) => r.seq)).toEqual([1, 2]);
  });

  it('a failed log fdatasync rejects the writes with StoreFatalError and refuses every later one', async () => {
    const dir = tempDir();
    let fail = false;
    const fs2 = {
      ...nodeLogFs,
      fdatasyncSync: (fd: number): void => {
        if (fail) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
        nodeLogFs.fdatasyncSync(fd);
      },
    };
    const s = await logged(dir, { log: { segmentBytes: 1024 * 1024, fs: fs2 } });
    const q = await s.queueId('q');
    await s.write([{ op: 'put', qid: q, row: row(1), body: new Uint8Array([1]) }]);
    fail = true;
    const results = await Promise.allSettled([1, 2].map((i) => s.write([{ op: 'put', qid: q, row: row(i + 1), body: new Uint8Array([i]) }])));
    for (const r of results) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreFatalError);
    fail = false;
    await expect(s.write([{ op: 'delete', qid: q, seq: 1 }])).rejects.toBeInstanceOf(StoreFatalError);
    expect(() => s.load(q)).toThrow(StoreFatalError);
  });
});
