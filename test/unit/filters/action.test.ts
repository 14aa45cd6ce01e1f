// SQL rule actions (docs/filters.md, "Actions"): assignment conversions, system properties, immutability.

import { describe, it, expect } from 'vitest';
import { compileSqlAction, FilterEvaluationError, Typed, type FilterMessage } from '../../../src/filters/index.js';
import { dbl, i32, i64, msg, str, u32 } from './helpers.js';

const apply = (action: string, m: FilterMessage): FilterMessage => compileSqlAction(action).apply(m);

/** Expects the action to fail at evaluation time with `reason`. */
function failsWith(action: string, m: FilterMessage, reason: string): void {
  let caught: unknown;
  try {
    apply(action, m);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(FilterEvaluationError);
  expect((caught as FilterEvaluationError).reason).toBe(reason);
}

describe('SQL actions', () => {
  it('does not mutate the input message', () => {
    const m = msg({ a: i32(1), b: str('x') }, { to: 't' });
    const before = { system: { ...m.system }, properties: [...m.properties] };
    const out = apply("SET a = 2; REMOVE b; SET sys.To = 'u'; SET c = 3", m);
    expect({ system: m.system, properties: [...m.properties] }).toEqual(before);
    expect(out.system.to).toBe('u');
    expect([...out.properties]).toEqual([
      ['a', i64(2)],
      ['c', i64(3)],
    ]);
  });

  it('statements see the effect of the previous ones', () => {
    const out = apply('SET a = 1; SET b = a + 1; SET A = b * 10', msg());
    expect(Object.fromEntries(out.properties)).toEqual({ a: i64(20), b: i64(2) });
  });

  it('converts to the existing type only where C# converts implicitly (widening), else takes the new type', () => {
    const m = msg({ i: i32(10), d: dbl(1.5), s: str('x'), big: i32(1), l: i64(7), same: i32(3), keep: i32(4), u: u32(5) });
    const out = apply("SET i = i + 1; SET d = 2; SET s = 5; SET big = 9999999999; SET l = same; SET same = same; SET u = u * 2; SET n = 'new'", m);
    expect(Object.fromEntries(out.properties)).toEqual({
      // Integer constants are Int64 and int + long is long; long to int is no implicit conversion, so a long stays.
      i: i64(11),
      d: dbl(2),
      s: i64(5),
      big: i64(9999999999),
      // int to long is implicit: the existing Int64 keeps its type.
      l: i64(3),
      // Assigning a property its own value changes nothing; an untouched property keeps its type.
      same: i32(3),
      keep: i32(4),
      u: i64(10),
      n: str('new'),
    });
  });

  it('arithmetic on two integer properties gives a long (the topic filters doc example: quantity / 2)', () => {
    const out = apply('SET quantity = quantity / 2; SET both = a * b', msg({ quantity: i32(9), a: i32(3), b: i32(4) }));
    expect(out.properties.get('quantity')).toEqual(i64(4));
    expect(out.properties.get('both')).toEqual(i64(12));
  });

  it('REMOVE of a missing property is a no-op; REMOVE is case-insensitive', () => {
    const out = apply('REMOVE nope; REMOVE COLOR', msg({ color: 'red', keep: 1 }));
    expect([...out.properties.keys()]).toEqual(['keep']);
  });

  it('sets string system properties, rendering numbers and uuids as text', () => {
    const out = apply(
      "SET sys.To = 5; SET sys.Label = 'l'; SET sys.ReplyTo = 'r'; SET sys.MessageId = 'm' + 1; SET sys.ContentType = 'text/plain'; SET sys.ReplyToSessionId = 'rs'; SET sys.PartitionKey = 'pk'; SET sys.ViaPartitionKey = 'vpk'; SET sys.SessionId = u",
      msg({ u: Typed.uuid('0F8FAD5B-D9CB-469F-A165-70867728950E') }),
    );
    expect(out.system).toEqual({
      to: '5',
      label: 'l',
      replyTo: 'r',
      messageId: 'm1',
      contentType: 'text/plain',
      replyToSessionId: 'rs',
      partitionKey: 'pk',
      viaPartitionKey: 'vpk',
      sessionId: '0f8fad5b-d9cb-469f-a165-70867728950e',
    });
  });

  it('parses strings for typed system properties', () => {
    const out = apply(
      "SET sys.TimeToLive = '1.02:03:04.5'; SET sys.ScheduledEnqueueTimeUtc = '2024-01-01T00:00:00Z'; SET sys.ForcePersistence = 'True'",
      msg(),
    );
    expect(out.system.timeToLive).toBe(((26 * 60 + 3) * 60 + 4) * 1000 + 500);
    expect(out.system.scheduledEnqueueTimeUtc).toBe(Date.parse('2024-01-01T00:00:00Z'));
    expect(out.system.forcePersistence).toBe(true);
    const copy = apply('SET sys.TimeToLive = sys.TimeToLive + sys.TimeToLive; SET sys.ScheduledEnqueueTimeUtc = t', msg({ t: Typed.timestamp(5) }, { timeToLive: 1000 }));
    expect(copy.system.timeToLive).toBe(2000);
    expect(copy.system.scheduledEnqueueTimeUtc).toBe(5);
  });

  it('REMOVE sys.X and SET sys.X = NULL clear nullable string properties', () => {
    const out = apply('REMOVE sys.CorrelationId; SET sys.To = missing', msg({}, { correlationId: 'c', to: 't' }));
    expect(out.system.correlationId).toBeNull();
    expect(out.system.to).toBeNull();
  });

  it('fails at evaluation time on values the system property cannot take', () => {
    failsWith("SET sys.TimeToLive = 'soon'", msg(), 'InvalidCastException');
    failsWith('SET sys.TimeToLive = 5', msg(), 'InvalidCastException');
    failsWith("SET sys.ScheduledEnqueueTimeUtc = 'not a date'", msg(), 'InvalidCastException');
    failsWith("SET sys.ForcePersistence = 'yes'", msg(), 'InvalidCastException');
    failsWith('SET sys.To = TRUE', msg(), 'InvalidCastException');
    failsWith('SET sys.MessageId = NULL', msg(), 'InvalidCastException');
    failsWith('SET a = 1 / 0', msg(), 'DivideByZeroException');
  });
});
