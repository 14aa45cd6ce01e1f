// Evaluation edge cases beyond the case table of sql-filter.test.ts: typed comparisons, arithmetic, LIKE, system
// properties, property(), evaluation-time failures (docs/filters.md, "Property resolution" to "Evaluation errors").

import { describe, it, expect } from 'vitest';
import {
  compileSqlFilter,
  FilterEvaluationError,
  filterMessage,
  Typed,
  type FilterMessage,
  type Truth,
} from '../../../src/filters/index.js';
import { likeMatch } from '../../../src/filters/like.js';
import { bool, dbl, i32, i64, msg, str, ts, u32 } from './helpers.js';

type Row = readonly [expression: string, message: FilterMessage, expected: Truth];

const T0 = Date.parse('2024-01-01T00:00:00Z');
const SYS = msg(
  {},
  {
    messageId: 'm1',
    sequenceNumber: 9007199254740993n,
    enqueuedTimeUtc: T0,
    timeToLive: 60_000,
    deliveryCount: 0,
    size: 300,
    forcePersistence: false,
    replyTo: 'rq',
    contentType: 'application/json',
    partitionKey: 'pk',
  },
);

const ROWS: readonly Row[] = [
  // Numbers across AMQP types, compared by value; 64-bit exact.
  ['n > 9223372036854775807', msg({ n: Typed.ulong(18446744073709551615n) }), true],
  ['n = 3', msg({ n: dbl(3) }), true],
  ['n = 3', msg({ n: u32(3) }), true],
  ['n < 2.5', msg({ n: i32(2) }), true],
  ['n + 1 = 9223372036854775807 * -1 - 1', msg({ n: i64(9223372036854775807n) }), true], // unchecked Int64 wrap
  ['0.0 / 0 = 0.0 / 0', msg(), false], // NaN
  ['0.0 / 0 <> 0.0 / 0', msg(), true],
  ['1.0 / 0 > 1', msg(), true],
  ['7 % 2.5 = 2', msg(), true],
  ['.5 + 5. = 5.5', msg(), true],
  ['1e2 = 100', msg(), true],
  ['+n = 2', msg({ n: i32(2) }), true],
  ['-s = 1', msg({ s: str('x') }), 'unknown'],
  ['s - 1 = 1', msg({ s: str('x') }), 'unknown'],
  // Strings: ordinal, case-sensitive; + concatenates with invariant rendering.
  ["'a' < 'b'", msg(), true],
  ["'B' < 'a'", msg(), true],
  ["s + 1 = 'x1'", msg({ s: str('x') }), true],
  ["s + TRUE = 'xTrue'", msg({ s: str('x') }), true],
  ["s + 1.5 = 'x1.5'", msg({ s: str('x') }), true],
  ["s + missing = 'x'", msg({ s: str('x') }), 'unknown'],
  ["s = 'x'", msg({ s: { type: 'symbol', value: 'x' } }), true],
  // Booleans, uuids, timestamps, durations.
  ['b = FALSE', msg({ b: bool(false) }), true],
  ['b > FALSE', msg({ b: bool(true) }), 'unknown'],
  ['u = v', msg({ u: Typed.uuid('0F8FAD5B-D9CB-469F-A165-70867728950E'), v: Typed.uuid('0f8fad5b-d9cb-469f-a165-70867728950e') }), true],
  ["u = '0f8fad5b-d9cb-469f-a165-70867728950e'", msg({ u: Typed.uuid('0f8fad5b-d9cb-469f-a165-70867728950e') }), 'unknown'],
  ["u + '' = '0f8fad5b-d9cb-469f-a165-70867728950e'", msg({ u: Typed.uuid('0f8fad5b-d9cb-469f-a165-70867728950e') }), true],
  ['newid() = newid()', msg(), false],
  ['newid() IN (newid())', msg(), false],
  ['t2 - t1 > d', msg({ t1: ts('2024-01-01T00:00:00Z'), t2: ts('2024-01-02T00:00:00Z'), d: Typed.duration(3_600_000) }), true],
  ['t1 + d = t2', msg({ t1: ts('2024-01-01T00:00:00Z'), t2: ts('2024-01-01T01:00:00Z'), d: Typed.duration(3_600_000) }), true],
  ['t1 = 1704067200000', msg({ t1: ts('2024-01-01T00:00:00Z') }), 'unknown'],
  ['bin = bin2', msg({ bin: { type: 'binary', value: new Uint8Array([1, 2]) }, bin2: { type: 'binary', value: new Uint8Array([1, 2]) } }), true],
  ['bin <> bin2', msg({ bin: { type: 'binary', value: new Uint8Array([1, 2]) }, bin2: { type: 'binary', value: new Uint8Array([1, 3]) } }), true],
  ['o = o', msg({ o: { type: 'other', value: [1] } }), 'unknown'],
  ['EXISTS(o)', msg({ o: { type: 'other', value: [1] } }), true],
  // IN details.
  ['x NOT IN (1, NULL)', msg({ x: i32(2) }), 'unknown'],
  ['x IN (1, NULL)', msg({ x: i32(1) }), true],
  ["x IN ('1', 2)", msg({ x: i32(2) }), true],
  ['x IN (y, z + 1)', msg({ x: i32(3), y: i32(1), z: i32(2) }), true],
  ['NULL IN (1)', msg(), 'unknown'],
  // LIKE with expressions and escapes.
  ["name LIKE p + '%'", msg({ name: str('abc'), p: str('ab') }), true],
  ["name LIKE 'a%' ESCAPE e", msg({ name: str('abc'), e: str('!') }), true],
  ["name LIKE 'a%' ESCAPE NULL", msg({ name: str('abc') }), 'unknown'],
  ["name LIKE 'a!'  ESCAPE '!'", msg({ name: str('a!') }), false], // trailing escape matches nothing
  ["name LIKE 'a!!' ESCAPE '!'", msg({ name: str('a!') }), true],
  ["name LIKE 'a!b' ESCAPE '!'", msg({ name: str('ab') }), true],
  ["name LIKE 'a%' ", msg({ name: { type: 'symbol', value: 'abc' } }), true],
  ["name NOT LIKE 'a%'", msg({ name: str('bcd') }), true],
  // Property names: case, scope, Unicode, quoting.
  ['café = 1', msg({ CAFÉ: i32(1) }), true],
  ['[sys.Label] = 1', msg({ 'sys.Label': i32(1) }, { label: 'x' }), true],
  ['sys = 1', msg({ sys: i32(1) }), true],
  ['user.user = 1', msg({ USER: i32(1) }), true],
  ['a = 1', msg([['A', i32(1)], ['a', i32(2)]]), true], // first in wire order wins
  ['"a""b" = 1', msg({ 'a"b': i32(1) }), true],
  ['p = 1', msg({ p: i32(1) }), true], // p is a function only when followed by "("
  ['EXISTS(user.color) AND user.color IS NOT NULL', msg({ Color: str('x') }), true],
  // System properties.
  ['sys.SequenceNumber = 9007199254740993', SYS, true],
  ['sys.EnqueuedTimeUtc IS NOT NULL', SYS, true],
  ['sys.ExpiresAtUtc > sys.EnqueuedTimeUtc', SYS, true],
  ['sys.ExpiresAtUtc - sys.EnqueuedTimeUtc = sys.TimeToLive', SYS, true],
  ['sys.DeliveryCount = 0', SYS, true],
  ['sys.Size > 299', SYS, true],
  ['sys.ForcePersistence = FALSE', SYS, true],
  ["sys.ReplyTo = 'rq' AND sys.ContentType = 'application/json' AND sys.PartitionKey = 'pk'", SYS, true],
  ['sys.LockToken IS NULL AND sys.State IS NULL AND sys.DeadLetterSource IS NULL', SYS, true],
  ['EXISTS(sys.Label)', SYS, false],
  ['EXISTS(sys.MessageId)', SYS, true],
  ["sys.Subject = 'x'", msg({}, { label: 'x' }), true],
  ["sys.REPLYTOSESSIONID = 'r'", msg({}, { replyToSessionId: 'r' }), true],
  // property() / p().
  ["p('sys.MessageId') = 'm1'", SYS, true],
  ["property('user.Color') = 'red'", msg({ color: str('red') }), true],
  ["p('my prop') = 1", msg({ 'my prop': i32(1) }), true],
  ['p(5) = 1', msg({ '5': i32(1) }), 'unknown'],
  ["p('missing') = 1", msg(), 'unknown'],
];

