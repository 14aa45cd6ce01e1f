// schedule-message inside a transaction (.NET's ScheduleMessageAsync in a TransactionScope), on a memory store and
// a fake clock: the sequence numbers are reserved when the request is staged and reported before the commit, the
// commit stores the scheduled messages under exactly those numbers in its one store write, a rollback stores
// nothing and never hands the numbers out again, and a restart never numbers below what a commit stored.

import { describe, expect, it } from 'vitest';
import { MAX_TRANSACTION_OPERATIONS, type TxnOp } from '../../src/broker/messaging/transactions.js';
import { Harness, codeOf, flush, msg, transactionsOf } from './helpers.js';

const OWNER = { connection: 'c1', link: 'ctl' };
const MINUTE = 60_000;

/** A schedule-message op for `path`, each message due a minute from now; `stage` fills in its numbers. */
function schedule(h: Harness, path: string, ...ids: string[]): Extract<TxnOp, { kind: 'schedule' }> {
  return { kind: 'schedule', path, msgs: ids.map((id) => msg(id, { scheduledAt: h.clock.now() + MINUTE })), seqs: [] };
}

/** Counts store writes from now on. */
function countWrites(h: Harness): () => number {
  let writes = 0;
  const write = h.store.write.bind(h.store);
  h.store.write = (ops) => {
    writes++;
    return write(ops);
  };
  return () => writes;
}

