// The direct delivery encoder (src/amqp/message-bytes.ts) must produce exactly the bytes of the general one that
// goes through rhea's section codec, for every message shape a client can send and every stamp a delivery carries;
// and a receiver must read the broker's annotations from them.

import { describe, expect, it } from 'vitest';
import rhea from '../../src/amqp/rhea.js';
import { patchRhea } from '../../src/amqp/rhea-patches.js';
import { encodeDelivery, encodeGeneral, parseIncoming, withMessageIdGeneral, type DeliveryStamp } from '../../src/amqp/codec.js';
import { encodeStamped, insertMessageId } from '../../src/amqp/message-bytes.js';
import { readIncoming } from '../../src/amqp/incoming-view.js';
import type { MessageRow } from '../../src/broker/types.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const t = rhea.types as Any;
const encode = (m: Any): Buffer => rhea.message.encode(m) as Buffer;
const body = rhea.message.data_section(Buffer.alloc(300, 0x61));

const MESSAGES: Record<string, Buffer> = {
  'body only': encode({ body }),
  'durable header, app properties': encode({ durable: true, body, application_properties: { i: t.wrap_uint(7), s: 'x' } }),
  'full header with ttl': encode({ durable: true, priority: 9, ttl: 60000, first_acquirer: true, delivery_count: 3, body }),
  'the SDK shape': encode({
    message_id: 'f3a1c2d4e5f60718293a4b5c6d7e8f90',
    content_type: 'application/json',
    group_id: 's1',
    message_annotations: { 'x-opt-partition-key': 'p', 'x-opt-scheduled-enqueue-time': t.wrap_timestamp(1_700_000_000_000) },
    application_properties: { n: 5, b: true },
    body: 'an amqp-value body',
  }),
  'annotations the broker owns, sent by a client': encode({
    message_annotations: {
      'x-opt-sequence-number': t.wrap_long(99),
      'x-opt-enqueued-time': t.wrap_timestamp(1),
      other: 'kept',
      'x-opt-locked-until': t.wrap_timestamp(2),
      'x-opt-message-state': t.wrap_int(1),
      'x-opt-deadletter-source': 'q',
    },
    body,
  }),
  'delivery annotations and footer': encode({
    delivery_annotations: { 'x-opt-lock-token': 'x' },
    body: rhea.message.sequence_section([1, 2]),
    footer: { f: 'y' },
  }),
  'a 70 KiB body': encode({ body: rhea.message.data_section(Buffer.alloc(70_000, 0x62)) }),
  "the sender's clock: ttl, creation and expiry times, fields after them": encode({
    ttl: 3_600_000,
    message_id: 'm1',
    creation_time: new Date(1_000),
    absolute_expiry_time: new Date(3_601_000),
    group_id: 'g',
    reply_to_group_id: 'r',
    body,
  }),
  'properties that end before absolute-expiry-time': encode({ message_id: 'm2', to: 'x', body }),
};

function row(over: Partial<MessageRow> = {}): MessageRow {
  return { seq: 5, state: 'active', deliveryCount: 1, enqueuedAt: 1_764_000_000_123, expiresAt: null, messageId: 'm', size: 1, ...over };
}

const STAMPS: Record<string, DeliveryStamp> = {
  'first peek-lock delivery': { row: row(), deliveryCount: 0, lockedUntil: 1_764_000_060_123 },
  'redelivery, large sequence number': { row: row({ seq: 2 ** 40 + 3 }), deliveryCount: 7, lockedUntil: 1_764_000_060_123 },
  'receive-and-delete, many attempts': { row: row({ seq: 128 }), deliveryCount: 300 },
  'deferred, from a dead-letter queue': {
    row: row({ seq: 1, deadLetterSource: 'orders/$deadletterqueue' }),
    deliveryCount: 1,
    messageState: 1,
    lockedUntil: 1,
  },
  'a long dead-letter source': { row: row({ deadLetterSource: 'q'.repeat(300) }), deliveryCount: 0, messageState: 200 },
  'peek without the body': { row: row({ seq: -3 }), deliveryCount: 0, messageState: 2, omitBody: true },
  'expires in an hour': { row: row({ expiresAt: 1_764_000_000_123 + 3_600_000 }), deliveryCount: 0, lockedUntil: 1 },
  'dead-lettered, reporting the expiry it had': { row: row({ reportedExpiry: 1_764_000_000_123 + 200 }), deliveryCount: 2 },
  "a TTL beyond the header's uint": { row: row({ expiresAt: 1_764_000_000_123 + 2 ** 33 }), deliveryCount: 0 },
};

