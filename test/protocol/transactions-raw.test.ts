// The frames of a transaction as Service Bus expects them, written by hand: attach to the coordinator, declare →
// declared(txn-id), a transfer in transactional-state → transactional-state(txn-id, accepted), a disposition in
// transactional-state → the same, discharge → accepted; nothing is visible or settled before the discharge.
// A $management schedule-message in transactional-state, as .NET's ScheduleMessageAsync in a TransactionScope
// sends it: the reply carries the sequence numbers at once, the messages appear under those numbers only when the
// discharge commits, and a rollback stores nothing.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawConn, frame, loginPrefix } from '../helpers/raw-amqp.js';
import { attach, control, described, descriptor, dispositionOf, rhea, t, terminus, txfer, until } from '../helpers/raw-txn.js';
import { tagToLockToken, uuidStringToBytes } from '../../src/amqp/lock-token.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let broker: TestBroker;
let raw: RawConn;
beforeEach(async () => {
  broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }], { store: new MemoryStore() });
  raw = new RawConn(broker.port);
  await raw.ready();
});
afterEach(async () => {
  raw?.destroy();
  await broker?.dispose();
});

const disposition = (first: number): Any => dispositionOf(raw, first);

async function declare(): Promise<Buffer> {
  await raw.write(attach(0, false, terminus.source({ address: 'ctl' }).described(), described(0x30, [t.wrap_array(['amqp:local-transactions'], 0xa3)])));
  await raw.write(txfer(0, 0, control(0x31, [])));
  const d = await until(() => disposition(0), 'declared');
  expect(d.fields.settled).toBe(true);
  expect(descriptor(d.fields.state)).toBe(0x33); // declared
  const id = d.fields.state.value[0].value as Buffer;
  expect(Buffer.isBuffer(id) && id.length).toBeTruthy();
  return id;
}

/** Stores message 'in', logs in, declares a transaction and attaches a receiver of `q` on handle 2 (no credit yet). */
async function declareWithReceiver(): Promise<Buffer> {
  await broker.broker.send('q', [{ body: rhea.message.encode({ message_id: 'in', body: 'x' }), messageId: 'in' }]);
  await raw.write(loginPrefix());
  const id = await declare();
  await raw.write(attach(2, true, terminus.source({ address: 'q' }).described(), terminus.target({}).described()));
  return id;
}

/** As declareWithReceiver, then grants one credit and awaits the locked delivery of 'in'. */
async function declareAndLock(): Promise<{ id: Buffer; delivered: Any }> {
  const id = await declareWithReceiver();
  await raw.write(frame(0, 'flow', { next_incoming_id: 0, incoming_window: 2048, next_outgoing_id: 1, outgoing_window: 2048, handle: 2, delivery_count: 0, link_credit: 1 }));
  const delivered = await until(() => raw.seen.find((s) => s.name.includes('transfer')), 'delivery');
  return { id, delivered };
}

