// Every integer argument of every `$management` operation, sent with a raw rhea client so that each AMQP type
// reaches the broker as it is (issue 38, item 2): a value that is not an integer — NaN, ±Infinity, a fraction,
// whatever its AMQP type (double, float), an AMQP null (what rhea writes for a JavaScript NaN or undefined), a string
// — is refused with 400 and `com.microsoft:argument-error` (ArgumentException in the .NET SDK); an integer outside
// the argument's range with 400 and `com.microsoft:argument-out-of-range` (ArgumentOutOfRangeException). Nothing of
// a refused request is acted on.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import { connect } from '../helpers/amqp-client.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { management, type Management } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const t = rhea.types as Any;
const ARGUMENT = 'com.microsoft:argument-error';
const OUT_OF_RANGE = 'com.microsoft:argument-out-of-range';
const RULES = 't/Subscriptions/s';
const ALL_SESSIONS = new Date(Date.UTC(9999, 11, 31, 23, 59, 59, 999));

/** One integer argument of one operation: the request with `v` in that argument, everything else valid. */
interface Arg {
  op: string;
  arg: string;
  entity: 'q' | 'sq' | typeof RULES;
  body: (v: unknown) => Record<string, unknown>;
  /** An integer just outside the argument's range (none: any integer is served or refused by the entity). */
  outside?: unknown;
}

const seqList = (v: unknown): unknown => t.wrap_list([v]);

const ARGS: Arg[] = [
  { op: 'peek-message', arg: 'from-sequence-number', entity: 'q', body: (v) => ({ 'from-sequence-number': v, 'message-count': t.wrap_int(1) }), outside: t.wrap_long(-1) },
  { op: 'peek-message', arg: 'message-count', entity: 'q', body: (v) => ({ 'from-sequence-number': t.wrap_long(1), 'message-count': v }), outside: t.wrap_int(0) },
  { op: 'peek-message', arg: 'message-count (session)', entity: 'sq', body: (v) => ({ 'from-sequence-number': t.wrap_long(1), 'message-count': v, 'session-id': 'a' }), outside: t.wrap_int(-5) },
  { op: 'receive-by-sequence-number', arg: 'sequence-numbers[0]', entity: 'q', body: (v) => ({ 'sequence-numbers': seqList(v), 'receiver-settle-mode': t.wrap_uint(1) }) },
  { op: 'receive-by-sequence-number', arg: 'receiver-settle-mode', entity: 'q', body: (v) => ({ 'sequence-numbers': t.wrap_array([1], 0x81), 'receiver-settle-mode': v }), outside: t.wrap_uint(2) },
  { op: 'cancel-scheduled-message', arg: 'sequence-numbers[0]', entity: 'q', body: (v) => ({ 'sequence-numbers': seqList(v) }) },
  { op: 'get-message-sessions', arg: 'skip', entity: 'sq', body: (v) => ({ 'last-updated-time': ALL_SESSIONS, skip: v, top: t.wrap_int(10) }), outside: t.wrap_int(-1) },
  { op: 'get-message-sessions', arg: 'top', entity: 'sq', body: (v) => ({ 'last-updated-time': ALL_SESSIONS, skip: t.wrap_int(0), top: v }), outside: t.wrap_int(-1) },
  { op: 'enumerate-rules', arg: 'skip', entity: RULES, body: (v) => ({ skip: v, top: t.wrap_int(10) }), outside: t.wrap_int(-1) },
  { op: 'enumerate-rules', arg: 'top', entity: RULES, body: (v) => ({ skip: t.wrap_int(0), top: v }), outside: t.wrap_int(-1) },
  { op: 'batch-delete-messages', arg: 'message-count', entity: 'q', body: (v) => ({ 'message-count': v, 'enqueued-time-utc': new Date() }), outside: t.wrap_int(0) },
];

/** Values that are not integers, each as a client may send it. */
const NOT_INTEGERS: [string, unknown][] = [
  ['double NaN', t.wrap_double(NaN)],
  ['float NaN', t.wrap_float(NaN)],
  ['double Infinity', t.wrap_double(Infinity)],
  ['double -Infinity', t.wrap_double(-Infinity)],
  ['double 1.5', t.wrap_double(1.5)],
  ['float 0.5', t.wrap_float(0.5)],
  ['JavaScript NaN (rhea writes null)', NaN],
  ['null', null],
  ['string "1"', t.wrap_string('1')],
];

let broker: TestBroker;
let conn: Any;
const nodes = new Map<string, Management>();

beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q' }, { Name: 'sq', Properties: { RequiresSession: true } }], {
    topics: [{ Name: 't', Subscriptions: [{ Name: 's' }] }],
  });
  await broker.broker.send('q', [{ messageId: 'm', body: new Uint8Array(rhea.message.encode({ message_id: 'm', body: 'x' })) }]);
  await broker.broker.send('sq', [{ messageId: 's', sessionId: 'a', body: new Uint8Array(rhea.message.encode({ message_id: 's', group_id: 'a', body: 'x' })) }]);
  conn = await connect(broker.port);
  for (const e of ['q', 'sq', RULES]) nodes.set(e, await management(conn, e));
});

afterAll(async () => {
  conn?.close();
  await broker?.dispose();
});

const send = async (a: Arg, v: unknown): Promise<{ status: number; condition: unknown }> => {
  const r = await nodes.get(a.entity)!.request(`com.microsoft:${a.op}`, a.body(v));
  return { status: r.status, condition: r.condition };
};

describe('nothing of a refused request is acted on', () => {
  it('a receive-by-sequence-number whose receiver-settle-mode is not 0 or 1 neither deletes nor locks', async () => {
    const before = broker.broker.listEntities().find((e) => e.path === 'q')!;
    for (const v of [NaN, t.wrap_double(0.5), t.wrap_uint(7)]) {
      const r = await send(ARGS[4]!, v);
      expect(r.status).toBe(400);
    }
    const after = broker.broker.listEntities().find((e) => e.path === 'q')!;
    expect({ active: after.active, locked: after.locked }).toEqual({ active: before.active, locked: before.locked });
  });

  it('a batch delete with a JavaScript NaN count deletes nothing', async () => {
    expect(await send(ARGS[10]!, NaN)).toEqual({ status: 400, condition: ARGUMENT });
    expect(broker.broker.listEntities().find((e) => e.path === 'q')!.active).toBe(1);
  });
});

describe.each(ARGS)('$op $arg', (a) => {
  it('refuses every value that is not an integer with 400 argument-error', async () => {
    const got: Record<string, unknown> = {};
    for (const [name, v] of NOT_INTEGERS) got[name] = await send(a, v);
    expect(got).toEqual(Object.fromEntries(NOT_INTEGERS.map(([name]) => [name, { status: 400, condition: ARGUMENT }])));
  });

  it.runIf(a.outside !== undefined)('refuses an integer outside its range with 400 argument-out-of-range', async () => {
    expect(await send(a, a.outside)).toEqual({ status: 400, condition: OUT_OF_RANGE });
  });

  it('takes an integer within range, whatever its numeric AMQP type', async () => {
    for (const v of [t.wrap_int(1), t.wrap_long(1), t.wrap_double(1)]) {
      const r = await send(a, v);
      // Served, or refused for another reason (sequence number 1 is not deferred or scheduled: message-not-found).
      expect(r.status, JSON.stringify(r)).toBeGreaterThan(0);
      expect([ARGUMENT, OUT_OF_RANGE]).not.toContain(r.condition);
    }
  });
});
