// A table of SQL filters against messages, one row per message (docs/filters.md, "SQL filters"). "match" is
// `true`; a non-match is split into `false` and `'unknown'` so that three-valued logic is checked exactly.

import { describe, it, expect } from 'vitest';
import { compileSqlFilter, FilterEvaluationError, FilterSyntaxError, type FilterMessage, type Truth } from '../../../src/filters/index.js';
import { bool, dbl, i32, i64, msg, refusal, str, ts, u32 } from './helpers.js';

type Expected = Truth | 'reject' | { throws: string };
type Row = readonly [id: string, expression: string, message: FilterMessage, expected: Expected];

const ANY = msg({ color: 'red', n: i32(1) }, { messageId: 'm1' });

const ROWS: readonly Row[] = [
  ['1', '1=1', ANY, true],
  ['2', '1=0', ANY, false],
  ['3', "color = 'red'", msg({ color: str('red') }), true],
  ['4', "Color = 'red'", msg({ color: str('red') }), true],
  ['5', "user.COLOR = 'red'", msg({ color: str('red') }), true],
  ['6', "color = 'Red'", msg({ color: str('red') }), false],
  ['7', "color = 'red'", msg(), 'unknown'],
  ['8', "NOT (color = 'red')", msg(), 'unknown'],
  ['9', "color <> 'red'", msg(), 'unknown'],
  ['10', "color = 'red' OR 1=1", msg(), true],
  ['11', "color = 'red' OR 1=0", msg(), 'unknown'],
  ['12', "NOT (color = 'red' AND 1=0)", msg(), true],
  ['13', "NOT EXISTS(color) OR color <> 'red'", msg(), true],
  ['14', 'color IS NULL', msg(), true],
  ['15', 'color IS NULL', msg({ color: null }), true],
  ['16', 'color IS NOT NULL', msg({ color: str('x') }), true],
  ['17', 'EXISTS(color)', msg({ color: null }), true],
  ['18', 'EXISTS(color)', msg(), false],
  ['19', 'color = NULL', msg({ color: null }), 'unknown'],
  ['20', 'sys.Label IS NULL', msg({}, { messageId: 'm' }), true],
  ['21', 'Quantity = 10', msg({ quantity: i32(10) }), true],
  ['22', 'quantity = 10', msg({ quantity: u32(10) }), true],
  ['23', 'quantity = 10.0', msg({ quantity: i32(10) }), true],
  ['24', 'quantity > 5', msg({ quantity: str('10') }), 'unknown'],
  ['25', 'NOT (quantity > 5)', msg({ quantity: str('10') }), 'unknown'],
  ['26', 'big = 9007199254740993', msg({ big: i64(9007199254740993n) }), true],
  ['27', 'big = 9007199254740992', msg({ big: i64(9007199254740993n) }), false],
  ['28', 'd = 0.1 + 0.2', msg({ d: dbl(0.3) }), false],
  ['29', 'x = 1.5E1', msg({ x: i32(15) }), true],
  ['30', '7 / 2 = 3', ANY, true],
  ['31', '7.0 / 2 = 3.5', ANY, true],
  ['32', '-7 % 3 = -1', ANY, true],
  ['33', 'q / 0 = 1', msg({ q: i32(5) }), { throws: 'DivideByZeroException' }],
  ['34', '1 + 2 * 3 = 7', ANY, true],
  ['35', '(1 + 2) * 3 = 9', ANY, true],
  ['36', '-2 - 3 = -5', ANY, true],
  ['37', '1 = 1 OR 1 = 0 AND 1 = 0', ANY, true],
  ['38', 'NOT 1 = 0 AND 1 = 0', ANY, false],
  ['39', '(1 = 1 OR 1 = 0) AND 1 = 0', ANY, false],
  ['40', "s = 'it''s'", msg({ s: str("it's") }), true],
  ['41', 'color = "red"', msg({ color: str('red') }), 'unknown'],
  ['42', 'color = "red"', msg({ color: str('red'), red: str('red') }), true],
  ['43', '[my prop] = 1', msg({ 'my prop': i32(1) }), true],
  ['44', '[a]]b] = 1', msg({ 'a]b': i32(1) }), true],
  ['45', '"http://x/y" = \'account\'', msg({ 'http://x/y': str('account') }), true],
  ['46', "a + b = 'foobar'", msg({ a: str('foo'), b: str('bar') }), true],
  ['47', 'b = TRUE', msg({ b: bool(true) }), true],
  ['48', 'b = true', msg({ b: bool(true) }), true],
  ['49', 'b = 1', msg({ b: bool(true) }), 'unknown'],
  ['50', "name LIKE 'abc%'", msg({ name: str('abcdef') }), true],
  ['51', "name LIKE 'abc'", msg({ name: str('abcdef') }), false],
  ['52a', "name LIKE 'a_c'", msg({ name: str('abc') }), true],
  ['52b', "name LIKE 'a_c'", msg({ name: str('abbc') }), false],
  ['53a', "name LIKE 'ABC\\%' ESCAPE '\\'", msg({ name: str('ABC%') }), true],
  ['53b', "name LIKE 'ABC\\%' ESCAPE '\\'", msg({ name: str('ABCD') }), false],
  ['54', "name LIKE '100!%' ESCAPE '!'", msg({ name: str('100%') }), true],
  ['55', "name LIKE '%.%'", msg({ name: str('ab') }), false],
  ['56a', "name LIKE '[a]%'", msg({ name: str('abc') }), false],
  ['56b', "name LIKE '[a]%'", msg({ name: str('[a]bc') }), true],
  ['57', "name LIKE 'ABC%'", msg({ name: str('abcdef') }), false],
  ['58', "name NOT LIKE 'a%'", msg(), 'unknown'],
  ['59', "name LIKE 'a%'", msg({ name: i32(5) }), 'unknown'],
  ['60', "name LIKE 'a%' ESCAPE 'xy'", ANY, 'reject'],
  ['61', "sys.CorrelationId LIKE 'abc-%'", msg({}, { correlationId: 'abc-1' }), true],
  ['62', "color IN ('red', 'blue')", msg({ color: str('blue') }), true],
  ['63', "color NOT IN ('red', 'blue')", msg({ color: str('green') }), true],
  ['64', "color NOT IN ('red', 'blue')", msg(), 'unknown'],
  ['65a', "color IN ('red', NULL)", msg({ color: str('green') }), 'unknown'],
  ['65b', "NOT (color IN ('red', NULL))", msg({ color: str('green') }), 'unknown'],
  ['66', 'quantity IN (5, 10)', msg({ quantity: i32(10) }), true],
  ['67', "color IN ('RED')", msg({ color: str('red') }), false],
  ['68', "sys.Label = 'yellow'", msg({}, { label: 'yellow' }), true],
  ['69', "sys.label ='yellow'", msg({}, { label: 'yellow' }), true],
  ['70', "Label = 'x'", msg({}, { label: 'x' }), 'unknown'],
  ['71', "sys.To IN ('Store5', 'Store6')", msg({}, { to: 'Store6' }), true],
  ['72', "sys.MessageId = 'xxxx'", msg({}, { messageId: 'xxxx' }), true],
  ['73', "sys.SessionId = 's1'", msg({}, { sessionId: 's1' }), true],
  ['74', 'sys.NoSuchProperty = 1', ANY, 'reject'],
  ['75', 't1 < t2', msg({ t1: ts('2024-01-01T00:00:00Z'), t2: ts('2024-06-01T00:00:00Z') }), true],
  ['76', "t1 > '2024-01-01'", msg({ t1: ts('2024-06-01T00:00:00Z') }), 'unknown'],
  ['77', "property('color') = 'red'", msg({ color: str('red') }), true],
  ['78', "p('col' + 'or') = 'red'", msg({ color: str('red') }), true],
  ['79a', "color = 'red' AND", ANY, 'reject'],
  ['79b', "color == 'red'", ANY, 'reject'],
  ['79c', 'flag', ANY, 'reject'],
  ['79d', "color = 'red", ANY, 'reject'],
  ['79e', '(a = 1', ANY, 'reject'],
  ['79f', 'a.b = 1', ANY, 'reject'],
  ['79g', '_x = 1', ANY, 'reject'],
];