describe('transactions on the wire', () => {
  it('attaches a coordinator and answers declare with declared(txn-id)', async () => {
    await raw.write(loginPrefix());
    await declare();
    const reply = raw.seen.find((s) => s.name.includes('attach') && s.fields.handle === 0);
    expect(descriptor(reply?.fields.target)).toBe(0x30);
  });

  it('stages a transactional transfer, answers transactional-state(txn-id, accepted) and stores it only on commit', async () => {
    await raw.write(loginPrefix());
    const id = await declare();
    await raw.write(attach(1, false, terminus.source({ address: 's' }).described(), terminus.target({ address: 'q' }).described()));
    await raw.write(txfer(1, 1, rhea.message.encode({ message_id: 'm1', body: 'in txn' }), described(0x34, [t.wrap_binary(id)])));
    const d = await until(() => disposition(1), 'transfer disposition');
    expect(d.fields.settled).toBe(true);
    expect(descriptor(d.fields.state)).toBe(0x34);
    expect(Buffer.from(d.fields.state.value[0].value)).toEqual(id);
    expect(descriptor(d.fields.state.value[1])).toBe(0x24); // accepted
    expect(broker.broker.peek('q', 1, 10)).toHaveLength(0);
    await raw.write(txfer(0, 2, control(0x32, [t.wrap_binary(id), t.wrap_boolean(false)])));
    const done = await until(() => disposition(2), 'discharge');
    expect(descriptor(done.fields.state)).toBe(0x24);
    expect(broker.broker.peek('q', 1, 10).map((m) => m.row.messageId)).toEqual(['m1']);
  });

  it('stages a transactional disposition: the message stays locked until the discharge completes it', async () => {
    const { id, delivered } = await declareAndLock();
    const did = delivered.fields.delivery_id as number;
    await raw.write(frame(0, 'disposition', { role: true, first: did, last: did, settled: false, state: described(0x34, [t.wrap_binary(id), described(0x24, [])]) }));
    const echo = await until(
      () => raw.seen.find((s) => s.name.includes('disposition') && s.fields.role === false && s.fields.first === did),
      'settlement answer',
    );
    expect(descriptor(echo.fields.state)).toBe(0x34);
    expect(descriptor(echo.fields.state.value[1])).toBe(0x24);
    expect(broker.broker.browse('q').map((m) => m.row.state)).toEqual(['locked']);
    await raw.write(txfer(0, 1, control(0x32, [t.wrap_binary(id), t.wrap_boolean(false)])));
    await until(() => disposition(1), 'discharge');
    expect(broker.broker.browse('q')).toHaveLength(0);
  });

  it('stages a $management update-disposition whose request carries transactional-state, applying it on commit', async () => {
    const { id, delivered } = await declareAndLock();
    const token = tagToLockToken(Buffer.from(delivered.fields.delivery_tag));
    await raw.write(attach(3, false, terminus.source({ address: 'mgmt' }).described(), terminus.target({ address: 'q/$management' }).described()));
    await raw.write(attach(4, true, terminus.source({ address: 'q/$management' }).described(), terminus.target({ address: 'reply' }).described()));
    await raw.write(frame(0, 'flow', { next_incoming_id: 1, incoming_window: 2048, next_outgoing_id: 1, outgoing_window: 2048, handle: 4, delivery_count: 0, link_credit: 5 }));
    const request = rhea.message.encode({
      message_id: 'r1',
      reply_to: 'reply',
      application_properties: { operation: 'com.microsoft:update-disposition' },
      body: t.wrap_map({ 'lock-tokens': t.wrap_array([uuidStringToBytes(token)], 0x98), 'disposition-status': 'completed' }),
    });
    await raw.write(txfer(3, 1, request, described(0x34, [t.wrap_binary(id)])));
    // The reply comes back on the reply link: the request was handled, and only staged.
    await until(() => (raw.seen.filter((s) => s.name.includes('transfer')).length >= 2 ? true : undefined), 'management reply');
    expect(broker.broker.browse('q').map((m) => m.row.state)).toEqual(['locked']);
    await raw.write(txfer(0, 2, control(0x32, [t.wrap_binary(id), t.wrap_boolean(false)])));
    await until(() => disposition(2), 'discharge');
    expect(broker.broker.browse('q')).toHaveLength(0);
  });

  it('refuses a receive inside a transaction (a flow carrying txn-id) by detaching the link with amqp:not-allowed', async () => {
    const id = await declareWithReceiver();
    await raw.write(
      frame(0, 'flow', {
        next_incoming_id: 0, incoming_window: 2048, next_outgoing_id: 1, outgoing_window: 2048,
        handle: 2, delivery_count: 0, link_credit: 1, properties: { 'txn-id': id },
      }),
    );
    const detach = await until(() => raw.seen.find((s) => s.name.includes('detach')), 'detach');
    expect(detach.fields.error?.condition).toBe('amqp:not-allowed');
    expect(raw.seen.some((s) => s.name.includes('transfer'))).toBe(false);
    expect(broker.broker.browse('q').map((m) => m.row.state)).toEqual(['active']);
  });

  it('rolls back the open transactions of a coordinator link that detaches', async () => {
    await raw.write(loginPrefix());
    const id = await declare();
    await raw.write(attach(1, false, terminus.source({ address: 's' }).described(), terminus.target({ address: 'q' }).described()));
    await raw.write(txfer(1, 1, rhea.message.encode({ message_id: 'm1', body: 'in txn' }), described(0x34, [t.wrap_binary(id)])));
    await until(() => disposition(1), 'transfer disposition');
    expect(broker.broker.openTransactions()).toBe(1);
    await raw.write(frame(0, 'detach', { handle: 0, closed: true }));
    await until(() => (broker.broker.openTransactions() === 0 ? true : undefined), 'rollback');
    expect(broker.broker.peek('q', 1, 10)).toHaveLength(0);
  });

  it('rolls back when the connection drops; a later discharge with fail = true of that txn-id gets unknown-id', async () => {
    await raw.write(loginPrefix());
    const id = await declare();
    await raw.write(attach(1, false, terminus.source({ address: 's' }).described(), terminus.target({ address: 'q' }).described()));
    await raw.write(txfer(1, 1, rhea.message.encode({ message_id: 'm1', body: 'in txn' }), described(0x34, [t.wrap_binary(id)])));
    await until(() => disposition(1), 'transfer disposition');
    raw.destroy();
    await until(() => (broker.broker.openTransactions() === 0 ? true : undefined), 'rollback on drop');
    raw = new RawConn(broker.port);
    await raw.ready();
    await raw.write(loginPrefix());
    await declare();
    await raw.write(txfer(0, 1, control(0x32, [t.wrap_binary(id), t.wrap_boolean(true)])));
    const d = await until(() => disposition(1), 'discharge');
    expect(descriptor(d.fields.state)).toBe(0x25);
    expect(String(d.fields.state.value[0].value[0].value)).toBe('amqp:transaction:unknown-id');
    expect(broker.broker.peek('q', 1, 10)).toHaveLength(0);
  });

  it('refuses a discharge of an unknown txn-id with amqp:transaction:unknown-id', async () => {
    await raw.write(loginPrefix());
    await declare();
    await raw.write(txfer(0, 1, control(0x32, [t.wrap_binary(Buffer.from('nope')), t.wrap_boolean(false)])));
    const d = await until(() => disposition(1), 'discharge');
    expect(descriptor(d.fields.state)).toBe(0x25); // rejected
    expect(String(d.fields.state.value[0].value[0].value)).toBe('amqp:transaction:unknown-id');
  });
});

