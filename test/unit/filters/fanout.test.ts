// Fan-out and action cases (docs/filters.md, "Fan-out", "Actions") at the rule-engine level;
// the wire parts (getRules encoding, paging, 409 over AMQP) belong to the protocol tests.

import { describe, it, expect } from 'vitest';
import {
  compileRule,
  DEFAULT_RULE_NAME,
  fanOut,
  RuleSet,
  subscriptionRules,
  type FilterMessage,
  type RuleDescription,
} from '../../../src/filters/index.js';
import { i32, i64, msg, refusal, str } from './helpers.js';

const sql = (name: string, expression: string, action: string | null = null): RuleDescription => ({
  name,
  filter: { type: 'sql', expression },
  action,
});

const props = (m: FilterMessage): Record<string, unknown> => Object.fromEntries(m.properties);

describe('fan-out and actions at the rule-engine level', () => {
  it('a new subscription has $Default (true filter, no action) and gets one copy', () => {
    const rules = RuleSet.withDefault();
    expect(rules.list().map((r) => r.description)).toEqual([{ name: '$Default', filter: { type: 'true' }, action: null }]);
    const m = msg({ anything: 1 });
    const out = fanOut(rules, m);
    expect(out.copies).toEqual([{ message: m, ruleName: null }]);
    expect(out.deadLetter).toBeNull();
  });

  it('with $Default removed and no other rule, nothing is delivered', () => {
    const rules = RuleSet.withDefault();
    rules.remove(DEFAULT_RULE_NAME);
    expect(fanOut(rules, msg()).copies).toEqual([]);
  });

  it('matching action-less rules are OR-ed into one copy', () => {
    const rules = new RuleSet([sql('A', "color='red'"), sql('B', '1=1')]);
    expect(fanOut(rules, msg({ color: 'red' })).copies).toHaveLength(1);
  });

  it('three action-less + two action rules, all matching → three copies, action copies carry RuleName', () => {
    const rules = new RuleSet([
      sql('p1', '1=1'),
      sql('p2', "color = 'red'"),
      { name: 'p3', filter: { type: 'correlation', properties: { color: 'red' } }, action: null },
      sql('a1', '1=1', 'SET x = 1'),
      { name: 'a2', filter: { type: 'correlation', properties: { Color: 'red' } }, action: 'SET y = 2' },
    ]);
    const m = msg({ color: 'red' });
    const out = fanOut(rules, m);
    expect(out.copies.map((c) => c.ruleName)).toEqual([null, 'a1', 'a2']);
    expect(out.copies[0]!.message).toBe(m);
    expect(props(out.copies[0]!.message)).toEqual({ color: str('red') });
    expect(props(out.copies[1]!.message)).toEqual({ color: str('red'), x: { type: 'long', value: 1n }, RuleName: str('a1') });
    expect(props(out.copies[2]!.message)).toEqual({ color: str('red'), y: { type: 'long', value: 2n }, RuleName: str('a2') });
  });

  it('one rule with an action: red → one modified copy, blue → nothing', () => {
    const rules = new RuleSet([sql('r', "color='red'", 'SET a = 1')]);
    const red = fanOut(rules, msg({ color: 'red' }));
    expect(red.copies).toHaveLength(1);
    expect(props(red.copies[0]!.message).a).toEqual({ type: 'long', value: 1n });
    expect(fanOut(rules, msg({ color: 'blue' })).copies).toEqual([]);
  });

  it('an action rule and a plain rule → one untouched copy and one modified copy', () => {
    const rules = new RuleSet([sql('r1', '1=1', 'SET a = 1'), sql('r2', '1=1')]);
    const m = msg({ z: 'z' });
    const out = fanOut(rules, m);
    expect(out.copies.map((c) => c.ruleName)).toEqual([null, 'r1']);
    expect(props(out.copies[0]!.message)).toEqual({ z: str('z') });
    expect(props(out.copies[1]!.message)).toEqual({ z: str('z'), a: { type: 'long', value: 1n }, RuleName: str('r1') });
    expect(props(m)).toEqual({ z: str('z') }); // the input is not mutated
  });

  it('SET Priority overwrites the existing key `priority`, keeping its spelling', () => {
    const out = fanOut([compileRule(sql('r', '1=1', "SET Priority = 'high'"))], msg({ priority: 'low' }));
    const p = props(out.copies[0]!.message);
    expect(p.priority).toEqual(str('high'));
    expect('Priority' in p).toBe(false);
  });

  it('SET quantity = quantity / 2 makes an Int32 quantity an Int64 (the constant 2 is Int64; no narrowing on SET)', () => {
    const out = fanOut([compileRule(sql('r', '1=1', 'SET quantity = quantity / 2'))], msg({ quantity: i32(10) }));
    expect(props(out.copies[0]!.message).quantity).toEqual(i64(5));
  });

  it('several statements, separated by semicolons, applied in order', () => {
    const action = "SET quantity = quantity / 2; REMOVE priority;SET sys.CorrelationId = 'low';";
    const m = msg({ quantity: i32(10), priority: 'high' }, { correlationId: 'c' });
    const out = fanOut([compileRule(sql('r', '1=1', action))], m);
    const copy = out.copies[0]!.message;
    expect(props(copy)).toEqual({ quantity: i64(5), RuleName: str('r') });
    expect(copy.system.correlationId).toBe('low');
    expect(m.system.correlationId).toBe('c');
  });

  it('SET CorrelationId without sys. sets a user property; the AMQP correlation-id is kept', () => {
    const out = fanOut([compileRule(sql('r', '1=1', "Set CorrelationId = 'newValue'"))], msg({}, { correlationId: 'c' }));
    const copy = out.copies[0]!.message;
    expect(props(copy).CorrelationId).toEqual(str('newValue'));
    expect(copy.system.correlationId).toBe('c');
  });

  it('an action can give a session id to a message that has none (engine part)', () => {
    const out = fanOut([compileRule(sql('r', '1=1', 'SET sys.SessionId = newid()'))], msg());
    expect(out.copies[0]!.message.system.sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const plain = fanOut(RuleSet.withDefault(), msg());
    expect(plain.copies[0]!.message.system.sessionId ?? null).toBeNull();
  });

  it('SET x = missing + 1 stores null in x', () => {
    const out = fanOut([compileRule(sql('r', '1=1', 'SET x = missing + 1'))], msg());
    const copy = out.copies[0]!.message;
    expect(copy.properties.has('x')).toBe(true);
    expect(copy.properties.get('x')).toEqual({ type: 'null', value: null });
  });

  it('SET on a read-only system property is refused', () => {
    refusal(() => compileRule(sql('r', '1=1', 'SET sys.SequenceNumber = 1')));
  });

  it('a filter that throws: one DLQ report with DivideByZeroException, or nothing when the setting is off', () => {
    const rules = new RuleSet([sql('bad', 'q / 0 = 1'), sql('bad2', 'q % 0 = 1'), sql('ok', "q = 5")]);
    const m = msg({ q: i32(5) });
    const on = fanOut(rules, m);
    expect(on.deadLetter?.reason).toBe('DivideByZeroException');
    expect(on.deadLetter?.ruleName).toBe('bad');
    expect(on.deadLetter?.description).toContain("'bad'");
    expect(on.failures.map((f) => f.ruleName)).toEqual(['bad', 'bad2']);
    // Other rules are still evaluated normally.
    expect(on.copies).toEqual([{ message: m, ruleName: null }]);
    const off = fanOut(rules, m, { deadLetterOnFilterEvaluationExceptions: false });
    expect(off.deadLetter).toBeNull();
    expect(off.copies).toHaveLength(1);
    const onlyBad = fanOut(new RuleSet([sql('bad', 'q / 0 = 1')]), m, { deadLetterOnFilterEvaluationExceptions: false });
    expect(onlyBad.copies).toEqual([]);
  });

  it('F15b an action that fails at evaluation time is reported like a filter failure', () => {
    const out = fanOut(new RuleSet([sql('a', '1=1', "SET sys.TimeToLive = 'soon'")]), msg());
    expect(out.copies).toEqual([]);
    expect(out.deadLetter?.reason).toBe('InvalidCastException');
  });

  it('adding a rule twice (names ignore case) fails with entity-already-exists', () => {
    const rules = new RuleSet([], 'topic/Subscriptions/sub');
    rules.add(sql('r', '1=1'));
    const err = refusal(() => rules.add(sql('R', '1=0')), 'AlreadyExists');
    expect(err.message).toMatch(/The messaging entity '.*R' already exists./);
    expect(err.message).toBe("The messaging entity 'topic/Subscriptions/sub/Rules/R' already exists.");
    const missing = refusal(() => rules.remove('nope'), 'NotFound');
    expect(missing.message).toContain('could not be found');
  });

  it('rules are listed (and evaluated) in case-insensitive name order, $Default first', () => {
    const rules = RuleSet.withDefault();
    rules.add(sql('sqlRule', '1=1', 'SET s = 1'));
    rules.add({ name: 'correlationRule', filter: { type: 'correlation', to: 'x' }, action: 'SET c = 1' });
    rules.add(sql('Zeta', '1=1', 'SET z = 1'));
    rules.add(sql('alpha', '1=1', 'SET a = 1'));
    expect(rules.list().map((r) => r.name)).toEqual(['$Default', 'alpha', 'correlationRule', 'sqlRule', 'Zeta']);
    const out = fanOut(rules, msg({}, { to: 'x' }));
    expect(out.copies.map((c) => c.ruleName)).toEqual([null, 'alpha', 'correlationRule', 'sqlRule', 'Zeta']);
  });

  it('the filter and action text are kept byte for byte', () => {
    const rule = compileRule(sql('s', 'price > 10', "SET  x = 'y' ;"));
    expect(rule.description.filter).toEqual({ type: 'sql', expression: 'price > 10' });
    expect(rule.action?.expression).toBe("SET  x = 'y' ;");
  });
});

describe('fan-out: more cases', () => {
  it('every rule sees the message as sent, not another rule’s copy', () => {
    const rules = new RuleSet([sql('a', '1=1', "SET color = 'blue'"), sql('b', "color = 'red'", 'SET seen = 1')]);
    const out = fanOut(rules, msg({ color: 'red' }));
    expect(out.copies.map((c) => c.ruleName)).toEqual(['a', 'b']);
    expect(props(out.copies[1]!.message).color).toEqual(str('red'));
  });

  it('a false filter and UNKNOWN results never select', () => {
    const rules = new RuleSet([{ name: 'f', filter: { type: 'false' }, action: null }, sql('u', 'missing = 1')]);
    expect(fanOut(rules, msg()).copies).toEqual([]);
  });

  it('a plain array of rules is evaluated in name order too', () => {
    const out = fanOut([compileRule(sql('b', '1=1', 'SET b = 1')), compileRule(sql('a', '1=1', 'SET a = 1'))], msg());
    expect(out.copies.map((c) => c.ruleName)).toEqual(['a', 'b']);
  });

  it('config subscriptions without rules get $Default; with rules, exactly those', () => {
    expect(subscriptionRules([]).map((r) => r.name)).toEqual(['$Default']);
    const rules = subscriptionRules([
      { name: 'c', filter: { type: 'correlation', label: 'l', properties: { prop1: 'value1' } }, action: null },
      { name: 's', filter: { type: 'sql', expression: "sys.MessageId = '123456'" }, action: "SET sys.To = 'Entity'" },
    ]);
    const set = new RuleSet(rules);
    const out = fanOut(set, msg({ PROP1: 'value1' }, { label: 'l', messageId: '123456' }));
    expect(out.copies.map((c) => c.ruleName)).toEqual([null, 's']);
    expect(out.copies[1]!.message.system.to).toBe('Entity');
  });

  it('rule names: empty, too long and reserved characters are refused; 50 characters and $Default are fine', () => {
    refusal(() => compileRule(sql(' ', '1=1')));
    refusal(() => compileRule(sql('x'.repeat(51), '1=1')), 'ArgumentOutOfRange');
    for (const bad of ['a/b', 'a\\b', 'a?b', 'a#b', 'a*b', 'a@b']) refusal(() => compileRule(sql(bad, '1=1')));
    expect(compileRule(sql('x'.repeat(50), '1=1')).name).toHaveLength(50);
    expect(compileRule(sql('$Default', '1=0')).filter.evaluate(msg())).toBe(false);
  });

  it('$Default can be removed and added again', () => {
    const rules = RuleSet.withDefault();
    rules.remove('$default');
    expect(rules.size).toBe(0);
    rules.add({ name: '$Default', filter: { type: 'true' }, action: null });
    expect(rules.get('$DEFAULT')?.filter.kind).toBe('true');
  });
});
