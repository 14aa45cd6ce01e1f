// The part of the Store contract a broker with a lazy index relies on: kept counters and the held rows
// (loadFront), reads by range and by sequence number (rowsFrom, readRow), and shared bodies with reference counts.
// Registered inside runStoreContract, so it runs on every implementation.

import { expect, it } from 'vitest';
import type { LockInfo, MessageRow } from '../../src/store/row.js';
import type { Store } from '../../src/store/store.js';

/** What these tests need of the implementation under test, besides the store. */
export interface FrontSubject {
  store: Store;
  /** Shared bodies stored and not yet freed. */
  sharedBodies: () => number;
}

/** Registers the front / shared-body part of the contract; `subject` is read when each test runs. */
export function registerFrontContract(subject: () => FrontSubject, row: (seq: number, extra?: Partial<MessageRow>) => MessageRow): void {
  const lock: LockInfo = { token: '12121212-0000-0000-0000-000000000001', until: 9_000 };
  const body = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
  // Stores may hand out a Buffer or a plain Uint8Array; the bytes are what counts.
  const hex = (b: Uint8Array | undefined): string | undefined => b && Buffer.from(b).toString('hex');
  // A topic 't' and entities below it named as a fan-out names its subscriptions' copies.
  const fanOut = async (store: Store, ...names: string[]): Promise<[number, ...number[]]> => [
    await store.queueId('t'),
    ...(await Promise.all(names.map((n) => store.queueId(`t/Subscriptions/${n}`)))),
  ];

  it('keeps a queue\'s row count and bytes exact through inserts, replaces, deletes and clear', async () => {
    const { store } = subject();
    const q = await store.queueId('q');
    const other = await store.queueId('other');
    expect(store.loadFront(q)).toMatchObject({ count: 0, bytes: 0 });
    await store.write([
      { op: 'put', qid: q, row: row(1, { size: 100 }), body: body(100, 1) },
      { op: 'put', qid: q, row: row(2, { size: 200 }), body: body(200, 2) },
      { op: 'put', qid: q, row: row(3, { size: 300 }) },
      { op: 'put', qid: other, row: row(1, { size: 7 }) },
    ]);
    expect(store.loadFront(q)).toMatchObject({ count: 3, bytes: 600 });
    // A replace moves bytes by the size difference and never counts the row twice, also twice in one write.
    await store.write([
      { op: 'put', qid: q, row: row(2, { size: 250, state: 'locked', lock }) },
      { op: 'put', qid: q, row: row(2, { size: 260 }) },
    ]);
    expect(store.loadFront(q)).toMatchObject({ count: 3, bytes: 660 });
    // Deleting a row subtracts it; deleting one that is not there changes nothing.
    await store.write([{ op: 'delete', qid: q, seq: 1 }, { op: 'delete', qid: q, seq: 1 }, { op: 'delete', qid: q, seq: 99 }]);
    expect(store.loadFront(q)).toMatchObject({ count: 2, bytes: 560 });
    // Clear empties the counters; puts after it in the same write count from zero.
    await store.write([
      { op: 'put', qid: q, row: row(10, { size: 5 }) },
      { op: 'clear', qid: q },
      { op: 'put', qid: q, row: row(11, { size: 11 }) },
    ]);
    expect(store.loadFront(q)).toMatchObject({ count: 1, bytes: 11 });
    expect(store.loadFront(other)).toMatchObject({ count: 1, bytes: 7 });
    await store.write([{ op: 'delete', qid: q, seq: 11 }]);
    expect(store.loadFront(q)).toMatchObject({ count: 0, bytes: 0 });
  });

  it('loadFront returns exactly the rows that are not active, in sequence order, with the sequence mark', async () => {
    const { store } = subject();
    const q = await store.queueId('q');
    const deferred = row(4, { state: 'deferred', deferred: true });
    const scheduled = row(2, { state: 'scheduled', scheduledAt: 1_800_000_000_000 });
    await store.write([
      { op: 'put', qid: q, row: row(1) },
      { op: 'put', qid: q, row: scheduled },
      { op: 'put', qid: q, row: row(3, { state: 'locked', lock }) },
      { op: 'put', qid: q, row: deferred },
      { op: 'put', qid: q, row: row(5) },
      { op: 'nextSeq', qid: q, nextSeq: 9 },
    ]);
    expect(store.loadFront(q)).toEqual({ nextSeq: 9, count: 5, bytes: 0, held: [scheduled, row(3, { state: 'locked', lock }), deferred] });
    // The lock ends (3 active again), an active row is deferred (5), a held row is deleted (2).
    await store.write([
      { op: 'put', qid: q, row: row(3, { deliveryCount: 1 }) },
      { op: 'put', qid: q, row: row(5, { state: 'deferred', deferred: true }) },
      { op: 'delete', qid: q, seq: 2 },
    ]);
    expect(store.loadFront(q).held).toEqual([deferred, row(5, { state: 'deferred', deferred: true })]);
    // The mark follows the last row when the row is past it, as load() does.
    await store.write([{ op: 'put', qid: q, row: row(20) }]);
    expect(store.loadFront(q).nextSeq).toBe(21);
    expect(store.loadFront(q).nextSeq).toBe(store.load(q).nextSeq);
    // Clear keeps the stored mark (9 here: row 20 came without its nextSeq op), drops the rest.
    await store.write([{ op: 'clear', qid: q }]);
    expect(store.loadFront(q)).toEqual({ nextSeq: 9, count: 0, bytes: 0, held: [] });
  });

  it('rowsFrom reads rows in sequence order within its bounds and limit, and readRow reads one', async () => {
    const { store } = subject();
    const q = await store.queueId('q');
    const other = await store.queueId('other');
    const ops = [1, 2, 4, 5, 7, 9].map((seq) => ({ op: 'put' as const, qid: q, row: row(seq) }));
    await store.write([...ops.reverse(), { op: 'put', qid: other, row: row(3) }, { op: 'put', qid: other, row: row(50) }]);
    const seqs = (rows: MessageRow[]): number[] => rows.map((r) => r.seq);
    expect(seqs(store.rowsFrom(q, 0, 100))).toEqual([1, 2, 4, 5, 7, 9]);
    expect(seqs(store.rowsFrom(q, 3, 2))).toEqual([4, 5]);
    expect(seqs(store.rowsFrom(q, 4, 100, 7))).toEqual([4, 5, 7]);
    expect(seqs(store.rowsFrom(q, 5, 1, 5))).toEqual([5]);
    expect(seqs(store.rowsFrom(q, 10, 100))).toEqual([]);
    expect(seqs(store.rowsFrom(q, 1, 0))).toEqual([]);
    expect(store.rowsFrom(q, 1, 1)).toEqual([row(1)]);
    expect(store.readRow(q, 7)).toEqual(row(7));
    expect(store.readRow(q, 3)).toBeUndefined();
    expect(store.readRow(other, 3)).toEqual(row(3));
    // Each queue's sequence mark follows its own last row, not a neighbour's.
    expect(store.loadFront(q).nextSeq).toBe(10);
    expect(store.loadFront(other).nextSeq).toBe(51);
  });

  it('stores one shared body for ten rows, readable from each, freed only with the last of them', async () => {
    const { store, sharedBodies } = subject();
    const topic = await store.queueId('t');
    const subs = await Promise.all(Array.from({ length: 10 }, (_, i) => store.queueId(`t/Subscriptions/s${i}`)));
    const shared = body(1024, 42);
    await store.write([
      { op: 'sharedBody', qid: topic, seq: 5, body: shared },
      ...subs.map((qid) => ({ op: 'put' as const, qid, row: row(1, { size: 1024, topicSeq: 5, bodyRef: [topic, 5] as [number, number] }) })),
      { op: 'nextSeq', qid: topic, nextSeq: 6 },
    ]);
    expect(sharedBodies()).toBe(1);
    for (const qid of subs) {
      expect(hex(store.readBody(qid, 1))).toBe(hex(shared));
      expect(store.readRow(qid, 1)?.bodyRef).toEqual([topic, 5]);
      expect(store.loadFront(qid)).toMatchObject({ count: 1, bytes: 1024 });
    }
    // A lock and its release on one copy are replaces: the reference stays, also when the caller's row lacks it.
    await store.write([{ op: 'put', qid: subs[0]!, row: row(1, { size: 1024, state: 'locked', lock }) }]);
    expect(store.readRow(subs[0]!, 1)?.bodyRef).toEqual([topic, 5]);
    for (const qid of subs.slice(0, 9)) {
      await store.write([{ op: 'delete', qid, seq: 1 }]);
      expect(sharedBodies()).toBe(1);
    }
    expect(hex(store.readBody(subs[9]!, 1))).toBe(hex(shared));
    await store.write([{ op: 'delete', qid: subs[9]!, seq: 1 }]);
    expect(sharedBodies()).toBe(0);
    expect(store.readBody(subs[9]!, 1)).toBeUndefined();
  });

  it('clear drops the references of the rows it removes, and the body goes with the last one anywhere', async () => {
    const { store, sharedBodies } = subject();
    const [topic, a, b] = await fanOut(store, 'a', 'b');
    const ref: [number, number] = [topic, 1];
    await store.write([
      { op: 'sharedBody', qid: topic, seq: 1, body: body(10, 1) },
      { op: 'sharedBody', qid: topic, seq: 2, body: body(10, 2) },
      { op: 'put', qid: a, row: row(1, { bodyRef: ref }) },
      { op: 'put', qid: a, row: row(2, { bodyRef: [topic, 2] }) },
      { op: 'put', qid: b, row: row(1, { bodyRef: ref }) },
    ]);
    expect(sharedBodies()).toBe(2);
    await store.write([{ op: 'clear', qid: a }]);
    expect(sharedBodies()).toBe(1);
    expect(hex(store.readBody(b, 1))).toBe(hex(body(10, 1)));
    // Clearing the topic itself (its entity re-created) leaves bodies its subscriptions' rows still name.
    await store.write([{ op: 'clear', qid: topic }]);
    expect(hex(store.readBody(b, 1))).toBe(hex(body(10, 1)));
    await store.write([{ op: 'clear', qid: b }]);
    expect(sharedBodies()).toBe(0);
  });

  it('a row put with its own body after a shared one keeps its own, and the shared one loses the reference', async () => {
    const { store, sharedBodies } = subject();
    const [topic, a, b] = await fanOut(store, 'a', 'b');
    const ref: [number, number] = [topic, 1];
    await store.write([
      { op: 'sharedBody', qid: topic, seq: 1, body: body(8, 1) },
      { op: 'put', qid: a, row: row(1, { bodyRef: ref }) },
      { op: 'put', qid: b, row: row(1, { bodyRef: ref }) },
    ]);
    // A replace with a body: its own body, no reference stored.
    await store.write([{ op: 'put', qid: a, row: row(1, { bodyRef: ref }), body: body(8, 9) }]);
    expect(hex(store.readBody(a, 1))).toBe(hex(body(8, 9)));
    expect(store.readRow(a, 1)?.bodyRef).toBeUndefined();
    expect(sharedBodies()).toBe(1);
    // A new row with a body and a bodyRef stores its own body and adds no reference.
    await store.write([{ op: 'put', qid: a, row: row(2, { bodyRef: ref }), body: body(8, 7) }]);
    expect(store.readRow(a, 2)?.bodyRef).toBeUndefined();
    await store.write([{ op: 'delete', qid: b, seq: 1 }]);
    expect(sharedBodies()).toBe(0);
    expect(hex(store.readBody(a, 1))).toBe(hex(body(8, 9)));
    expect(hex(store.readBody(a, 2))).toBe(hex(body(8, 7)));
  });

  it('frees a shared body at the end of a write, so a move that deletes before it puts keeps the body', async () => {
    const { store, sharedBodies } = subject();
    const [topic, sub, dlq] = await fanOut(store, 'a', 'a/$DeadLetterQueue');
    const ref: [number, number] = [topic, 3];
    await store.write([
      { op: 'sharedBody', qid: topic, seq: 3, body: body(16, 3) },
      { op: 'put', qid: sub, row: row(1, { bodyRef: ref }) },
    ]);
    // The only reference is dropped and a new one taken in the same write (a dead-letter keeping the reference).
    await store.write([
      { op: 'delete', qid: sub, seq: 1 },
      { op: 'put', qid: dlq, row: row(1, { bodyRef: ref }) },
    ]);
    expect(sharedBodies()).toBe(1);
    expect(hex(store.readBody(dlq, 1))).toBe(hex(body(16, 3)));
    // A shared body that no row names by the end of its write is not kept; a row naming a body that is not stored
    // is kept without the reference.
    await store.write([{ op: 'sharedBody', qid: topic, seq: 4, body: body(16, 4) }]);
    expect(sharedBodies()).toBe(1);
    await store.write([{ op: 'put', qid: sub, row: row(2, { bodyRef: [topic, 4] }) }]);
    expect(store.readRow(sub, 2)?.bodyRef).toBeUndefined();
    expect(store.readBody(sub, 2)).toBeUndefined();
    await store.write([{ op: 'delete', qid: dlq, seq: 1 }]);
    expect(sharedBodies()).toBe(0);
  });
}
