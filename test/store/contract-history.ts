// The part of the Store contract the delivery history relies on (issue 39): a whole image per message under
// [qid, seq], replaced by each 'history' op, removed by a null record, by the row's delete and by its entity's
// clear, kept per entity, and surviving a reopen. Registered inside runStoreContract, so it runs on every store.

import { expect, it } from 'vitest';
import type { DeliveryHistory } from '../../src/store/history.js';
import type { MessageRow } from '../../src/store/row.js';
import type { Store } from '../../src/store/store.js';

/** Registers the history part of the contract; `subject` is read when each test runs. */
export function registerHistoryContract(
  subject: () => { store: Store; reopen?: () => Promise<Store> },
  row: (seq: number, extra?: Partial<MessageRow>) => MessageRow,
): void {
  const image = (n: number): DeliveryHistory => ({
    attempts: [{ n, via: 'receive', lockedAt: 1_000 * n, lockedUntil: 1_000 * n + 5_000, holder: { container: 'c', link: 'l' }, end: { how: 'abandoned', at: 1_000 * n + 10, props: { k: 1 } } }],
    events: [{ kind: 'scheduled', at: 5, detail: 9 }],
    overlaps: [{ attempts: [1, 2], from: 3, until: 4, late: { action: 'complete', at: 4 } }],
  });

  it('keeps a history image per message, replaced whole, removed by a null record', async () => {
    const { store } = subject();
    const q = await store.queueId('q');
    const other = await store.queueId('other');
    await store.write([{ op: 'put', qid: q, row: row(1), body: new Uint8Array(1) }, { op: 'history', qid: q, seq: 1, record: image(1) }]);
    expect(store.readHistory(q, 1)).toEqual(image(1));
    expect(store.readHistory(other, 1)).toBeUndefined();
    await store.write([{ op: 'history', qid: q, seq: 1, record: image(2) }]);
    expect(store.readHistory(q, 1)).toEqual(image(2));
    await store.write([{ op: 'history', qid: q, seq: 1, record: null }]);
    expect(store.readHistory(q, 1)).toBeUndefined();
    expect(store.readRow(q, 1)).toEqual(row(1));
  });

  it('removes a history with its row (delete) and with its entity (clear), in the same write', async () => {
    const { store } = subject();
    const q = await store.queueId('q');
    const dlq = await store.queueId('q/$DeadLetterQueue');
    await store.write([
      { op: 'put', qid: q, row: row(1), body: new Uint8Array(1) },
      { op: 'put', qid: q, row: row(2), body: new Uint8Array(1) },
      { op: 'history', qid: q, seq: 1, record: image(1) },
      { op: 'history', qid: q, seq: 2, record: image(2) },
    ]);
    // A dead-letter: the row leaves q and its history arrives with the copy in the dead-letter queue.
    await store.write([
      { op: 'delete', qid: q, seq: 1 },
      { op: 'put', qid: dlq, row: row(1), body: new Uint8Array(1) },
      { op: 'history', qid: dlq, seq: 1, record: image(3) },
    ]);
    expect(store.readHistory(q, 1)).toBeUndefined();
    expect(store.readHistory(dlq, 1)).toEqual(image(3));
    await store.write([{ op: 'clear', qid: q }]);
    expect(store.readHistory(q, 2)).toBeUndefined();
    expect(store.readHistory(dlq, 1)).toEqual(image(3));
  });

  it('keeps histories across close and reopen', async (t) => {
    const { store, reopen } = subject();
    if (!reopen) {
      t.skip();
      return;
    }
    const q = await store.queueId('q');
    await store.write([{ op: 'put', qid: q, row: row(7), body: new Uint8Array(1) }, { op: 'history', qid: q, seq: 7, record: image(7) }]);
    await store.close();
    const again = await reopen();
    expect(again.readHistory(q, 7)).toEqual(image(7));
  });
}