describe('direct delivery encoding', () => {
  patchRhea();
  for (const [name, raw] of Object.entries(MESSAGES)) {
    for (const [stampName, stamp] of Object.entries(STAMPS)) {
      it(`writes the general encoder's bytes: ${name}, ${stampName}`, () => {
        const fast = encodeStamped(raw, stamp);
        expect(fast).not.toBeNull();
        expect(fast!.toString('hex')).toBe(encodeGeneral(raw, stamp).toString('hex'));
      });
    }
  }

  it('stamps what a receiver reads: delivery-count, sequence number, enqueued and locked-until times', () => {
    const out = rhea.message.decode(encodeDelivery(MESSAGES['the SDK shape']!, STAMPS['redelivery, large sequence number']!)) as Any;
    expect(out.delivery_count).toBe(7);
    expect(out.message_annotations['x-opt-sequence-number']).toBe(2 ** 40 + 3);
    expect(out.message_annotations['x-opt-enqueued-time'].getTime()).toBe(1_764_000_000_123);
    expect(out.message_annotations['x-opt-locked-until'].getTime()).toBe(1_764_000_060_123);
    expect(out.message_annotations['x-opt-partition-key']).toBe('p');
    expect(out.body).toBe('an amqp-value body');
  });

  it("stamps the effective TTL and the broker's expiry and creation times over the sender's", () => {
    const decoded = (stamp: string): Any => rhea.message.decode(encodeDelivery(MESSAGES["the sender's clock: ttl, creation and expiry times, fields after them"]!, STAMPS[stamp]!));
    const times = (m: Any): unknown[] => [m.ttl, m.creation_time?.getTime(), m.absolute_expiry_time?.getTime(), m.group_id, m.reply_to_group_id];
    const enqueued = 1_764_000_000_123;
    expect(times(decoded('expires in an hour'))).toEqual([3_600_000, enqueued, enqueued + 3_600_000, 'g', 'r']);
    expect(times(decoded('dead-lettered, reporting the expiry it had'))).toEqual([200, enqueued, enqueued + 200, 'g', 'r']);
    // Beyond ~49.7 days the header cannot hold it; absolute-expiry-time still says when (and the JS SDK's
    // timeToLive, absolute-expiry-time minus creation-time).
    expect(times(decoded("a TTL beyond the header's uint"))).toEqual([undefined, enqueued, enqueued + 2 ** 33, 'g', 'r']);
    // Never expires: no ttl and no absolute-expiry-time; creation-time as sent.
    expect(times(decoded('first peek-lock delivery'))).toEqual([undefined, 1_000, undefined, 'g', 'r']);
    // A message sent without properties gets them for its expiry.
    const bare = rhea.message.decode(encodeDelivery(MESSAGES['body only']!, STAMPS['expires in an hour']!)) as Any;
    expect(times(bare)).toEqual([3_600_000, enqueued, enqueued + 3_600_000, undefined, undefined]);
  });

  it('leaves settlement changes to the general encoder, which merges them', () => {
    const stamp = { row: row({ props: { DeadLetterReason: 'r' } }), deliveryCount: 0 };
    const out = rhea.message.decode(encodeDelivery(MESSAGES['durable header, app properties']!, stamp)) as Any;
    expect(out.application_properties).toEqual({ i: 7, s: 'x', DeadLetterReason: 'r' });
  });

  it('reads stored bytes handed over as a plain Uint8Array view without copying them first', () => {
    const raw = MESSAGES['body only']!;
    const inner = new Uint8Array(raw.length + 8);
    inner.set(raw, 4);
    const view = inner.subarray(4, 4 + raw.length);
    expect(encodeDelivery(view, STAMPS['first peek-lock delivery']!).equals(encodeGeneral(raw, STAMPS['first peek-lock delivery']!))).toBe(true);
  });
});

const WITHOUT_ID: Record<string, Buffer> = {
  'body only': encode({ body }),
  'header and annotations, no properties': encode({ durable: true, message_annotations: { a: 1 }, body }),
  'delivery annotations only before the body': encode({ delivery_annotations: { d: 1 }, application_properties: { i: 1 }, body }),
  'properties without a message-id': encode({ to: 'q', subject: 's', group_id: 'g', absolute_expiry_time: new Date(5), body }),
  'a null message-id with a later field': encode({ message_id: null, reply_to_group_id: 'r', body }),
};

describe('direct message-id insertion', () => {
  for (const [name, raw] of Object.entries(WITHOUT_ID)) {
    it(`writes the general encoder's bytes: ${name}`, () => {
      const id = '0123456789abcdef0123456789abcdef';
      const fast = insertMessageId(readIncoming(raw), id);
      expect(fast).not.toBeNull();
      expect(fast!.toString('hex')).toBe(withMessageIdGeneral(readIncoming(raw), id).toString('hex'));
    });
  }

  it('gives a message sent without a message-id one that its receiver reads, keeping the other properties', () => {
    const m = parseIncoming(WITHOUT_ID['properties without a message-id']!);
    const out = rhea.message.decode(Buffer.from(m.body)) as Any;
    expect(out.message_id).toBe(m.messageId);
    expect(m.messageId).toMatch(/^[0-9a-f]{32}$/);
    expect([out.to, out.subject, out.group_id, out.absolute_expiry_time.getTime()]).toEqual(['q', 's', 'g', 5]);
  });
});
