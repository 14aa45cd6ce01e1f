// Topics and subscriptions created, changed and deleted at run time (the Service Bus management plane), and a
// subscription's rules as the management plane sees them. Same rules as queues (entity-admin.ts): the same
// registry as Config.json's entities, one atomic store write per change, updates applied in place to the live
// settings, deletes that take every message (of every subscription, for a topic) in the same write as the
// definition. A new subscription gets the `$Default` rule (1=1) unless the request names its own default rule;
// rules live in the one rule store the `$management` add-rule/remove-rule operations use.

import type { RuleDescription } from '../../filters/index.js';
import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from '../runtime/context.js';
import { applyUpdate, clearOps, endReceivers, queueCounts, type QueueCounts } from './entity-admin.js';
import {
  entityKey,
  type StoredSubscription,
  type StoredTopic,
  type SubscriptionEntry,
  type TopicEntry,
} from './entities.js';
import {
  applyPatch,
  checkEntityName,
  checkSubscriptionDescription,
  checkSubscriptionName,
  checkTopicDescription,
  serviceSubscriptionDefaults,
  serviceTopicDefaults,
  type SubscriptionDescription,
  type SubscriptionPatch,
  type TopicDescription,
  type TopicPatch,
  partitionedSizeBytes,
} from './entity-model.js';
import { BrokerError, entityAlreadyExists, entityNotFound } from '../errors.js';
import type { LockManager } from '../messaging/locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { rulesOp, rulesPlan, ruleSetOf } from './rule-store.js';
import { settleRules } from './sas-rules.js';

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

/** The management plane's topic, subscription and rule operations. */
export class TopicAdmin {
  private readonly creating = new Set<string>();

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** The topic named `name`, or undefined. */
  getTopic(name: string): TopicView | undefined {
    const e = this.ctx.entities.topicEntry(name);
    return e && this.topicView(e);
  }

  /** Topics ordered by name, paged. */
  listTopics(skip: number, top: number): TopicView[] {
    return this.ctx.entities.topicEntriesSorted().slice(skip, skip + top).map((e) => this.topicView(e));
  }