/** Opens the coordinator (handle 0) and the $management link pair of `q` (3 out, 4 in); declares a transaction. */
async function open(): Promise<Buffer> {
  await raw.write(loginPrefix());
  const id = await declare();
  await raw.write(attach(3, false, terminus.source({ address: 'mgmt' }).described(), terminus.target({ address: 'q/$management' }).described()));
  await raw.write(attach(4, true, terminus.source({ address: 'q/$management' }).described(), terminus.target({ address: 'reply' }).described()));
  await raw.write(frame(0, 'flow', { next_incoming_id: 0, incoming_window: 2048, next_outgoing_id: 1, outgoing_window: 2048, handle: 4, delivery_count: 0, link_credit: 10 }));
  return id;
}

/** Sends a $management request on handle 3 (in the transaction when `txn` is given) and awaits its decoded reply. */
async function request(deliveryId: number, operation: string, body: Any, txn?: Buffer): Promise<Any> {
  const messageId = `r${deliveryId}`;
  const payload = rhea.message.encode({ message_id: messageId, reply_to: 'reply', application_properties: { operation }, body });
  await raw.write(txfer(3, deliveryId, payload, txn ? described(0x34, [t.wrap_binary(txn)]) : undefined));
  return until(() => {
    for (const s of raw.seen) {
      if (!s.name.includes('transfer') || !s.payload) continue;
      const reply = rhea.message.decode(s.payload);
      if (reply.correlation_id === messageId) return reply;
    }
    return undefined;
  }, `${operation} reply`);
}

