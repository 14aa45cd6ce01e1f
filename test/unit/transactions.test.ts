// The Transactions collaborator on a memory store and a fake clock: staged work is invisible until the commit,
// the commit is one store write, rollback and timeout leave everything as it was, and Service Bus's limits hold.

import { describe, expect, it } from 'vitest';
import { MAX_TRANSACTION_OPERATIONS, TRANSACTION_TIMEOUT_MS } from '../../src/broker/messaging/transactions.js';
import { Harness, codeOf, flush, msg, transactionsOf } from './helpers.js';

const OWNER = { connection: 'c1', link: 'ctl' };

/** A harness with one message `in` delivered and locked, and a transaction declared on connection c1. */
async function setup() {
  const h = await Harness.start();
  await h.send('q', 'in');
  const { consumer } = h.attach('q', 1);
  await flush();
  const txns = transactionsOf(h.broker);
  const id = txns.declare(OWNER);
  return { h, txns, id, token: consumer.token() };
}

describe('transactions', () => {
  it('commits staged sends and a complete together, in one store write, and not before the discharge', async () => {
    const { h, txns, id, token } = await setup();
    for (let i = 0; i < 10; i++) txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg(`out${i}`)] });
    txns.stage(id, 'c1', { kind: 'settle', token, settlement: { kind: 'complete' } });
    await flush();
    // Nothing visible or settled yet: the input is still locked, and no send is stored.
    expect(h.broker.browse('q').map((m) => [m.row.messageId, m.row.state])).toEqual([['in', 'locked']]);
    expect(h.stored('q')).toHaveLength(1);

    let writes = 0;
    const write = h.store.write.bind(h.store);
    h.store.write = (ops) => {
      writes++;
      return write(ops);
    };
    await txns.discharge(id, 'c1', false);
    expect(writes).toBe(1);
    expect(h.broker.browse('q').map((m) => m.row.messageId)).toEqual(Array.from({ length: 10 }, (_, i) => `out${i}`));
    expect(h.stored('q')).toHaveLength(10);
    expect(txns.size).toBe(0);
  });

  it('rolls back on discharge with fail: no sends, and the input stays locked by its holder', async () => {
    const { h, txns, id, token } = await setup();
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('out')] });
    txns.stage(id, 'c1', { kind: 'settle', token, settlement: { kind: 'complete' } });
    await txns.discharge(id, 'c1', true);
    await flush();
    expect(h.broker.browse('q').map((m) => [m.row.messageId, m.row.state])).toEqual([['in', 'locked']]);
    // The holder may still settle it outside the transaction.
    await h.broker.settle(token, { kind: 'complete' });
    expect(h.broker.browse('q')).toHaveLength(0);
  });

  it('refuses an unknown or finished txn-id, and an id used from another connection', async () => {
    const { txns, id } = await setup();
    expect(await codeOf(() => txns.stage(id, 'c2', { kind: 'send', path: 'q', msgs: [msg('x')] }))).toBe('TransactionUnknown');
    await txns.discharge(id, 'c1', false);
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionUnknown');
    expect(await codeOf(txns.discharge('00', 'c1', true))).toBe('TransactionUnknown');
  });

  it('rolls back a transaction open for 2 minutes; its discharge then fails with TransactionTimeout', async () => {
    const { h, txns, id } = await setup();
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('late')] });
    await h.advance(TRANSACTION_TIMEOUT_MS - 1);
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('later')] });
    await h.advance(1);
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionTimeout');
    expect(h.broker.browse('q').map((m) => m.row.messageId)).toEqual(['in']);
  });

  it('rolls back what a closed connection or coordinator link declared', async () => {
    const { h, txns, id } = await setup();
    const other = txns.declare({ connection: 'c1', link: 'ctl2' });
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('a')] });
    expect(txns.rollbackOwner('c1', 'ctl2')).toBe(1);
    expect(await codeOf(txns.discharge(other, 'c1', false))).toBe('TransactionUnknown');
    expect(txns.rollbackOwner('c1')).toBe(1);
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionUnknown');
    expect(h.broker.browse('q').map((m) => m.row.messageId)).toEqual(['in']);
  });

  it(`allows ${MAX_TRANSACTION_OPERATIONS} operations, refuses one more with QuotaExceeded and then rolls back`, async () => {
    const { h, txns, id } = await setup();
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: Array.from({ length: MAX_TRANSACTION_OPERATIONS }, (_, i) => msg(`m${i}`)) });
    expect(await codeOf(() => txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('one-more')] }))).toBe('QuotaExceeded');
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionRolledBack');
    expect(h.broker.browse('q').map((m) => m.row.messageId)).toEqual(['in']);
  });

  it('keeps a transaction on one top-level entity unless cross-entity transactions are enabled', async () => {
    const { h, txns, id } = await setup();
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('a')] });
    expect(await codeOf(() => txns.stage(id, 'c1', { kind: 'send', path: 'ttlq', msgs: [msg('b')] }))).toBe('InvalidOperation');
    // The dead-letter queue belongs to the same entity.
    const id2 = txns.declare(OWNER);
    txns.stage(id2, 'c1', { kind: 'send', path: 'q', msgs: [msg('a')] });
    h.config.broker.enableCrossEntityTransactions = true;
    txns.stage(id2, 'c1', { kind: 'send', path: 'ttlq', msgs: [msg('b')] });
    await txns.discharge(id2, 'c1', false);
    expect(h.broker.browse('ttlq').map((m) => m.row.messageId)).toEqual(['b']);
  });

  it('rolls back the whole commit when a settled lock was lost before the discharge', async () => {
    const { h, txns, id, token } = await setup();
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('out')] });
    txns.stage(id, 'c1', { kind: 'settle', token, settlement: { kind: 'complete' } });
    await h.advance(30_001); // the lock expires; `in` is available again
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionRolledBack');
    expect(h.broker.browse('q').map((m) => m.row.messageId)).toEqual(['in']);
  });

  it('sends via the transaction entity to the destination on commit, and to the transfer dead-letter queue when it is missing', async () => {
    const { h, txns, id, token } = await setup();
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('fwd')], destination: 'ttlq' });
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('lost')], destination: 'nope' });
    txns.stage(id, 'c1', { kind: 'settle', token, settlement: { kind: 'complete' } });
    expect(h.broker.browse('ttlq')).toHaveLength(0);
    await txns.discharge(id, 'c1', false);
    await flush();
    expect(h.broker.browse('ttlq').map((m) => m.row.messageId)).toEqual(['fwd']);
    const tdlq = h.broker.browse('q/$Transfer/$DeadLetterQueue');
    expect(tdlq.map((m) => [m.row.messageId, m.row.props?.DeadLetterReason])).toEqual([['lost', 'MessagingEntityNotFound']]);
    expect(h.broker.browse('q')).toHaveLength(0);
    expect(h.broker.getQueue('q')?.counts.transferDeadLetter).toBe(1);
    await h.restart();
    expect(h.broker.browse('q/$Transfer/$DeadLetterQueue').map((m) => m.row.messageId)).toEqual(['lost']);
  });

  it('cancels a scheduled message on commit only, and refuses cancelling it twice in one transaction', async () => {
    const { h, txns, id } = await setup();
    const [seq] = await h.broker.send('q', [msg('later', { scheduledAt: h.clock.now() + 60_000 })]);
    txns.stage(id, 'c1', { kind: 'cancelScheduled', path: 'q', seqs: [seq!] });
    expect(h.broker.browse('q', { state: 'scheduled' })).toHaveLength(1);
    await txns.discharge(id, 'c1', false);
    expect(h.broker.browse('q', { state: 'scheduled' })).toHaveLength(0);
    const [seq2] = await h.broker.send('q', [msg('later2', { scheduledAt: h.clock.now() + 60_000 })]);
    const id2 = txns.declare(OWNER);
    txns.stage(id2, 'c1', { kind: 'cancelScheduled', path: 'q', seqs: [seq2!] });
    txns.stage(id2, 'c1', { kind: 'cancelScheduled', path: 'q', seqs: [seq2!] });
    expect(await codeOf(txns.discharge(id2, 'c1', false))).toBe('TransactionRolledBack');
    expect(h.broker.browse('q', { state: 'scheduled' })).toHaveLength(1);
  });

  it('sends via a subscription (the entity a transaction receives from) and completes its message together; a topic is no via entity', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('events', {});
    await h.broker.createSubscription('events', 'sub', {});
    await h.broker.send('events', [msg('ev')]);
    const { consumer } = h.attach('events/Subscriptions/sub', 1);
    await flush();
    const txns = transactionsOf(h.broker);
    const id = txns.declare(OWNER);
    txns.stage(id, 'c1', { kind: 'send', path: 'events/Subscriptions/sub', msgs: [msg('reply')], destination: 'q' });
    txns.stage(id, 'c1', { kind: 'settle', token: consumer.token(), settlement: { kind: 'complete' } });
    await txns.discharge(id, 'c1', false);
    expect(h.broker.browse('q').map((m) => m.row.messageId)).toEqual(['reply']);
    expect(h.broker.browse('events/Subscriptions/sub')).toHaveLength(0);
    expect(await codeOf(() => txns.viaEntity('events'))).toBe('InvalidOperation');
    expect(await codeOf(() => txns.viaEntity('q/$DeadLetterQueue'))).toBe('InvalidOperation');
  });

  it('survives a restart: a commit is stored, a transaction never discharged left nothing', async () => {
    const { h, txns, id } = await setup();
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('kept')] });
    await txns.discharge(id, 'c1', false);
    const open = txns.declare(OWNER);
    txns.stage(open, 'c1', { kind: 'send', path: 'q', msgs: [msg('dropped')] });
    await h.restart();
    expect(h.broker.browse('q').map((m) => m.row.messageId).sort()).toEqual(['in', 'kept']);
  });
});