describe('SQL filter: the case table', () => {
  it.each(ROWS)('#%s  %s', (_id, expression, message, expected) => {
    if (expected === 'reject') {
      const err = refusal(() => compileSqlFilter(expression));
      expect(err).toBeInstanceOf(FilterSyntaxError);
      return;
    }
    const filter = compileSqlFilter(expression);
    if (typeof expected === 'object') {
      let caught: unknown;
      try {
        filter.evaluate(message);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(FilterEvaluationError);
      expect((caught as FilterEvaluationError).reason).toBe(expected.throws);
      return;
    }
    expect(filter.evaluate(message)).toBe(expected);
  });

  it('#80 refuses a 1,025-character expression with argument-out-of-range, accepts 1,024', () => {
    const of = (n: number): string => `color = '${'x'.repeat(n - 10)}'`;
    expect(of(1024)).toHaveLength(1024);
    expect(compileSqlFilter(of(1024)).evaluate(msg({ color: 'x'.repeat(1014) }))).toBe(true);
    const err = refusal(() => compileSqlFilter(of(1025)), 'ArgumentOutOfRange');
    expect(err.message).toContain('1025');
  });

  it('keeps the original text byte for byte (enumerate-rules returns it)', () => {
    const text = "  Color = 'blue'   and Quantity = 10 ";
    expect(compileSqlFilter(text).expression).toBe(text);
  });
});
