// `$management` counts and lists a client chooses, sent with a raw rhea client so that odd AMQP types reach the
// broker as they are (issue 25, row 2): a huge count is served within the documented limit, a negative count or a
// value that is not an integer is a 400 with Service Bus's argument conditions, and a list over its limit is refused before
// any of it is acted on (src/broker/runtime/limits.ts).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import { MAX_MANAGEMENT_LOCK_TOKENS, MAX_MANAGEMENT_SEQUENCE_NUMBERS, MAX_PEEK_MESSAGES, MAX_SCHEDULE_MESSAGES, MAX_SESSIONS_PAGE } from '../../src/broker/runtime/limits.js';
import { connect } from '../helpers/amqp-client.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { management, type Management } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const t = rhea.types as Any;
const OUT_OF_RANGE = 'com.microsoft:argument-out-of-range';
const ARGUMENT = 'com.microsoft:argument-error';
const STORED = MAX_PEEK_MESSAGES + 200;

let broker: TestBroker;
let conn: Any;
let q: Management;
let sq: Management;

beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q' }, { Name: 'sq', Properties: { RequiresSession: true } }]);
  const msgs = Array.from({ length: STORED }, (_, i) => ({ messageId: `m${i}`, body: new Uint8Array(rhea.message.encode({ message_id: `m${i}`, body: 'x' })) }));
  await broker.broker.send('q', msgs);
  const smsgs = Array.from({ length: 150 }, (_, i) => ({
    messageId: `s${i}`,
    sessionId: `session-${String(i).padStart(3, '0')}`,
    body: new Uint8Array(rhea.message.encode({ message_id: `s${i}`, group_id: `session-${i}`, body: 'x' })),
  }));
  await broker.broker.send('sq', smsgs);
  conn = await connect(broker.port);
  q = await management(conn, 'q');
  sq = await management(conn, 'sq');
});

afterAll(async () => {
  conn?.close();
  await broker?.dispose();
});

const peek = (count: unknown) => q.request('com.microsoft:peek-message', { 'from-sequence-number': t.wrap_long(1), 'message-count': count });

describe('peek-message message-count', () => {
  it('serves a huge int or long count with at most MAX_PEEK_MESSAGES messages', async () => {
    for (const count of [t.wrap_int(2_147_483_647), t.wrap_long(2 ** 40)]) {
      const r = await peek(count);
      expect(r.status).toBe(200);
      expect(r.body.messages.length).toBe(MAX_PEEK_MESSAGES);
    }
  });

  it('refuses a negative or zero count with argument-out-of-range', async () => {
    for (const count of [t.wrap_int(-1), t.wrap_int(0), t.wrap_long(-(2 ** 40))]) {
      const r = await peek(count);
      expect({ status: r.status, condition: r.condition }).toEqual({ status: 400, condition: OUT_OF_RANGE });
    }
  });

  // Every integer argument of every operation, with every kind of non-integer: management-integers.test.ts.
  it('refuses a string, a list, a binary, NaN and a fraction with argument-error', async () => {
    for (const count of [t.wrap_string('10'), t.wrap_list([1]), t.wrap_binary(Buffer.from('10')), t.wrap_double(NaN), t.wrap_double(2.5)]) {
      const r = await peek(count);
      expect({ status: r.status, condition: r.condition }).toEqual({ status: 400, condition: ARGUMENT });
    }
  });

  it('still answers an ordinary count exactly', async () => {
    const r = await peek(t.wrap_int(10));
    expect(r.status).toBe(200);
    expect(r.body.messages.length).toBe(10);
  });
});

describe('the other $management counts and lists', () => {
  it('refuses more sequence numbers than MAX_MANAGEMENT_SEQUENCE_NUMBERS', async () => {
    const seqs = t.wrap_array(Array.from({ length: MAX_MANAGEMENT_SEQUENCE_NUMBERS + 1 }, (_, i) => i + 1), 0x81);
    for (const op of ['com.microsoft:receive-by-sequence-number', 'com.microsoft:cancel-scheduled-message']) {
      const r = await q.request(op, { 'sequence-numbers': seqs, 'receiver-settle-mode': t.wrap_uint(1) });
      expect({ op, status: r.status, condition: r.condition }).toEqual({ op, status: 400, condition: OUT_OF_RANGE });
    }
  });

  it('refuses more lock tokens than MAX_MANAGEMENT_LOCK_TOKENS', async () => {
    const tokens = t.wrap_array(
      Array.from({ length: MAX_MANAGEMENT_LOCK_TOKENS + 1 }, () => Buffer.alloc(16, 1)),
      0x98,
    );
    for (const [op, extra] of [
      ['com.microsoft:renew-lock', {}],
      ['com.microsoft:update-disposition', { 'disposition-status': 'completed' }],
    ] as const) {
      const r = await q.request(op, { 'lock-tokens': tokens, ...extra });
      expect({ op, status: r.status, condition: r.condition }).toEqual({ op, status: 400, condition: OUT_OF_RANGE });
    }
  });

  it('refuses more scheduled messages than MAX_SCHEDULE_MESSAGES', async () => {
    const one = rhea.message.encode({ message_id: 'x', body: 'x', message_annotations: { 'x-opt-scheduled-enqueue-time': new Date(Date.now() + 3_600_000) } });
    const messages = Array.from({ length: MAX_SCHEDULE_MESSAGES + 1 }, () => ({ message: t.wrap_binary(one) }));
    const r = await q.request('com.microsoft:schedule-message', { messages });
    expect({ status: r.status, condition: r.condition }).toEqual({ status: 400, condition: OUT_OF_RANGE });
    expect(broker.broker.listEntities().find((e) => e.path === 'q')!.scheduled).toBe(0);
  });

  it('refuses a batch-delete count that is not an integer with argument-error, and 0 as out of range', async () => {
    const del = (count: unknown) => q.request('com.microsoft:batch-delete-messages', { 'message-count': count, 'enqueued-time-utc': new Date() });
    for (const count of [t.wrap_string('10'), t.wrap_list([10]), t.wrap_double(NaN)]) {
      const r = await del(count);
      expect({ status: r.status, condition: r.condition }).toEqual({ status: 400, condition: ARGUMENT });
    }
    const zero = await del(t.wrap_int(0));
    expect({ status: zero.status, condition: zero.condition }).toEqual({ status: 400, condition: OUT_OF_RANGE });
    expect(broker.broker.listEntities().find((e) => e.path === 'q')!.active).toBe(STORED);
  });

  it('serves get-message-sessions with a huge top in pages of MAX_SESSIONS_PAGE, and refuses a string top', async () => {
    const all = new Date(Date.UTC(9999, 11, 31, 23, 59, 59, 999));
    const r = await sq.request('com.microsoft:get-message-sessions', { 'last-updated-time': all, skip: t.wrap_int(0), top: t.wrap_int(2_147_483_647) });
    expect(r.status).toBe(200);
    expect(r.body['sessions-ids'].length).toBe(MAX_SESSIONS_PAGE);
    expect(r.body.skip).toBe(MAX_SESSIONS_PAGE);
    const bad = await sq.request('com.microsoft:get-message-sessions', { 'last-updated-time': all, skip: t.wrap_int(0), top: t.wrap_string('5') });
    expect({ status: bad.status, condition: bad.condition }).toEqual({ status: 400, condition: ARGUMENT });
  });
});