describe('SQL filter: evaluation edge cases', () => {
  it.each(ROWS)('%s', (expression, message, expected) => {
    expect(compileSqlFilter(expression).evaluate(message)).toBe(expected);
  });

  it('an Int64 literal beyond the range is refused; the largest is exact', () => {
    expect(compileSqlFilter('n = 9223372036854775807').evaluate(msg({ n: Typed.ulong(9223372036854775807n) }))).toBe(true);
    expect(compileSqlFilter('n = -9223372036854775807').evaluate(msg({ n: i64(-9223372036854775807n) }))).toBe(true);
  });

  it('keywords are case-insensitive', () => {
    const f = compileSqlFilter("not (color iN ('x') Or color Like 'y%') AnD color is Not null aND exists(color)");
    expect(f.evaluate(msg({ color: str('red') }))).toBe(true);
  });

  it('evaluation failures carry the .NET exception type name used as the dead-letter reason', () => {
    const cases: [string, FilterMessage, string][] = [
      ['q % 0 = 1', msg({ q: i32(5) }), 'DivideByZeroException'],
      ['q / z = 1', msg({ q: i64(5), z: u32(0) }), 'DivideByZeroException'],
      ['q / -1 = 1', msg({ q: i64(-9223372036854775808n) }), 'OverflowException'],
      ["p('sys.Nope') = 1", msg(), 'FilterException'],
      ["name LIKE 'a%' ESCAPE e", msg({ name: str('abc'), e: str('xy') }), 'FilterException'],
      ["name LIKE 'a%' ESCAPE e", msg({ name: str('abc'), e: i32(1) }), 'FilterException'],
    ];
    for (const [expression, message, reason] of cases) {
      const f = compileSqlFilter(expression);
      expect(() => f.evaluate(message), expression).toThrow(FilterEvaluationError);
      try {
        f.evaluate(message);
      } catch (err) {
        expect((err as FilterEvaluationError).reason, expression).toBe(reason);
      }
    }
  });

  it('double division by zero does not throw', () => {
    expect(compileSqlFilter('q / 0.0 > 1').evaluate(msg({ q: i32(5) }))).toBe(true);
  });

  it('AND/OR follow the three-valued truth tables of the SQL filter syntax', () => {
    const T = "t = 1";
    const F = "t = 2";
    const U = "u = 1";
    const m = msg({ t: i32(1) });
    const table: [string, Truth][] = [
      [`${T} AND ${T}`, true], [`${T} AND ${F}`, false], [`${T} AND ${U}`, 'unknown'],
      [`${F} AND ${U}`, false], [`${U} AND ${F}`, false], [`${U} AND ${U}`, 'unknown'],
      [`${T} OR ${U}`, true], [`${U} OR ${T}`, true], [`${F} OR ${U}`, 'unknown'],
      [`${F} OR ${F}`, false], [`${U} OR ${U}`, 'unknown'], [`NOT ${F}`, true], [`NOT ${T}`, false],
    ];
    for (const [e, want] of table) expect(compileSqlFilter(e).evaluate(m), e).toBe(want);
  });
});

