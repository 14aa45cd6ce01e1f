// add-rule and enumerate-rules over $management (src/amqp/rules-wire.ts): the SDKs send TrueRuleFilter and
// FalseRuleFilter as SQL filters, and Service Bus reads them back as the true and false filters.

import { describe, expect, it } from 'vitest';
import { decodeRule } from '../../src/amqp/rules-wire.js';

describe('add-rule: the true and false filters', () => {
  it('takes the SQL texts the SDKs send for TrueRuleFilter and FalseRuleFilter as the true and false filters', () => {
    // .NET's TrueRuleFilter / FalseRuleFilter subclass SqlRuleFilter with the expressions "1=1" / "1=0"
    // (AmqpMessageConverter.GetSqlRuleFilterMap sends any SqlRuleFilter as sql-filter).
    expect(decodeRule('yes', { 'sql-filter': { expression: '1=1' } }).filter).toEqual({ type: 'true' });
    expect(decodeRule('no', { 'sql-filter': { expression: '1=0' } }).filter).toEqual({ type: 'false' });
  });

  it('keeps any other text, and a text with parameters, as a SQL filter', () => {
    expect(decodeRule('r', { 'sql-filter': { expression: '1 = 0' } }).filter).toEqual({ type: 'sql', expression: '1 = 0' });
    expect(decodeRule('r', { 'sql-filter': { expression: 'TRUE' } }).filter).toEqual({ type: 'sql', expression: 'TRUE' });
    expect(decodeRule('r', { 'sql-filter': { expression: '1=0', parameters: { '@x': 1 } } }).filter).toEqual({
      type: 'sql',
      expression: '1=0',
      parameters: { '@x': 1 },
    });
  });

  it('keeps the action of a true or false filter', () => {
    expect(decodeRule('r', { 'sql-filter': { expression: '1=1' }, 'sql-rule-action': { expression: 'SET a = 1' } })).toEqual({
      name: 'r',
      filter: { type: 'true' },
      action: 'SET a = 1',
    });
  });
});
