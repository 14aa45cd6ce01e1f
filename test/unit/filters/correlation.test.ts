// A table of correlation filters against messages, plus edge cases (docs/filters.md, "Correlation filters").

import { describe, it, expect } from 'vitest';
import {
  compileCorrelationFilter,
  CORRELATION_STRING_FIELDS,
  Typed,
  type CorrelationFields,
  type FilterMessage,
} from '../../../src/filters/index.js';
import { bool, dbl, i32, i64, msg, refusal, str, ts, u32 } from './helpers.js';

type Row = readonly [id: string, filter: CorrelationFields, message: FilterMessage, expected: boolean];

const ROWS: readonly Row[] = [
  ['C1', { correlationId: 'high' }, msg({}, { correlationId: 'high' }), true],
  ['C2', { correlationId: 'high' }, msg({}, { correlationId: 'HIGH' }), false],
  ['C3', { label: 'red', correlationId: 'high' }, msg({}, { label: 'red', correlationId: 'low' }), false],
  ['C4', { properties: { Color: 'blue' } }, msg({ color: str('blue') }), true],
  ['C5', { properties: { version: '2' } }, msg({ version: i32(2) }), false],
  ['C6', { properties: { n: u32(3) } }, msg({ n: i32(3) }), true],
  ['C7', { properties: { k: 'v' } }, msg(), false],
  ['C8', { sessionId: 's1' }, msg({}, { sessionId: 's1' }), true],
  ['C9', { contentType: 'application/json' }, msg({}, { contentType: 'application/json' }), true],
  ['C10', { to: 'x', replyTo: 'y', replyToSessionId: 'z' }, msg({}, { to: 'x', replyTo: 'y', replyToSessionId: 'z' }), true],
  // Own cases.
  ['C3b', { label: 'red', correlationId: 'high' }, msg({}, { label: 'red', correlationId: 'high' }), true],
  ['subject alias', { subject: 'red' }, msg({}, { label: 'red' }), true],
  ['messageId', { messageId: 'm1' }, msg({}, { messageId: 'm1' }), true],
  ['null field ignored', { messageId: null, to: 'x' }, msg({}, { to: 'x' }), true],
  ['field vs absent', { to: 'x' }, msg(), false],
  ['exact, no trimming', { to: 'x' }, msg({}, { to: 'x ' }), false],
  ['value case-sensitive', { properties: { color: 'Blue' } }, msg({ color: str('blue') }), false],
  ['number vs string property', { properties: { version: 2 } }, msg({ version: str('2') }), false],
  ['long vs double by value', { properties: { n: dbl(3) } }, msg({ n: i64(3) }), true],
  ['exact long', { properties: { n: i64(9007199254740992n) } }, msg({ n: i64(9007199254740993n) }), false],
  ['boolean', { properties: { b: true } }, msg({ b: bool(true) }), true],
  ['boolean vs number', { properties: { b: 1 } }, msg({ b: bool(true) }), false],
  ['timestamp', { properties: { t: new Date('2024-01-01T00:00:00Z') } }, msg({ t: ts('2024-01-01T00:00:00Z') }), true],
  ['null message value', { properties: { k: 'v' } }, msg({ k: null }), false],
  ['properties AND fields', { to: 'x', properties: { k: 'v' } }, msg({ k: str('v') }, { to: 'y' }), false],
  ['uuid', { properties: { u: Typed.uuid('0F8FAD5B-D9CB-469F-A165-70867728950E') } }, msg({ u: Typed.uuid('0f8fad5b-d9cb-469f-a165-70867728950e') }), true],
  ['uuid vs string', { properties: { u: '0f8fad5b-d9cb-469f-a165-70867728950e' } }, msg({ u: Typed.uuid('0f8fad5b-d9cb-469f-a165-70867728950e') }), false],
];

describe('correlation filter: the case table', () => {
  it.each(ROWS)('%s', (_id, fields, message, expected) => {
    expect(compileCorrelationFilter(fields).evaluate(message)).toBe(expected);
  });

  it('C11 refuses a filter with every field null and no properties', () => {
    const all = Object.fromEntries(CORRELATION_STRING_FIELDS.map((f) => [f, null])) as CorrelationFields;
    refusal(() => compileCorrelationFilter({ ...all, properties: null }));
    refusal(() => compileCorrelationFilter({ properties: {} }));
    expect(compileCorrelationFilter({ ...all, properties: { a: 1 } }).kind).toBe('correlation');
  });

  it('keeps the filter as given, for enumerate-rules', () => {
    const f = compileCorrelationFilter({ subject: 's', properties: { Color: 'blue', n: 3 } });
    expect(f.fields.label).toBe('s');
    expect(f.fields.to).toBeNull();
    expect([...f.properties]).toEqual([
      ['Color', str('blue')],
      ['n', i32(3)],
    ]);
  });
});