describe('LIKE matcher', () => {
  it.each([
    ['', '%', true],
    ['', '_', false],
    ['abc', '%%%', true],
    ['abcbc', 'a%bc', true],
    ['abcbd', 'a%bc', false],
    ['aXbXc', 'a%b%c', true],
    ['aaaaaaaaaaaaaaaaaaaaaaaaaaaaab', '%a%a%a%a%a%a%c', false],
    ['a\nb', 'a_b', true],
    ['a.b', 'a.b', true],
    ['axb', 'a.b', false],
  ])('%j LIKE %j → %s', (value, pattern, expected) => {
    expect(likeMatch(value, pattern, null)).toBe(expected);
  });
});

describe('filterMessage', () => {
  it('types plain JS values as the case tables\' notation expects', () => {
    const m = filterMessage({
      properties: { s: 'x', i: 5, big: 3_000_000_000, d: 1.5, b: true, t: new Date(T0), n: null, l: 7n },
    });
    expect(Object.fromEntries(m.properties)).toEqual({
      s: str('x'),
      i: i32(5),
      big: i64(3_000_000_000),
      d: dbl(1.5),
      b: bool(true),
      t: Typed.timestamp(T0),
      n: Typed.null(),
      l: i64(7n),
    });
  });

  it('refuses integers outside the declared type', () => {
    expect(() => Typed.int(2 ** 31)).toThrow(RangeError);
    expect(() => Typed.uint(-1)).toThrow(RangeError);
  });
});
