// Service Bus's per-topic quotas (quotas doc: 2,000 subscriptions, 2,000 SQL filters and 100,000 correlation
// filters per topic; issue 38 item 4): a create or change that would pass one is refused with QuotaExceeded and
// changes nothing, whichever path asked (add-rule, a rule update, a subscription with its default rule).

import { describe, expect, it } from 'vitest';
import type { RuleDescription } from '../../src/filters/index.js';
import { MAX_CORRELATION_FILTERS_PER_TOPIC, MAX_SQL_FILTERS_PER_TOPIC } from '../../src/filters/rules.js';
import { MAX_SUBSCRIPTIONS_PER_TOPIC } from '../../src/broker/runtime/limits.js';
import { ruleSetOf } from '../../src/broker/catalog/rule-store.js';
import { Harness, codeOf } from './helpers.js';

const sql = (name: string): RuleDescription => ({ name, filter: { type: 'sql', expression: `n = '${name}'` }, action: null });
const corr = (name: string): RuleDescription => ({ name, filter: { type: 'correlation', label: name }, action: null });

async function withTopic(): Promise<Harness> {
  const h = await Harness.start();
  await h.broker.createTopic('t', {});
  return h;
}

describe('per-topic quotas', () => {
  it(`refuses subscription ${MAX_SUBSCRIPTIONS_PER_TOPIC + 1} of a topic with QuotaExceeded and creates nothing`, async () => {
    const h = await withTopic();
    for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_TOPIC; i++) await h.broker.createSubscription('t', `s${i}`, {}, corr('only'));
    expect(await codeOf(h.broker.createSubscription('t', 'one-more', {}, corr('only')))).toBe('QuotaExceeded');
    expect(h.broker.getSubscription('t', 'one-more')).toBeUndefined();
    // Another topic has its own quota.
    await h.broker.createTopic('u', {});
    await h.broker.createSubscription('u', 's0', {});
  });

  it(`counts SQL filters (true and false ones too) across the topic, up to ${MAX_SQL_FILTERS_PER_TOPIC}`, async () => {
    const h = await withTopic();
    // 20 subscriptions, each with $Default (a true filter, a SQL filter) and 99 SQL rules: 2,000 in all.
    for (let s = 0; s < 20; s++) {
      await h.broker.createSubscription('t', `s${s}`, {});
      for (let r = 0; r < 99; r++) await h.broker.addRule(`t/Subscriptions/s${s}`, sql(`r${r}`));
    }
    expect(await codeOf(h.broker.addRule('t/Subscriptions/s0', sql('over')))).toBe('QuotaExceeded');
    expect(await codeOf(h.broker.addRule('t/Subscriptions/s0', { name: 'f', filter: { type: 'false' }, action: null }))).toBe('QuotaExceeded');
    expect(h.broker.listRules('t/Subscriptions/s0')).toHaveLength(100);
    // A new subscription would bring its $Default: refused; with a correlation default rule it fits.
    expect(await codeOf(h.broker.createSubscription('t', 'extra', {}))).toBe('QuotaExceeded');
    await h.broker.createSubscription('t', 'extra', {}, corr('c'));
    await h.broker.addRule('t/Subscriptions/s0', corr('c0'));
    // Changing a correlation rule into a SQL one counts too; freeing one makes room again.
    expect(await codeOf(h.broker.updateRule('t', 's0', sql('c0')))).toBe('QuotaExceeded');
    expect(h.broker.getRule('t', 's0', 'c0')?.description.filter.type).toBe('correlation');
    await h.broker.removeRule('t/Subscriptions/s0', 'r0');
    await h.broker.addRule('t/Subscriptions/s0', sql('fits'));
  });

  it(`refuses correlation filter ${MAX_CORRELATION_FILTERS_PER_TOPIC + 1} of a topic`, async () => {
    const h = await withTopic();
    // Filled in memory (the store write per rule is not what is tested): 50 subscriptions of 2,000 each.
    for (let s = 0; s < 50; s++) {
      await h.broker.createSubscription('t', `s${s}`, {}, corr('c'));
      const set = ruleSetOf(h.ctx.entities.resolve(`t/Subscriptions/s${s}`));
      for (let r = 1; r < MAX_CORRELATION_FILTERS_PER_TOPIC / 50; r++) set.add(corr(`c${r}`));
    }
    expect(await codeOf(h.broker.addRule('t/Subscriptions/s0', corr('over')))).toBe('QuotaExceeded');
    await h.broker.addRule('t/Subscriptions/s0', sql('sql-still-fits'));
  });
});
