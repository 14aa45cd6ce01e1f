// A $management schedule-message whose request transfer carries transactional-state(txn-id), written by hand as
// .NET's ScheduleMessageAsync in a TransactionScope sends it: the reply carries the sequence numbers at once, the
// messages appear under those numbers only when the discharge commits, and a rollback stores nothing.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawConn, frame, loginPrefix } from '../helpers/raw-amqp.js';
import { attach, control, described, descriptor, dispositionOf, rhea, t, terminus, txfer, until } from '../helpers/raw-txn.js';

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

/** Opens the coordinator (handle 0) and the $management link pair of `q` (3 out, 4 in); declares a transaction. */
async function open(): Promise<Buffer> {
  await raw.write(loginPrefix());
  await raw.write(attach(0, false, terminus.source({ address: 'ctl' }).described(), described(0x30, [t.wrap_array(['amqp:local-transactions'], 0xa3)])));
  await raw.write(txfer(0, 0, control(0x31, [])));
  const d = await until(() => disposition(0), 'declared');
  expect(descriptor(d.fields.state)).toBe(0x33);
  await raw.write(attach(3, false, terminus.source({ address: 'mgmt' }).described(), terminus.target({ address: 'q/$management' }).described()));
  await raw.write(attach(4, true, terminus.source({ address: 'q/$management' }).described(), terminus.target({ address: 'reply' }).described()));
  await raw.write(frame(0, 'flow', { next_incoming_id: 0, incoming_window: 2048, next_outgoing_id: 1, outgoing_window: 2048, handle: 4, delivery_count: 0, link_credit: 10 }));
  return d.fields.state.value[0].value as Buffer;
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
