// What the management plane reports of an entity: its description, its dates and its live counts (Service Bus's
// QueueRuntimeProperties, TopicRuntimeProperties, SubscriptionRuntimeProperties and CountDetails). Read-only: a
// view is built afresh from the registry for every answer.

import type { RuleDescription } from '../../filters/index.js';
import type { Entities, QueueEntry, SubscriptionEntry, TopicEntry } from './entities.js';
import type { QueueDescription, SubscriptionDescription, TopicDescription } from './entity-model.js';
import type { QueueState } from '../indexes/queue-state.js';
import { filterCounts } from './quotas.js';
import { transferCounts } from '../indexes/transfer-counts.js';

/** Live counts of a queue, as Service Bus's CountDetails reports them. */
export interface QueueCounts {
  /** Available and locked messages (Service Bus counts a locked message as active). */
  active: number;
  deadLetter: number;
  scheduled: number;
  /** Messages waiting for transfer to another entity (see transfer-counts.ts). */
  transfer: number;
  transferDeadLetter: number;
  /** Every message of the queue and its dead-letter queue (deferred ones too), as MessageCount. */
  total: number;
  /** Stored bytes of the queue and its dead-letter queue. */
  sizeInBytes: number;
}

/** A queue as the management API reports it. */
export interface QueueView {
  name: string;
  description: QueueDescription;
  createdAt: number;
  updatedAt: number;
  counts: QueueCounts;
  /** Last send, receive, settlement or browse (epoch ms); null or absent when never used. */
  accessedAt?: number | null;
}

/** A topic as the management API reports it. */
export interface TopicView {
  name: string;
  description: TopicDescription;
  createdAt: number;
  updatedAt: number;
  subscriptionCount: number;
  /**
   * Rules across its subscriptions by filter kind (TopicRuntimeProperties.SqlFilterCount / CorrelationFilterCount,
   * api-version 2024-05): true and false filters are SQL filters (`1=1`, `1=0`), as the SDKs model them.
   */
  sqlFilterCount?: number;
  correlationFilterCount?: number;
  /** Stored bytes of all its subscriptions. */
  sizeInBytes: number;
  /** Scheduled messages across its subscriptions. */
  scheduled: number;
  /** Last activity on it or its subscriptions (epoch ms); null or absent when never used. */
  accessedAt?: number | null;
}

/** A subscription as the management API reports it. */
export interface SubscriptionView {
  topic: string;
  name: string;
  description: SubscriptionDescription;
  createdAt: number;
  updatedAt: number;
  counts: QueueCounts;
  /** Last receive, settlement, browse or new rule (epoch ms); null or absent when never used. */
  accessedAt?: number | null;
}

/** A rule as the management API reports it. */
export interface RuleView {
  topic: string;
  subscription: string;
  description: RuleDescription;
  /** The subscription's creation time (rules carry no time of their own here). */
  createdAt: number;
}

/** The live counts of a queue or subscription as the management plane reports them (CountDetails, SizeInBytes). */
export function queueCounts(q: QueueState): QueueCounts {
  const c = q.counts();
  const dlq = q.dlq;
  const t = transferCounts(q);
  return {
    active: c.active + c.locked,
    deadLetter: dlq?.size ?? 0,
    scheduled: c.scheduled,
    transfer: t.transfer,
    transferDeadLetter: t.transferDeadLetter,
    total: q.size + (dlq?.size ?? 0) + t.transferDeadLetter,
    sizeInBytes: q.bytes + (dlq?.bytes ?? 0),
  };
}

/** A queue as the management plane reports it: its description, dates and live counts. */
export function queueView(e: QueueEntry): QueueView {
  return {
    name: e.q.path,
    description: e.description,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    counts: queueCounts(e.q),
  };
}

/** A topic as the management plane reports it: its description, dates, subscriptions and what they hold. */
export function topicView(entities: Entities, e: TopicEntry): TopicView {
  const subs = entities.subscriptionsOf(e.t);
  let size = 0;
  let scheduled = 0;
  for (const s of subs) {
    size += s.q.bytes + (s.q.dlq?.bytes ?? 0);
    scheduled += s.q.counts().scheduled;
  }
  const { sql, correlation } = filterCounts(e.t);
  return {
    name: e.t.path,
    description: e.description,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    subscriptionCount: subs.length,
    sqlFilterCount: sql,
    correlationFilterCount: correlation,
    sizeInBytes: size,
    scheduled,
  };
}

/** A subscription as the management plane reports it: its description, dates and live counts. */
export function subscriptionView(e: SubscriptionEntry): SubscriptionView {
  return {
    topic: e.topic.path,
    name: e.name,
    description: e.description,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    counts: queueCounts(e.q),
  };
}

/** A rule of a subscription as the management plane reports it. */
export function ruleView(e: SubscriptionEntry, description: RuleDescription): RuleView {
  return { topic: e.topic.path, subscription: e.name, description, createdAt: e.createdAt };
}