  /** Creates a topic with the service defaults for what `patch` leaves out; a taken name fails with 409. */
  async createTopic(name: string, patch: TopicPatch): Promise<TopicView> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    checkEntityName(name);
    const now = clock.now();
    const description = settleTopic(serviceTopicDefaults(), patch, true, now);
    checkTopicDescription(description);
    const key = entityKey(name);
    if (entities.exists(name) || this.creating.has(key)) throw entityAlreadyExists(name);
    this.creating.add(key);
    let entry: TopicEntry;
    try {
      entry = await entities.addTopic(name, description, { createdAt: now, updatedAt: now, origin: 'runtime', configHash: null });
    } finally {
      this.creating.delete(key);
    }
    // The claim is the registration (as for a queue, entity-admin.ts): removed again if the record is not durable.
    return journal.run({
      ops: [{ op: 'clear', qid: entry.t.id }, topicRecordOp(entry)],
      applied: () => this.topicView(entry),
      undo: () => void entities.removeTopic(entry),
    });
  }

  /** Changes a topic; absent properties keep their values. */
  async updateTopic(name: string, patch: TopicPatch): Promise<TopicView> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    const entry = entities.topicEntry(name);
    if (!entry) throw entityNotFound(name);
    const updatedAt = clock.now();
    const next = settleTopic(entry.description, patch, false, updatedAt);
    checkTopicDescription(next);
    // Nothing is claimed: the new settings apply once the record is durable, so a failed update changes nothing.
    return journal.run({
      ops: [topicRecordOp({ ...entry, description: next, updatedAt })],
      applied: () => {
        Object.assign(entry.t.settings, {
          defaultMessageTtlMs: next.defaultMessageTtlMs,
          requiresDuplicateDetection: next.requiresDuplicateDetection,
          duplicateDetectionWindowMs: next.duplicateDetectionWindowMs,
          maxSizeBytes: next.maxSizeBytes,
        });
        entry.t.status = next.status;
        entry.description = next;
        entry.updatedAt = updatedAt;
        return this.topicView(entry);
      },
    });
  }

  /** Deletes a topic with every subscription and message, in one store write. */
  async deleteTopic(name: string): Promise<void> {
    const { entities, journal } = this.ctx;
    journal.assertRunning();
    const entry = entities.topicEntry(name);
    if (!entry) throw entityNotFound(name);
    const subs = entities.subscriptionsOf(entry.t);
    const undo = entities.removeTopic(entry);
    const ops: StoreOp[] = [{ op: 'clear', qid: entry.t.id }, { op: 'entity', path: entry.t.path, record: null }];
    for (const s of subs) ops.push(...clearOps(s.q), { op: 'entity', path: s.q.path, record: null });
    // The claim is the topic's removal from the registry (sends find no entity); back in it if not durable.
    await journal.run({ ops, applied: () => subs.forEach((s) => this.endReceivers(s.q)), undo });
  }

  /** The subscription `name` of `topic`, or undefined. */
  getSubscription(topic: string, name: string): SubscriptionView | undefined {
    const e = this.ctx.entities.subscriptionEntry(topic, name);
    return e && subscriptionView(e);
  }

  /** A topic's subscriptions ordered by name, paged; a missing topic fails with not-found. */
  listSubscriptions(topic: string, skip: number, top: number): SubscriptionView[] {
    const t = this.ctx.entities.topicEntry(topic);
    if (!t) throw entityNotFound(topic);
    return this.ctx.entities.subscriptionsOf(t.t).slice(skip, skip + top).map(subscriptionView);
  }

  /**
   * Creates a subscription with the service defaults for what `patch` leaves out, and `defaultRule` (or `$Default`,
   * 1=1) as its only rule; a missing topic fails with 404, a taken name with 409.
   */
  async createSubscription(topic: string, name: string, patch: SubscriptionPatch, defaultRule?: RuleDescription): Promise<SubscriptionView> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    const t = entities.topicEntry(topic);
    if (!t) throw entityNotFound(topic);
    checkSubscriptionName(name);
    const description = applyPatch(serviceSubscriptionDefaults(), patch);
    checkSubscriptionDescription(description);
    this.checkForwarding(`${t.t.path}/Subscriptions/${name}`, description);
    const path = `${t.t.path}/Subscriptions/${name}`;
    const key = entityKey(path);
    if (entities.subscriptionEntry(topic, name) || this.creating.has(key)) throw entityAlreadyExists(path);
    const now = clock.now();
    this.creating.add(key);
    let entry: SubscriptionEntry;
    try {
      entry = await entities.addSubscription(t.t, name, description, { createdAt: now, updatedAt: now, origin: 'runtime', configHash: null });
    } finally {
      this.creating.delete(key);
    }
    const undo = (): void => void entities.removeSubscription(entry);
    try {
      if (defaultRule) {
        const set = ruleSetOf(entry.q);
        set.remove('$Default');
        set.add(defaultRule);
      }
    } catch (err) {
      undo();
      throw err;
    }
    // The claim is the registration, with its rules: removed again if its record is not durable.
    return journal.run({
      ops: [...clearOps(entry.q), subscriptionRecordOp(entry), rulesOp(entry.q)],
      applied: () => subscriptionView(entry),
      undo,
    });
  }

  /** Changes a subscription; absent properties keep their values; RequiresSession cannot change. */
  async updateSubscription(topic: string, name: string, patch: SubscriptionPatch): Promise<SubscriptionView> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    const entry = entities.subscriptionEntry(topic, name);
    if (!entry) throw entityNotFound(`${topic}/Subscriptions/${name}`);
    const next = applyPatch(entry.description, patch);
    checkSubscriptionDescription(next);
    this.checkForwarding(entry.q.path, next);
    if (next.settings.requiresSession !== entry.description.settings.requiresSession) {
      throw new BrokerError('InvalidOperation', `RequiresSession of '${entry.q.path}' cannot be changed after it is created.`);
    }
    const updatedAt = clock.now();
    // Nothing is claimed: the new settings apply once the record is durable, so a failed update changes nothing.
    return journal.run({
      ops: [subscriptionRecordOp({ ...entry, description: next, updatedAt })],
      applied: () => {
        applyUpdate(entry, next, updatedAt, this.pump);
        return subscriptionView(entry);
      },
    });
  }

  /** Deletes a subscription with its messages and rules in one write; its receivers end with not-found. */
  async deleteSubscription(topic: string, name: string): Promise<void> {
    const { entities, journal } = this.ctx;
    journal.assertRunning();
    const entry = entities.subscriptionEntry(topic, name);
    if (!entry) throw entityNotFound(`${topic}/Subscriptions/${name}`);
    // The claim is the removal from the registry; back in it if the delete is not durable.
    const undo = entities.removeSubscription(entry);
    await journal.run({
      ops: [...clearOps(entry.q), { op: 'entity', path: entry.q.path, record: null }],
      applied: () => this.endReceivers(entry.q),
      undo,
    });
  }

  /** A subscription's rules, sorted by name; a missing subscription fails with not-found. */
  listRules(topic: string, subscription: string): RuleView[] {
    const e = this.subscriptionOrThrow(topic, subscription);
    return ruleSetOf(e.q)
      .list()
      .map((r) => ({ topic: e.topic.path, subscription: e.name, description: r.description, createdAt: e.createdAt }));
  }

  /** One rule, or undefined (a missing subscription fails with not-found). */
  getRule(topic: string, subscription: string, name: string): RuleView | undefined {
    return this.listRules(topic, subscription).find((r) => r.description.name.toLowerCase() === name.toLowerCase());
  }

  /** Replaces a rule's filter and action durably; a missing rule fails with not-found. */
  async updateRule(topic: string, subscription: string, rule: RuleDescription): Promise<RuleView> {
    const e = this.subscriptionOrThrow(topic, subscription);
    this.ctx.journal.assertRunning();
    const set = ruleSetOf(e.q);
    const old = set.get(rule.name);
    if (!old) throw entityNotFound(`${e.q.path}/Rules/${rule.name}`);
    set.remove(rule.name);
    let added;
    try {
      added = set.add(rule);
    } catch (err) {
      set.add(old);
      throw err;
    }
    const back = (): void => {
      if (set.get(rule.name) !== added) return; // changed again meanwhile
      set.remove(rule.name);
      set.add(old);
    };
    await this.ctx.journal.run(rulesPlan(e.q, back));
    return { topic: e.topic.path, subscription: e.name, description: rule, createdAt: e.createdAt };
  }

  private subscriptionOrThrow(topic: string, subscription: string): SubscriptionEntry {
    const e = this.ctx.entities.subscriptionEntry(topic, subscription);
    if (!e) throw entityNotFound(`${topic}/Subscriptions/${subscription}`);
    return e;
  }

  private endReceivers(sub: QueueState): void {
    for (const q of [sub, sub.dlq, sub.tdlq]) if (q) endReceivers(this.locks, q);
  }

  private checkForwarding(path: string, d: SubscriptionDescription): void {
    for (const [prop, target] of [
      ['ForwardTo', d.settings.forwardTo],
      ['ForwardDeadLetteredMessagesTo', d.settings.forwardDeadLetteredMessagesTo],
    ] as const) {
      if (target === null) continue;
      try {
        this.ctx.entities.forSend(target);
      } catch {
        throw new BrokerError('InvalidOperation', `${prop} of '${path}' names '${target}', which is not a queue or topic.`);
      }
    }
  }

  private topicView(e: TopicEntry): TopicView {
    const subs = this.ctx.entities.subscriptionsOf(e.t);
    let size = 0;
    let scheduled = 0;
    let sql = 0;
    let correlation = 0;
    for (const s of subs) {
      size += s.q.bytes + (s.q.dlq?.bytes ?? 0);
      scheduled += s.q.counts().scheduled;
      for (const r of ruleSetOf(s.q).list()) {
        if (r.description.filter.type === 'correlation') correlation++;
        else sql++;
      }
    }
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
}

