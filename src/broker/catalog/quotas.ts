// Service Bus's per-topic quotas (quotas doc, "Messaging quotas"): 2,000 subscriptions, 2,000 SQL filters and
// 100,000 correlation filters per topic; a request that would go beyond one is rejected with QuotaExceeded
// (amqp:resource-limit-exceeded on `$management`, HTTP 403 on the management plane). Only a change that adds to a
// count is refused, so a topic over a quota (a Config.json file written for a larger one) can still shed rules.

import {
  isCorrelation,
  MAX_CORRELATION_FILTERS_PER_TOPIC,
  MAX_SQL_FILTERS_PER_TOPIC,
  type RuleFilterDescription,
} from '../../filters/index.js';
import { topicQuotaExceeded } from '../errors.js';
import type { QueueState } from '../indexes/queue-state.js';
import type { TopicState } from '../indexes/topic-state.js';
import { MAX_SUBSCRIPTIONS_PER_TOPIC } from '../runtime/limits.js';
import type { Entities } from './entities.js';
import { ruleSetOf } from './rule-store.js';

/** A topic's rules across its subscriptions by filter kind (true and false filters are SQL filters). */
export function filterCounts(t: TopicState): { sql: number; correlation: number } {
  let sql = 0;
  let correlation = 0;
  for (const q of t.subscriptions) {
    const set = ruleSetOf(q);
    sql += set.sqlCount;
    correlation += set.correlationCount;
  }
  return { sql, correlation };
}

/** The topic a subscription belongs to (its path is `<topic>/Subscriptions/<name>`). */
export function topicOf(entities: Entities, sub: QueueState): TopicState | undefined {
  const cut = sub.path.lastIndexOf('/Subscriptions/');
  return cut > 0 ? entities.topicEntry(sub.path.slice(0, cut))?.t : undefined;
}

/** Refuses a rule change (filters `adding` in, `removing` out) that would take the topic past a filter quota. */
export function checkFilterQuota(t: TopicState, adding: readonly RuleFilterDescription[], removing: readonly RuleFilterDescription[] = []): void {
  let sql = 0;
  let correlation = 0;
  for (const f of adding) if (isCorrelation(f)) correlation++;
  else sql++;
  for (const f of removing) if (isCorrelation(f)) correlation--;
  else sql--;
  if (sql <= 0 && correlation <= 0) return;
  const now = filterCounts(t);
  if (sql > 0 && now.sql + sql > MAX_SQL_FILTERS_PER_TOPIC) throw topicQuotaExceeded('SQL filters', MAX_SQL_FILTERS_PER_TOPIC, t.path);
  if (correlation > 0 && now.correlation + correlation > MAX_CORRELATION_FILTERS_PER_TOPIC) {
    throw topicQuotaExceeded('correlation filters', MAX_CORRELATION_FILTERS_PER_TOPIC, t.path);
  }
}

/**
 * Refuses a subscription just registered on `t` (counted in it, with its rules) when the topic is now past a quota;
 * the create skeleton then undoes the registration. Checked after the registration, which may wait, so that two
 * concurrent creates cannot both pass a count taken before either joined.
 */
export function checkNewSubscription(t: TopicState, sub: QueueState): void {
  if (t.subscriptions.length > MAX_SUBSCRIPTIONS_PER_TOPIC) throw topicQuotaExceeded('subscriptions', MAX_SUBSCRIPTIONS_PER_TOPIC, t.path);
  const set = ruleSetOf(sub);
  const now = filterCounts(t);
  if (set.sqlCount > 0 && now.sql > MAX_SQL_FILTERS_PER_TOPIC) throw topicQuotaExceeded('SQL filters', MAX_SQL_FILTERS_PER_TOPIC, t.path);
  if (set.correlationCount > 0 && now.correlation > MAX_CORRELATION_FILTERS_PER_TOPIC) {
    throw topicQuotaExceeded('correlation filters', MAX_CORRELATION_FILTERS_PER_TOPIC, t.path);
  }
}
