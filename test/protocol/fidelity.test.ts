// Every section a client sends comes back byte for byte: all body forms, properties with each message-id
// type, application properties of every AMQP type, and the sender's own annotations. Only the header and
// the broker's x-opt-* annotations are rewritten. Also through dead-lettering and abandon.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { connect } from '../helpers/amqp-client.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const t = rhea.types as Any;

let broker: TestBroker;
let conn: Any;

beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }], { store: new MemoryStore() });
  conn = await connect(broker.port);
});
afterAll(async () => {
  conn.close();
  await broker.dispose();
});

/** Sections of an encoded message by descriptor code, as raw bytes. */
function sections(buf: Buffer): Map<number, Buffer[]> {
  const reader = new t.Reader(buf);
  const out = new Map<number, Buffer[]>();
  while (reader.position < buf.length) {
    const start = reader.position;
    const v = reader.read();
    const code = Number(v.descriptor.value);
    out.set(code, [...(out.get(code) ?? []), buf.subarray(start, reader.position)]);
  }
  return out;
}

/** Sends pre-encoded bytes and returns the raw bytes of the next delivery, settled with `outcome`. */
async function roundTrip(raw: Buffer, address = 'q', outcome: 'accept' | 'deadLetter' | 'abandon' = 'accept'): Promise<Buffer> {
  const sender = conn.open_sender({ target: { address: 'q' } });
  await new Promise((r) => sender.once('sendable', r));
  sender.send(raw, undefined, 0);
  await new Promise((r) => sender.once('accepted', r));
  sender.close();
  const receiver = conn.open_receiver({ source: { address }, credit_window: 0, autoaccept: false, rcv_settle_mode: 1 });
  receiver.add_credit(1);
  const decode = rhea.message.decode;
  let captured: Buffer | undefined;
  (rhea.message as Any).decode = (b: Buffer) => {
    captured ??= b;
    return decode(b);
  };
  const ctx: Any = await new Promise((r) => receiver.once('message', r));
  (rhea.message as Any).decode = decode;
  if (outcome === 'accept') ctx.delivery.accept();
  else if (outcome === 'abandon') ctx.delivery.modified({ delivery_failed: true, undeliverable_here: false });
  else ctx.delivery.reject({ condition: 'com.microsoft:dead-letter', info: { DeadLetterReason: 'r' } });
  await new Promise((r) => setTimeout(r, 50));
  receiver.close();
  return captured!;
}

function build(msg: Record<string, unknown>): Buffer {
  return rhea.message.encode(msg);
}

const PROPS = {
  message_id: 'm',
  correlation_id: 'corr-1',
  subject: 'subj',
  content_type: 'application/json',
  to: 'someone',
  reply_to: 'reply-q',
  reply_to_group_id: 'rgroup',
  group_id: 'group-1',
  creation_time: new Date(1_700_000_000_000),
};

const APP = {
  str: 'text',
  int: t.wrap_int(-5),
  uint: t.wrap_uint(7),
  long: t.wrap_long(-9_007_199_254_740_000),
  ulong: t.wrap_ulong(12),
  double: t.wrap_double(1.5),
  float: t.wrap_float(0.25),
  bool: true,
  ts: t.wrap_timestamp(1_700_000_000_123),
  uuid: t.wrap_uuid(Buffer.from('0123456789abcdef0123456789abcdef', 'hex')),
  bin: t.wrap_binary(Buffer.from([0, 1, 2])),
  sym: t.wrap_symbol('a-symbol'),
  nul: null,
};

describe('message fidelity', () => {
  const bodies: [string, unknown][] = [
    ['data', rhea.message.data_section(Buffer.from([1, 2, 3, 250]))],
    ['amqp-value string', 'plain value'],
    ['amqp-value map', { a: 1, nested: { b: [1, 'x'] } }],
    ['amqp-sequence', rhea.message.sequence_section([1, 'two', true])],
    ['two data sections', rhea.message.data_sections([Buffer.from('a'), Buffer.from('b')])],
  ];
  for (const [name, body] of bodies) {
    it(`keeps properties, application properties and a ${name} body byte for byte`, async () => {
      const raw = build({ ...PROPS, message_id: `m-${name}`, application_properties: APP, message_annotations: { 'x-custom': 'kept', 'x-opt-partition-key': 'pk' }, body });
      const got = await roundTrip(raw);
      const a = sections(raw);
      const b = sections(got);
      for (const code of [0x73, 0x74, 0x75, 0x76, 0x77]) expect(b.get(code)).toEqual(a.get(code));
      const ann = rhea.message.decode(got).message_annotations as Any;
      expect(ann['x-custom']).toBe('kept');
      expect(ann['x-opt-partition-key']).toBe('pk');
    });
  }

  for (const [name, id] of [
    ['ulong', t.wrap_ulong(42)],
    ['uuid', t.wrap_uuid(Buffer.from('00112233445566778899aabbccddeeff', 'hex'))],
    ['binary', t.wrap_binary(Buffer.from('id-bytes'))],
  ] as const) {
    it(`keeps a ${name} message-id with its type`, async () => {
      const raw = build({ message_id: id, body: 'x' });
      const got = await roundTrip(raw);
      expect(sections(got).get(0x73)).toEqual(sections(raw).get(0x73));
    });
  }

  it('keeps everything through abandon and dead-lettering, adding only the reason', async () => {
    const raw = build({ ...PROPS, message_id: 'dl-1', application_properties: APP, body: 'payload' });
    const abandoned = await roundTrip(raw, 'q', 'abandon');
    expect(sections(abandoned).get(0x74)).toEqual(sections(raw).get(0x74));
    const sender = conn.open_sender({ target: { address: 'q' } });
    void sender;
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, rcv_settle_mode: 1 });
    receiver.add_credit(1);
    const ctx: Any = await new Promise((r) => receiver.once('message', r));
    expect(ctx.message.delivery_count).toBe(1);
    ctx.delivery.reject({ condition: 'com.microsoft:dead-letter', info: { DeadLetterReason: 'why', DeadLetterErrorDescription: 'because' } });
    await new Promise((r) => setTimeout(r, 50));
    receiver.close();
    const dlr = conn.open_receiver({ source: { address: 'q/$DeadLetterQueue' }, credit_window: 0, autoaccept: true });
    dlr.add_credit(1);
    const d: Any = await new Promise((r) => dlr.once('message', r));
    expect(sections(rhea.message.encode(d.message)).get(0x73)).toEqual(sections(raw).get(0x73));
    expect(d.message.body).toBe('payload');
    expect(d.message.application_properties).toMatchObject({ str: 'text', DeadLetterReason: 'why', DeadLetterErrorDescription: 'because' });
    expect(d.message.application_properties.ulong).toBe(12);
  });
});