// A topic's description after a create (`created`) or update, as settle() in entity-admin.ts does for queues.
function settleTopic(base: TopicDescription, patch: TopicPatch, created: boolean, now: number): TopicDescription {
  const { authorizationRules, ...rest } = patch;
  const next = applyPatch(base, rest);
  if (authorizationRules) next.authorizationRules = settleRules(authorizationRules, base.authorizationRules ?? [], now);
  if (next.enablePartitioning && (created || patch.maxSizeBytes !== undefined || !base.enablePartitioning)) {
    next.maxSizeBytes = partitionedSizeBytes(next.maxSizeBytes);
  }
  return next;
}

function topicRecordOp(e: TopicEntry): StoreOp {
  const stored: StoredTopic = { description: e.description, configHash: e.configHash };
  return {
    op: 'entity',
    path: e.t.path,
    record: { path: e.t.path, kind: 'topic', description: stored, createdAt: e.createdAt, updatedAt: e.updatedAt },
  };
}

function subscriptionRecordOp(e: SubscriptionEntry): StoreOp {
  const stored: StoredSubscription = { topic: e.topic.path, name: e.name, description: e.description, configHash: e.configHash };
  return {
    op: 'entity',
    path: e.q.path,
    record: { path: e.q.path, kind: 'subscription', description: stored, createdAt: e.createdAt, updatedAt: e.updatedAt },
  };
}

function subscriptionView(e: SubscriptionEntry): SubscriptionView {
  return {
    topic: e.topic.path,
    name: e.name,
    description: e.description,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    counts: queueCounts(e.q),
  };
}