/** A schedule-message body of messages due an hour from now. */
function scheduleBody(...ids: string[]): Any {
  const at = new Date(Date.now() + 3_600_000);
  return t.wrap_map({
    messages: t.wrap_list(
      ids.map((id) =>
        t.wrap_map({
          message: t.wrap_binary(rhea.message.encode({ message_id: id, message_annotations: { 'x-opt-scheduled-enqueue-time': at }, body: id })),
          'message-id': id,
        }),
      ),
    ),
  });
}

const seqsOf = (reply: Any): number[] => (reply.body['sequence-numbers'] as unknown[]).map(Number);

describe('schedule-message in a transaction, on the wire', () => {
  it('answers with the sequence numbers before the commit and stores the messages under them on commit', async () => {
    const txn = await open();
    const reply = await request(1, 'com.microsoft:schedule-message', scheduleBody('s1', 's2'), txn);
    expect(reply.application_properties.statusCode).toBe(200);
    const seqs = seqsOf(reply);
    expect(seqs).toEqual([1, 2]);
    // Not visible before the commit: a peek over $management finds nothing, a cancel does not find the number.
    expect((await request(2, 'com.microsoft:peek-message', t.wrap_map({ 'from-sequence-number': t.wrap_long(1), 'message-count': t.wrap_int(10) }))).application_properties.statusCode).toBe(204);
    const early = await request(3, 'com.microsoft:cancel-scheduled-message', t.wrap_map({ 'sequence-numbers': t.wrap_array(seqs, 0x81) }));
    expect(early.application_properties.statusCode).toBe(410); // Gone, as Service Bus answers MessageNotFound
    expect(early.application_properties['error-condition']).toBe('com.microsoft:message-not-found');

    await raw.write(txfer(0, 4, control(0x32, [t.wrap_binary(txn), t.wrap_boolean(false)])));
    const done = await until(() => disposition(4), 'discharge');
    expect(descriptor(done.fields.state)).toBe(0x24);
    expect(broker.broker.peek('q', 1, 10).map((m) => [m.row.messageId, m.row.seq, m.row.state])).toEqual([
      ['s1', 1, 'scheduled'],
      ['s2', 2, 'scheduled'],
    ]);
    // The numbers the reply gave cancel the committed messages.
    const cancel = await request(5, 'com.microsoft:cancel-scheduled-message', t.wrap_map({ 'sequence-numbers': t.wrap_array([seqs[0]], 0x81) }));
    expect(cancel.application_properties.statusCode).toBe(200);
    expect(broker.broker.peek('q', 1, 10).map((m) => m.row.messageId)).toEqual(['s2']);
  });

  it('stores nothing when the discharge rolls back, and a later schedule gets new numbers', async () => {
    const txn = await open();
    const staged = seqsOf(await request(1, 'com.microsoft:schedule-message', scheduleBody('gone'), txn));
    await raw.write(txfer(0, 2, control(0x32, [t.wrap_binary(txn), t.wrap_boolean(true)])));
    expect(descriptor((await until(() => disposition(2), 'discharge')).fields.state)).toBe(0x24);
    expect(broker.broker.peek('q', 1, 10)).toHaveLength(0);
    const later = seqsOf(await request(3, 'com.microsoft:schedule-message', scheduleBody('kept')));
    expect(later[0]).toBeGreaterThan(staged[0]!);
    expect(broker.broker.peek('q', 1, 10).map((m) => [m.row.messageId, m.row.seq])).toEqual([['kept', later[0]]]);
  });
});
