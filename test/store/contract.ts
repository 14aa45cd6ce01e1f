// The behaviour every Store must have, as one suite that each implementation runs (aedes-persistence's abstract.js
// shape). The broker is tested against MemoryStore only, so anything it relies on belongs here, where the LMDB
// store has to pass it too.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LockInfo, MessageRow } from '../../src/store/row.js';
import type { EntityRecord, Store, StoreOp } from '../../src/store/store.js';
import { registerFrontContract } from './contract-front.js';
import { registerHistoryContract } from './contract-history.js';

/** What a contract run needs: a fresh, opened store; optionally a way to close it and open it again. */
export interface StoreUnderTest {
  store: Store;
  /** Opens a new store on the same data; the caller has closed `store` first. */
  reopen?: () => Promise<Store>;
  /** Closes whatever is still open and removes the store's data. */
  cleanup: () => Promise<void>;
  /** Shared bodies stored and not yet freed, in the store that is open now. */
  sharedBodies: () => number;
}

/** Registers the Store contract suite for one implementation. */
export function runStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
): void {
  const test = (title: string, fn: () => Promise<void>): void => void it(title, fn);

  describe(`Store contract: ${name}`, () => {
    let ctx: StoreUnderTest;
    let store: Store;

    beforeEach(async () => {
      ctx = await makeStore();
      store = ctx.store;
    });
    afterEach(async () => {
      await ctx.cleanup();
    });

    registerFrontContract(() => ({ store, sharedBodies: ctx.sharedBodies }), row);
    registerHistoryContract(() => ({ store, reopen: ctx.reopen }), row);

    test('queueId is stable per path and distinct across paths', async () => {
      const a = await store.queueId('orders');
      const b = await store.queueId('invoices');
      const dlq = await store.queueId('orders/$DeadLetterQueue');
      expect(await store.queueId('orders')).toBe(a);
      expect(new Set([a, b, dlq]).size).toBe(3);
      for (const id of [a, b, dlq]) expect(Number.isInteger(id) && id > 0).toBe(true);
    });

    test('concurrent first uses of one path get the same id', async () => {
      const ids = await Promise.all([store.queueId('q'), store.queueId('q'), store.queueId('r'), store.queueId('q')]);
      expect(ids[1]).toBe(ids[0]);
      expect(ids[3]).toBe(ids[0]);
      expect(ids[2]).not.toBe(ids[0]);
    });

    test('put then load round-trips every row field, in sequence order, per queue', async () => {
      const q = await store.queueId('q');
      const other = await store.queueId('other');
      const full = fullRow(2);
      await store.write([
        { op: 'put', qid: q, row: row(3) },
        { op: 'put', qid: q, row: full },
        { op: 'put', qid: q, row: row(1, { sessionId: 's-1' }) },
        { op: 'put', qid: other, row: row(1, { messageId: 'not mine' }) },
      ]);
      const snap = store.load(q);
      expect(snap.rows.map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(snap.rows[1]).toEqual(full);
      expect(snap.rows[0]).toEqual(row(1, { sessionId: 's-1' }));
      expect(store.load(other).rows).toEqual([row(1, { messageId: 'not mine' })]);
      expect(store.load(other + 1000)).toEqual({ nextSeq: 1, rows: [] });
    });

    test('readBody returns exactly the bytes written, including large and empty bodies', async () => {
      const q = await store.queueId('q');
      const small = bytes(1024, 1);
      const large = bytes(256 * 1024, 2);
      const empty = new Uint8Array(0);
      await store.write([
        { op: 'put', qid: q, row: row(1, { size: small.length }), body: small },
        { op: 'put', qid: q, row: row(2, { size: large.length }), body: large },
        { op: 'put', qid: q, row: row(3, { size: 0 }), body: empty },
      ]);
      expectBytes(store.readBody(q, 1), small);
      expectBytes(store.readBody(q, 2), large);
      expectBytes(store.readBody(q, 3), empty);
      expect(store.readBody(q, 4)).toBeUndefined();
      // A body is written once: later row updates without `body` keep it.
      await store.write([{ op: 'put', qid: q, row: row(2, { deliveryCount: 1, size: large.length }) }]);
      expectBytes(store.readBody(q, 2), large);
    });

    test('a body read stays intact when later bodies are written and read', async () => {
      const q = await store.queueId('q');
      const first = bytes(64 * 1024, 3);
      await store.write([{ op: 'put', qid: q, row: row(1), body: first }]);
      const read = store.readBody(q, 1);
      await store.write([{ op: 'put', qid: q, row: row(2), body: bytes(64 * 1024, 4) }]);
      store.readBody(q, 2);
      expectBytes(read, first);
    });

    test('a lock lives in its row: a put replaces it, a release removes it', async () => {
      const q = await store.queueId('q');
      const a: LockInfo = { token: 'aaaaaaaa-0000-0000-0000-000000000001', until: 1_000 };
      const b: LockInfo = { token: 'bbbbbbbb-0000-0000-0000-000000000002', until: 2_000 };
      await store.write([{ op: 'put', qid: q, row: row(7, { state: 'locked', lock: a }) }]);
      expect(store.load(q).rows).toEqual([row(7, { state: 'locked', lock: a })]);

      // A new lock (redelivery after expiry), then a renewal that keeps the token and moves the expiry.
      await store.write([{ op: 'put', qid: q, row: row(7, { state: 'locked', lock: b }) }]);
      expect(store.load(q).rows[0]!.lock).toEqual(b);
      const renewed: LockInfo = { token: b.token, until: 5_000 };
      await store.write([{ op: 'put', qid: q, row: row(7, { state: 'locked', lock: renewed }) }]);
      expect(store.load(q).rows).toEqual([row(7, { state: 'locked', lock: renewed })]);

      // Release (abandon): the row loses its lock.
      await store.write([{ op: 'put', qid: q, row: row(7, { deliveryCount: 1 }) }]);
      expect(store.load(q).rows).toEqual([row(7, { deliveryCount: 1 })]);
    });

    test('delete removes the row and its body', async () => {
      const q = await store.queueId('q');
      const lock: LockInfo = { token: 'cccccccc-0000-0000-0000-000000000003', until: 3_000 };
      await store.write([
        { op: 'put', qid: q, row: row(1, { state: 'locked', lock }), body: bytes(10, 5) },
        { op: 'put', qid: q, row: row(2), body: bytes(10, 6) },
      ]);
      await store.write([{ op: 'delete', qid: q, seq: 1 }]);
      expect(store.load(q).rows.map((r) => r.seq)).toEqual([2]);
      expect(store.readBody(q, 1)).toBeUndefined();
      expectBytes(store.readBody(q, 2), bytes(10, 6));
      // Deleting what is not there is not an error (a settle racing an expiry must not fail the batch).
      await store.write([{ op: 'delete', qid: q, seq: 1 }]);
    });

    test('seqsFrom lists the stored sequence numbers of one queue from a point on, ascending', async () => {
      const q = await store.queueId('q');
      const other = await store.queueId('other');
      await store.write([
        { op: 'put', qid: q, row: row(5) },
        { op: 'put', qid: q, row: row(1) },
        { op: 'put', qid: q, row: row(2) },
        { op: 'put', qid: other, row: row(3) },
      ]);
      expect([...store.seqsFrom(q, 0)]).toEqual([1, 2, 5]);
      expect([...store.seqsFrom(q, 2)]).toEqual([2, 5]);
      expect([...store.seqsFrom(q, 6)]).toEqual([]);
      expect([...store.seqsFrom(other, 1)]).toEqual([3]);
      await store.write([{ op: 'delete', qid: q, seq: 2 }]);
      expect([...store.seqsFrom(q, 1)]).toEqual([1, 5]);
    });

    test('the session index lists a queue\'s sessions and each session\'s rows in order, kept by put, delete and clear', async () => {
      const q = await store.queueId('q');
      const other = await store.queueId('other');
      await store.write([
        { op: 'put', qid: q, row: row(4, { sessionId: 'b' }) },
        { op: 'put', qid: q, row: row(1, { sessionId: 'b' }) },
        { op: 'put', qid: q, row: row(2, { sessionId: 'a' }) },
        { op: 'put', qid: q, row: row(3) },
        { op: 'put', qid: q, row: row(5, { sessionId: 'ab' }) },
        { op: 'put', qid: other, row: row(6, { sessionId: 'c' }) },
      ]);
      expect([...store.sessionIds(q)]).toEqual(['a', 'ab', 'b']);
      expect([...store.sessionIds(other)]).toEqual(['c']);
      expect([...store.sessionSeqsFrom(q, 'b', 0)]).toEqual([1, 4]);
      expect([...store.sessionSeqsFrom(q, 'b', 2)]).toEqual([4]);
      expect([...store.sessionSeqsFrom(q, 'a', 0)]).toEqual([2]);
      expect(store.sessionRowsFrom(q, 'b', 0, 1).map((r) => r.seq)).toEqual([1]);
      expect(store.sessionRowsFrom(q, 'b', 0, 10).map((r) => [r.seq, r.sessionId])).toEqual([[1, 'b'], [4, 'b']]);
      // A replace (a lock taken, a state change) keeps the row in its session once.
      await store.write([{ op: 'put', qid: q, row: row(1, { sessionId: 'b', state: 'deferred', deferred: true }) }]);
      expect(store.sessionRowsFrom(q, 'b', 0, 10).map((r) => [r.seq, r.state])).toEqual([[1, 'deferred'], [4, 'active']]);
      await store.write([{ op: 'delete', qid: q, seq: 2 }, { op: 'delete', qid: q, seq: 1 }]);
      expect([...store.sessionIds(q)]).toEqual(['ab', 'b']);
      expect([...store.sessionSeqsFrom(q, 'b', 0)]).toEqual([4]);
      await store.write([{ op: 'clear', qid: q }]);
      expect([...store.sessionIds(q)]).toEqual([]);
      expect([...store.sessionSeqsFrom(q, 'b', 0)]).toEqual([]);
      expect([...store.sessionIds(other)]).toEqual(['c']);
    });

    test('nextSeq is a high-water mark that never decreases', async () => {
      const q = await store.queueId('q');
      expect(store.load(q).nextSeq).toBe(1);
      await store.write([{ op: 'nextSeq', qid: q, nextSeq: 10 }]);
      expect(store.load(q).nextSeq).toBe(10);
      await store.write([{ op: 'nextSeq', qid: q, nextSeq: 4 }]);
      expect(store.load(q).nextSeq).toBe(10);
      await store.write([
        { op: 'nextSeq', qid: q, nextSeq: 12 },
        { op: 'nextSeq', qid: q, nextSeq: 11 },
      ]);
      expect(store.load(q).nextSeq).toBe(12);
      // The mark survives the queue emptying, so sequence numbers are never reused.
      await store.write([{ op: 'put', qid: q, row: row(11) }]);
      await store.write([{ op: 'delete', qid: q, seq: 11 }]);
      expect(store.load(q)).toEqual({ nextSeq: 12, rows: [] });
    });

    test('load().nextSeq is past the last stored row even when the mark lags', async () => {
      const q = await store.queueId('q');
      await store.write([
        { op: 'nextSeq', qid: q, nextSeq: 3 },
        { op: 'put', qid: q, row: row(5) },
        { op: 'put', qid: q, row: row(8) },
      ]);
      expect(store.load(q).nextSeq).toBe(9);
      await store.write([{ op: 'nextSeq', qid: q, nextSeq: 20 }]);
      expect(store.load(q).nextSeq).toBe(20);
    });

    test('a write is atomic: nothing is visible before it resolves, everything after', async () => {
      const q = await store.queueId('q');
      const lock: LockInfo = { token: 'dddddddd-0000-0000-0000-000000000004', until: 4_000 };
      const ops: StoreOp[] = [
        { op: 'put', qid: q, row: row(1), body: bytes(16, 7) },
        { op: 'put', qid: q, row: row(2, { state: 'locked', lock }), body: bytes(16, 8) },
        { op: 'nextSeq', qid: q, nextSeq: 3 },
      ];
      const pending = store.write(ops);
      expect(store.load(q)).toEqual({ nextSeq: 1, rows: [] });
      expect(store.readBody(q, 1)).toBeUndefined();
      await pending;
      expect(store.load(q)).toEqual({ nextSeq: 3, rows: [row(1), row(2, { state: 'locked', lock })] });
      expectBytes(store.readBody(q, 2), bytes(16, 8));
    });

    test('writes issued in order are applied in order', async () => {
      const q = await store.queueId('q');
      const lock: LockInfo = { token: 'eeeeeeee-0000-0000-0000-000000000005', until: 5_000 };
      const writes = [
        store.write([{ op: 'put', qid: q, row: row(1) }, { op: 'put', qid: q, row: row(2) }]),
        store.write([{ op: 'put', qid: q, row: row(1, { state: 'locked', deliveryCount: 1, lock }) }]),
        store.write([{ op: 'delete', qid: q, seq: 2 }]),
        store.write([{ op: 'put', qid: q, row: row(2, { messageId: 'second life' }) }]),
        store.write([{ op: 'put', qid: q, row: row(1, { deliveryCount: 1 }) }]),
      ];
      await Promise.all(writes);
      expect(store.load(q).rows).toEqual([row(1, { deliveryCount: 1 }), row(2, { messageId: 'second life' })]);
    });

    test('stored rows and bodies are copies, not the caller objects', async () => {
      const q = await store.queueId('q');
      const lock: LockInfo = { token: 'ffffffff-0000-0000-0000-000000000006', until: 6_000 };
      const r = fullRow(1, { lock });
      const body = bytes(32, 9);
      const pending = store.write([{ op: 'put', qid: q, row: r, body }]);
      // Mutations after write() returned, before and after it resolves, must not reach the store.
      r.deliveryCount = 99;
      r.props!['text'] = 'changed';
      lock.until = 1;
      body.fill(0);
      await pending;
      r.state = 'deferred';
      const expected = fullRow(1, { lock: { token: 'ffffffff-0000-0000-0000-000000000006', until: 6_000 } });
      expect(store.load(q).rows).toEqual([expected]);
      expectBytes(store.readBody(q, 1), bytes(32, 9));
      // And what load() hands out is the caller's to change.
      store.load(q).rows[0]!.deliveryCount = 42;
      expect(store.load(q).rows[0]!.deliveryCount).toBe(expected.deliveryCount);
    });

    test('duplicate-detection entries are kept per queue until forgotten', async () => {
      const q = await store.queueId('q');
      const other = await store.queueId('other');
      await store.write([
        { op: 'dedup', qid: q, key: 'a', until: 10 },
        { op: 'dedup', qid: q, key: 'b', until: 20 },
        { op: 'dedup', qid: other, key: 'a', until: 30 },
      ]);
      expect(store.loadDedup(q).sort((x, y) => x.until - y.until)).toEqual([{ key: 'a', until: 10 }, { key: 'b', until: 20 }]);
      await store.write([{ op: 'undedup', qid: q, key: 'a' }, { op: 'dedup', qid: q, key: 'b', until: 25 }]);
      expect(store.loadDedup(q)).toEqual([{ key: 'b', until: 25 }]);
      expect(store.loadDedup(other)).toEqual([{ key: 'a', until: 30 }]);
    });

    test('entity definitions are written, replaced and deleted by path, and listed in path order', async () => {
      const rec = (path: string, lock: number): EntityRecord => ({
        path,
        kind: 'queue',
        description: { lockDurationMs: lock, userMetadata: 'm' },
        createdAt: 1,
        updatedAt: 2,
      });
      expect(store.loadEntities()).toEqual([]);
      await store.write([
        { op: 'entity', path: 'orders', record: rec('orders', 1000) },
        { op: 'entity', path: 'b/c', record: rec('b/c', 2000) },
      ]);
      // Other meta values (named values of an entity) are not entity definitions.
      const q = await store.queueId('orders');
      await store.write([{ op: 'meta', qid: q, key: 'rules', value: { x: 1 } }]);
      expect(store.loadEntities()).toEqual([rec('b/c', 2000), rec('orders', 1000)]);
      await store.write([{ op: 'entity', path: 'orders', record: rec('orders', 3000) }]);
      expect(store.loadEntities()).toEqual([rec('b/c', 2000), rec('orders', 3000)]);
      await store.write([{ op: 'entity', path: 'b/c', record: null }]);
      expect(store.loadEntities()).toEqual([rec('orders', 3000)]);
    });

    test('clear removes an entity\'s rows, bodies, dedup, sessions and named values, and nothing of another', async () => {
      const q = await store.queueId('q');
      const other = await store.queueId('other');
      const session = { state: null, lockedUntil: 5, updatedAt: 6 };
      await store.write([
        { op: 'put', qid: q, row: row(1), body: bytes(4, 1) },
        { op: 'put', qid: q, row: row(2), body: bytes(4, 2) },
        { op: 'nextSeq', qid: q, nextSeq: 10 },
        { op: 'dedup', qid: q, key: 'a', until: 10 },
        { op: 'session', qid: q, sessionId: 's', record: session },
        { op: 'meta', qid: q, key: 'rules', value: [1] },
        { op: 'put', qid: other, row: row(1), body: bytes(4, 3) },
        { op: 'dedup', qid: other, key: 'a', until: 10 },
        { op: 'meta', qid: other, key: 'rules', value: [2] },
      ]);
      await store.write([{ op: 'clear', qid: q }, { op: 'entity', path: 'q', record: null }]);
      expect(store.load(q)).toEqual({ nextSeq: 10, rows: [] });
      expect(store.readBody(q, 1)).toBeUndefined();
      expect(store.loadDedup(q)).toEqual([]);
      expect(store.loadSessions(q).size).toBe(0);
      expect(store.loadMeta(q, 'rules')).toBeUndefined();
      expect(store.load(other).rows).toEqual([row(1)]);
      expectBytes(store.readBody(other, 1), bytes(4, 3));
      expect(store.loadDedup(other)).toEqual([{ key: 'a', until: 10 }]);
      expect(store.loadMeta(other, 'rules')).toEqual([2]);
    });

    it('keeps entity definitions across close and reopen', async (t) => {
      if (!ctx.reopen) {
        t.skip();
        return;
      }
      const record: EntityRecord = { path: 'Orders', kind: 'queue', description: { a: [1, 'x', null] }, createdAt: 3, updatedAt: 4 };
      await store.write([{ op: 'entity', path: 'orders', record }]);
      await store.close();
      const again = await ctx.reopen();
      expect(again.loadEntities()).toEqual([record]);
    });

    it('survives close and reopen: ids, rows, bodies, locks and sequence marks', async (t) => {
      if (!ctx.reopen) {
        t.skip();
        return;
      }
      const q = await store.queueId('orders');
      const r = await store.queueId('invoices');
      const lock: LockInfo = { token: '11111111-0000-0000-0000-000000000007', until: 1_700_000_007_000 };
      const body = bytes(100 * 1024, 10);
      await store.write([
        { op: 'put', qid: q, row: fullRow(1), body },
        { op: 'put', qid: q, row: row(2, { state: 'locked', lock }), body: bytes(5, 11) },
        { op: 'nextSeq', qid: q, nextSeq: 40 },
        { op: 'put', qid: r, row: row(3) },
        { op: 'dedup', qid: q, key: 'id/+=', until: 1_700_000_009_000 },
      ]);
      await store.close();

      const again = await ctx.reopen();
      expect(await again.queueId('orders')).toBe(q);
      expect(await again.queueId('invoices')).toBe(r);
      const fresh = await again.queueId('new-queue');
      expect([q, r]).not.toContain(fresh);
      expect(again.load(q)).toEqual({ nextSeq: 40, rows: [fullRow(1), row(2, { state: 'locked', lock })] });
      expect(again.load(r)).toEqual({ nextSeq: 4, rows: [row(3)] });
      expectBytes(again.readBody(q, 1), body);
      expectBytes(again.readBody(q, 2), bytes(5, 11));
      expect(again.loadDedup(q)).toEqual([{ key: 'id/+=', until: 1_700_000_009_000 }]);
      // And it keeps working.
      await again.write([{ op: 'delete', qid: q, seq: 2 }]);
      expect(again.load(q).rows).toEqual([fullRow(1)]);
    });
  });
}

/** A minimal row. */
export function row(seq: number, extra: Partial<MessageRow> = {}): MessageRow {
  return {
    seq,
    state: 'active',
    deliveryCount: 0,
    enqueuedAt: 1_700_000_000_000 + seq,
    expiresAt: null,
    messageId: `msg-${seq}`,
    size: 0,
    ...extra,
  };
}

/** A row with every optional field set, and props of every scalar kind, nested. */
function fullRow(seq: number, extra: Partial<MessageRow> = {}): MessageRow {
  return row(seq, {
    state: 'scheduled',
    deliveryCount: 3,
    expiresAt: 1_800_000_000_123,
    scheduledAt: 1_750_000_000_456,
    lock: { token: `9f3c2a1e-7b4d-4e8a-9c1f-00000000000${seq % 10}`, until: 1_700_000_060_000 },
    messageId: `id with spaces & ünïcødé ${seq}`,
    sessionId: 'session-α',
    size: 123_456,
    props: {
      text: 'value',
      empty: '',
      int: 42,
      negative: -7,
      float: 3.25,
      big: 2 ** 40,
      yes: true,
      no: false,
      nested: { reason: 'MaxDeliveryCountExceeded', attempts: 10, final: true, deeper: { n: 1 } },
    },
    ...extra,
  });
}

/** Deterministic, non-uniform bytes (so an offset or truncation error shows). */
function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed * 2654435761;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

function expectBytes(actual: Uint8Array | undefined, expected: Uint8Array): void {
  expect(actual).toBeInstanceOf(Uint8Array);
  expect(actual!.length).toBe(expected.length);
  expect(Buffer.from(actual!.buffer, actual!.byteOffset, actual!.length).equals(Buffer.from(expected))).toBe(true);
}