describe('schedule-message in a transaction', () => {
  it('reports reserved numbers at once, shows nothing before the commit, and stores them under those numbers in one write', async () => {
    const h = await Harness.start();
    const [first] = await h.send('q', 'plain');
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    const op = schedule(h, 'q', 'a', 'b');
    txns.stage(id, 'c1', op);
    expect(op.seqs).toEqual([first! + 1, first! + 2]);
    // Invisible until the commit: peek does not show them, a cancel does not find them.
    expect(h.broker.peek('q', 1, 10).map((m) => m.row.messageId)).toEqual(['plain']);
    expect(await codeOf(h.broker.cancelScheduled('q', [op.seqs[0]!]))).toBe('MessageNotFound');
    expect(h.stored('q')).toHaveLength(1);

    const writes = countWrites(h);
    await txns.discharge(id, 'c1', false);
    expect(writes()).toBe(1);
    const scheduled = h.broker.browse('q', { state: 'scheduled' }).map((m) => [m.row.messageId, m.row.seq]);
    expect(scheduled).toEqual([['a', op.seqs[0]], ['b', op.seqs[1]]]);
    expect(h.stored('q').map((r) => r.seq).sort((x, y) => x - y)).toEqual([first, ...op.seqs]);
    // Numbering goes on after the reserved numbers.
    expect(await h.send('q', 'next')).toEqual([first! + 3]);
  });

  it('delivers the committed messages when they fall due', async () => {
    const h = await Harness.start();
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    txns.stage(id, 'c1', schedule(h, 'q', 'due'));
    await txns.discharge(id, 'c1', false);
    const { consumer } = h.attach('q', 5);
    await h.advance(MINUTE - 1);
    expect(consumer.ids()).toEqual([]);
    await h.advance(1);
    expect(consumer.ids()).toEqual(['due']);
  });

  it('lets the reserved numbers be cancelled after the commit, outside or inside a transaction', async () => {
    const h = await Harness.start();
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    const op = schedule(h, 'q', 'a', 'b');
    txns.stage(id, 'c1', op);
    await txns.discharge(id, 'c1', false);
    const [a, b] = op.seqs as [number, number];

    await h.broker.cancelScheduled('q', [a]);
    const id2 = txns.declare(OWNER);
    txns.stage(id2, 'c1', { kind: 'cancelScheduled', path: 'q', seqs: [b] });
    expect(h.broker.browse('q', { state: 'scheduled' }).map((m) => m.row.seq)).toEqual([b]);
    await txns.discharge(id2, 'c1', false);
    expect(h.broker.browse('q')).toHaveLength(0);
    expect(h.stored('q')).toHaveLength(0);
  });

  it('rolls back a cancel of a number scheduled in the same, not yet committed, transaction', async () => {
    const h = await Harness.start();
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    const op = schedule(h, 'q', 'a');
    txns.stage(id, 'c1', op);
    txns.stage(id, 'c1', { kind: 'cancelScheduled', path: 'q', seqs: op.seqs });
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionRolledBack');
    expect(h.broker.browse('q')).toHaveLength(0);
  });

  it('stores nothing on rollback, and never gives a reserved number to a later message', async () => {
    const h = await Harness.start();
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    const op = schedule(h, 'q', 'a', 'b');
    txns.stage(id, 'c1', op);
    await txns.discharge(id, 'c1', true);
    expect(h.broker.browse('q')).toHaveLength(0);
    expect(h.stored('q')).toHaveLength(0);
    const [next] = await h.send('q', 'after');
    expect(next).toBeGreaterThan(Math.max(...op.seqs));
    // A timed-out or dropped transaction reserves the same way: its numbers are gone too.
    const id2 = txns.declare(OWNER);
    const op2 = schedule(h, 'q', 'c');
    txns.stage(id2, 'c1', op2);
    expect(op2.seqs[0]).toBeGreaterThan(next!);
    txns.rollbackOwner('c1');
    expect(await h.send('q', 'later')).toEqual([op2.seqs[0]! + 1]);
  });

  it('numbers a topic schedule by the topic, as outside a transaction, and fans the messages out on commit', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('events', {});
    await h.broker.createSubscription('events', 's1', {});
    await h.broker.createSubscription('events', 's2', {});
    const [outside] = await h.broker.send('events', [msg('outside', { scheduledAt: h.clock.now() + MINUTE })]);
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    const op = schedule(h, 'events', 't1', 't2');
    txns.stage(id, 'c1', op);
    expect(op.seqs).toEqual([outside! + 1, outside! + 2]);
    expect(h.broker.browse('events/Subscriptions/s1').map((m) => m.row.messageId)).toEqual(['outside']);
    expect(await codeOf(h.broker.cancelScheduled('events', [op.seqs[0]!]))).toBe('MessageNotFound');

    await txns.discharge(id, 'c1', false);
    for (const sub of ['s1', 's2']) {
      const rows = h.broker.browse(`events/Subscriptions/${sub}`, { state: 'scheduled' });
      expect(rows.map((m) => [m.row.messageId, m.row.topicSeq])).toEqual([['outside', outside], ['t1', op.seqs[0]], ['t2', op.seqs[1]]]);
    }
    // Cancelling by the topic number removes the message from every subscription.
    await h.broker.cancelScheduled('events', [op.seqs[0]!]);
    expect(h.broker.browse('events/Subscriptions/s2').map((m) => m.row.messageId)).toEqual(['outside', 't2']);
    expect((await h.broker.send('events', [msg('next')]))[0]).toBe(outside! + 3);
  });

  it('numbers a message sent to an auto-forwarding queue by the queue it is stored in, as outside a transaction', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('inbox', { settings: { forwardTo: 'ttlq' } });
    const [outside] = await h.broker.send('inbox', [msg('outside', { scheduledAt: h.clock.now() + MINUTE })]);
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    const op = schedule(h, 'inbox', 'fwd');
    txns.stage(id, 'c1', op);
    expect(op.seqs).toEqual([outside! + 1]);
    await txns.discharge(id, 'c1', false);
    expect(h.broker.browse('ttlq', { state: 'scheduled' }).map((m) => [m.row.messageId, m.row.seq])).toEqual([['outside', outside], ['fwd', op.seqs[0]]]);
    await h.broker.cancelScheduled('ttlq', op.seqs);
    expect(h.broker.browse('ttlq').map((m) => m.row.messageId)).toEqual(['outside']);
  });

  it('after a restart numbers above every committed reserved number, and the committed messages can be cancelled', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('events', {});
    await h.broker.createSubscription('events', 's1', {});
    const txns = transactionsOf(h.broker);
    const qTxn = txns.declare(OWNER);
    const qOp = schedule(h, 'q', 'a');
    txns.stage(qTxn, 'c1', qOp);
    // A plain send takes the next number, and commits before the transaction does.
    const [plain] = await h.send('q', 'plain');
    expect(plain).toBe(qOp.seqs[0]! + 1);
    await txns.discharge(qTxn, 'c1', false);
    const tTxn = txns.declare(OWNER);
    const tOp = schedule(h, 'events', 'e1', 'e2');
    txns.stage(tTxn, 'c1', tOp);
    await txns.discharge(tTxn, 'c1', false);
    await h.broker.cancelScheduled('q', qOp.seqs);
    const { consumer } = h.attach('q', 1);
    await flush();
    await h.broker.settle(consumer.token(), { kind: 'complete' });
    expect(h.stored('q')).toHaveLength(0);

    await h.restart();
    // The queue is empty, yet numbering resumes above the numbers its commits stored.
    expect(await h.send('q', 'q-after')).toEqual([plain! + 1]);
    // A topic stores no rows of its own: only its mark, written in the commit, keeps its numbering going.
    expect(await h.broker.send('events', [msg('t-after')])).toEqual([tOp.seqs[1]! + 1]);
    await h.broker.cancelScheduled('events', [tOp.seqs[0]!]);
    expect(h.broker.browse('events/Subscriptions/s1').map((m) => m.row.messageId)).toEqual(['e2', 't-after']);
  });

  it('counts each scheduled message toward the 100 operations and keeps to the entity the transaction works on', async () => {
    const h = await Harness.start();
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    const ids = Array.from({ length: MAX_TRANSACTION_OPERATIONS }, (_, i) => `m${i}`);
    txns.stage(id, 'c1', schedule(h, 'q', ...ids));
    expect(await codeOf(() => txns.stage(id, 'c1', schedule(h, 'q', 'one-more')))).toBe('QuotaExceeded');
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionRolledBack');
    expect(h.broker.browse('q')).toHaveLength(0);

    const id2 = txns.declare(OWNER);
    txns.stage(id2, 'c1', { kind: 'send', path: 'q', msgs: [msg('x')] });
    expect(await codeOf(() => txns.stage(id2, 'c1', schedule(h, 'ttlq', 'elsewhere')))).toBe('InvalidOperation');
    expect(await codeOf(() => txns.stage(txns.declare(OWNER), 'c1', schedule(h, 'nope', 'x')))).toBe('EntityNotFound');
    await flush();
    expect(h.broker.browse('ttlq')).toHaveLength(0);
  });
});
