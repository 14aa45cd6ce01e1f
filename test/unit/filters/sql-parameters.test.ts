// SQL filter and action parameters: `@name` takes its value from the rule's Parameters, bound when the rule is
// compiled; a reference without a value refuses the rule.

import { describe, expect, it } from 'vitest';
import { compileRule, compileSqlAction, compileSqlFilter, fanOut, RuleSet, Typed } from '../../../src/filters/index.js';
import { dbl, i32, msg, refusal, str } from './helpers.js';

describe('SQL parameters', () => {
  it('compares a property with a parameter value, whatever the case of its name, with or without @ in the key', () => {
    const f = compileSqlFilter('size > @Min AND color = @color', { '@min': 10, color: 'red' });
    expect(f.evaluate(msg({ size: i32(11), color: str('red') }))).toBe(true);
    expect(f.evaluate(msg({ size: i32(10), color: str('red') }))).toBe(false);
    expect(f.evaluate(msg({ size: dbl(10.5), color: str('blue') }))).toBe(false);
  });

  it('keeps the value types: a string parameter never equals a number, a date compares as a timestamp', () => {
    expect(compileSqlFilter('n = @p', { '@p': '2' }).evaluate(msg({ n: i32(2) }))).not.toBe(true);
    const due = compileSqlFilter('sys.ScheduledEnqueueTimeUtc < @at OR at < @at', { '@at': new Date('2026-01-02T00:00:00Z') });
    expect(due.evaluate(msg({ at: Typed.timestamp(Date.parse('2026-01-01T00:00:00Z')) }))).toBe(true);
  });

  it('refuses a filter or action that names a parameter it was not given', () => {
    const err = refusal(() => compileSqlFilter('size > @min', { '@max': 1 }));
    expect(err.message).toContain('@min');
    refusal(() => compileSqlFilter('size > @min'));
    refusal(() => compileSqlAction('SET tier = @tier'));
    refusal(() => compileSqlFilter('1=1', { 'bad name': 1 }));
  });

  it('binds action parameters separately from filter parameters, and the copy carries the value', () => {
    const rule = compileRule({
      name: 'tiered',
      filter: { type: 'sql', expression: 'size > @min', parameters: { '@min': 5 } },
      action: 'SET tier = @tier',
      actionParameters: { '@tier': 'big' },
    });
    const out = fanOut(new RuleSet([rule]), msg({ size: i32(6) }));
    expect(out.copies).toHaveLength(1);
    expect(out.copies[0]!.message.properties.get('tier')).toEqual(str('big'));
    expect(fanOut(new RuleSet([rule]), msg({ size: i32(5) })).copies).toHaveLength(0);
    // The action's parameters are not the filter's.
    refusal(() => compileRule({ name: 'x', filter: { type: 'sql', expression: 'a = @tier' }, action: 'SET tier = @tier', actionParameters: { '@tier': 'big' } }));
  });
});

describe('add-rule over $management with parameters', () => {
  it('takes a parameters map beside the expression of sql-filter and sql-rule-action', async () => {
    const { decodeRule } = await import('../../../src/amqp/rules-wire.js');
    const rule = decodeRule('r', {
      'sql-filter': { expression: 'n > @min', parameters: { '@min': 3 } },
      'sql-rule-action': { expression: 'SET t = @t', parameters: { '@t': 'x' } },
    });
    expect(rule).toEqual({ name: 'r', filter: { type: 'sql', expression: 'n > @min', parameters: { '@min': 3 } }, action: 'SET t = @t', actionParameters: { '@t': 'x' } });
    const compiled = compileRule(rule);
    expect(compiled.filter.evaluate(msg({ n: i32(4) }))).toBe(true);
    refusal(() => decodeRule('r', { 'sql-filter': { expression: 'n > @min', parameters: [1] } }));
  });
});
