// Queues, topics and subscriptions created, changed and deleted at run time (the Service Bus management plane), and
// a subscription's rules as that plane sees them. They are the same entities as Config.json's: one registry, the same
// send and receive paths. One skeleton serves every kind (entity-kinds.ts holds what differs):
//   create: name check, description and its checks, the in-flight guard (a concurrent create of a name taken or being
//           taken answers 409, as Service Bus does), the registration (the claim: the entity exists for routing at
//           once), one store write of its record, the view once durable, the registration undone if it is not;
//   update: nothing is claimed; the new settings apply in place only once the record is durable;
//   delete: out of the registry first (a send routed after it finds no entity, so nothing lands behind the clear),
//           its messages and whatever it cascades to cleared in the same write as the record, its receivers ended
//           once durable, back in the registry if not.
// A crash therefore leaves the old entity or the new one, never half of each.

import type { RuleDescription } from '../../filters/index.js';
import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from '../runtime/context.js';
import { entityKey, type EntryInfo, type SubscriptionEntry } from './entities.js';
import { checkEntityName, checkSubscriptionName, type QueuePatch, type SubscriptionPatch, type TopicPatch } from './entity-model.js';
import { QUEUE, SUBSCRIPTION, TOPIC, type CatalogEntry, type EntityKind } from './entity-kinds.js';
import { entityAlreadyExists, entityNotFound } from '../errors.js';
import type { LockManager } from '../messaging/locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { rulesPlan, ruleSetOf } from './rule-store.js';
import { checkFilterQuota, checkNewSubscription } from './quotas.js';
import { ruleView, type QueueView, type RuleView, type SubscriptionView, type TopicView } from './views.js';

/** Where a create puts a new entity: its path, whether the name is taken, and how it joins the registry. */
interface Placement<E, D> {
  path: string;
  taken(): boolean;
  register(d: D, info: EntryInfo): Promise<E>;
  /** Runs after the registration, before the write (a subscription's own default rule); a throw undoes the create. */
  prepare?(e: E): void;
}

/** The management plane's queue, topic, subscription and rule operations, over one create/update/delete skeleton. */
export class Catalogue {
  /** Paths being created (entity keys), whatever the kind: two concurrent creates of one name cannot both pass. */
  private readonly creating = new Set<string>();

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** The queue named `name`, or undefined when there is none. */
  getQueue(name: string): QueueView | undefined {
    const e = this.ctx.entities.queueEntry(name);
    return e && QUEUE.view(this.ctx.entities, e);
  }

  /** Queues ordered by name, `skip` then at most `top` of them. */
  listQueues(skip: number, top: number): QueueView[] {
    return this.ctx.entities.queueEntriesSorted().slice(skip, skip + top).map((e) => QUEUE.view(this.ctx.entities, e));
  }

  /** Creates a queue with the service defaults for whatever `patch` leaves out; a taken name fails with 409. */
  createQueue(name: string, patch: QueuePatch): Promise<QueueView> {
    const { entities } = this.ctx;
    return this.create(QUEUE, patch, () => {
      checkEntityName(name);
      return { path: name, taken: () => entities.exists(name), register: (d, info) => entities.addQueue(name, d, info) };
    });
  }

  /** Changes a queue; absent properties keep their values. RequiresSession cannot change (as in Service Bus). */
  updateQueue(name: string, patch: QueuePatch): Promise<QueueView> {
    return this.update(QUEUE, () => this.ctx.entities.queueEntry(name), name, patch);
  }

  /**
   * Deletes a queue and its dead-letter queue with every message, in one store write. Its receivers are detached
   * with not-found, locks on its messages end, and later sends find no entity. A Config.json queue comes back at
   * the next start, as the file still declares it.
   */
  deleteQueue(name: string): Promise<void> {
    return this.delete(QUEUE, () => this.ctx.entities.queueEntry(name), name);
  }

  /** The topic named `name`, or undefined. */
  getTopic(name: string): TopicView | undefined {
    const e = this.ctx.entities.topicEntry(name);
    return e && TOPIC.view(this.ctx.entities, e);
  }

  /** Topics ordered by name, paged. */
  listTopics(skip: number, top: number): TopicView[] {
    return this.ctx.entities.topicEntriesSorted().slice(skip, skip + top).map((e) => TOPIC.view(this.ctx.entities, e));
  }

  /** Creates a topic with the service defaults for what `patch` leaves out; a taken name fails with 409. */
  createTopic(name: string, patch: TopicPatch): Promise<TopicView> {
    const { entities } = this.ctx;
    return this.create(TOPIC, patch, () => {
      checkEntityName(name);
      return { path: name, taken: () => entities.exists(name), register: (d, info) => entities.addTopic(name, d, info) };
    });
  }

  /** Changes a topic; absent properties keep their values. */
  updateTopic(name: string, patch: TopicPatch): Promise<TopicView> {
    return this.update(TOPIC, () => this.ctx.entities.topicEntry(name), name, patch);
  }

  /** Deletes a topic with every subscription and message, in one store write. */
  deleteTopic(name: string): Promise<void> {
    return this.delete(TOPIC, () => this.ctx.entities.topicEntry(name), name);
  }

  /** The subscription `name` of `topic`, or undefined. */
  getSubscription(topic: string, name: string): SubscriptionView | undefined {
    const e = this.ctx.entities.subscriptionEntry(topic, name);
    return e && SUBSCRIPTION.view(this.ctx.entities, e);
  }

  /** A topic's subscriptions ordered by name, paged; a missing topic fails with not-found. */
  listSubscriptions(topic: string, skip: number, top: number): SubscriptionView[] {
    const t = this.ctx.entities.topicEntry(topic);
    if (!t) throw entityNotFound(topic);
    return this.ctx.entities.subscriptionsOf(t.t).slice(skip, skip + top).map((e) => SUBSCRIPTION.view(this.ctx.entities, e));
  }

  /**
   * Creates a subscription with the service defaults for what `patch` leaves out, and `defaultRule` (or `$Default`,
   * 1=1) as its only rule; a missing topic fails with 404, a taken name with 409, one past the topic's quotas
   * (subscriptions, or the filter its rule adds) with QuotaExceeded.
   */
  createSubscription(topic: string, name: string, patch: SubscriptionPatch, defaultRule?: RuleDescription): Promise<SubscriptionView> {
    const { entities } = this.ctx;
    return this.create(SUBSCRIPTION, patch, () => {
      const t = entities.topicEntry(topic);
      if (!t) throw entityNotFound(topic);
      checkSubscriptionName(name);
      return {
        path: `${t.t.path}/Subscriptions/${name}`,
        taken: () => entities.subscriptionEntry(topic, name) !== undefined,
        register: (d, info) => entities.addSubscription(t.t, name, d, info),
        // The rules are part of the claim: they join the registration and its one write. The topic's quotas are
        // checked with the subscription counted in them (quotas.ts), and a refusal undoes the registration.
        prepare: (e) => {
          if (defaultRule) replaceDefaultRule(e, defaultRule);
          checkNewSubscription(e.topic, e.q);
        },
      };
    });
  }

  /** Changes a subscription; absent properties keep their values; RequiresSession cannot change. */
  updateSubscription(topic: string, name: string, patch: SubscriptionPatch): Promise<SubscriptionView> {
    return this.update(SUBSCRIPTION, () => this.ctx.entities.subscriptionEntry(topic, name), `${topic}/Subscriptions/${name}`, patch);
  }

  /** Deletes a subscription with its messages and rules in one write; its receivers end with not-found. */
  deleteSubscription(topic: string, name: string): Promise<void> {
    return this.delete(SUBSCRIPTION, () => this.ctx.entities.subscriptionEntry(topic, name), `${topic}/Subscriptions/${name}`);
  }

  /** A subscription's rules, sorted by name; a missing subscription fails with not-found. */
  listRules(topic: string, subscription: string): RuleView[] {
    const e = this.subscriptionOrThrow(topic, subscription);
    return ruleSetOf(e.q)
      .list()
      .map((r) => ruleView(e, r.description));
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
    checkFilterQuota(e.topic, [rule.filter], [old.description.filter]);
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
    return ruleView(e, rule);
  }

  /** The create skeleton; `place` checks the name and says where the entity goes (it may throw). */
  private async create<E extends CatalogEntry<D>, D, P, V>(kind: EntityKind<E, D, P, V>, patch: P, place: () => Placement<E, D>): Promise<V> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    const at = place();
    const now = clock.now();
    const description = kind.settle(kind.defaults(), patch, true, now);
    kind.check(entities, at.path, description, null);
    const key = entityKey(at.path);
    if (at.taken() || this.creating.has(key)) throw entityAlreadyExists(at.path);
    this.creating.add(key);
    let entry: E;
    try {
      entry = await at.register(description, { createdAt: now, updatedAt: now, origin: 'runtime', configHash: null });
    } finally {
      this.creating.delete(key);
    }
    const undo = (): void => void kind.unregister(entities, entry);
    try {
      at.prepare?.(entry);
    } catch (err) {
      undo();
      throw err;
    }
    // A name used before keeps its store id; whatever an earlier entity of that name left is cleared with it.
    const ops: StoreOp[] = [...clears(kind.parts(entities, entry)[0]!.ids), kind.record(entry), ...(kind.createOps?.(entry) ?? [])];
    return journal.run({
      ops,
      applied: () => {
        kind.durable?.(entities, entry, true);
        return kind.view(entities, entry);
      },
      undo,
    });
  }

  /** The update skeleton: the new description checked, stored, and applied to the live entity once durable. */
  private async update<E extends CatalogEntry<D>, D, P, V>(kind: EntityKind<E, D, P, V>, find: () => E | undefined, missing: string, patch: P): Promise<V> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    const entry = find();
    if (!entry) throw entityNotFound(missing);
    const updatedAt = clock.now();
    const next = kind.settle(entry.description, patch, false, updatedAt);
    kind.check(entities, kind.path(entry), next, entry.description);
    // Nothing is claimed: a failed update changes nothing.
    return journal.run({
      ops: [kind.record({ ...entry, description: next, updatedAt })],
      applied: () => {
        kind.apply(entry, next, updatedAt, this.pump);
        return kind.view(entities, entry);
      },
    });
  }

  /** The delete skeleton: unregistered first, everything it holds cleared with its record, receivers ended. */
  private async delete<E extends CatalogEntry<D>, D, P, V>(kind: EntityKind<E, D, P, V>, find: () => E | undefined, missing: string): Promise<void> {
    const { entities, journal } = this.ctx;
    journal.assertRunning();
    const entry = find();
    if (!entry) throw entityNotFound(missing);
    const parts = kind.parts(entities, entry);
    const undo = kind.unregister(entities, entry);
    await journal.run({
      ops: parts.flatMap((p): StoreOp[] => [...clears(p.ids), { op: 'entity', path: p.path, record: null }]),
      applied: () => {
        kind.durable?.(entities, entry, false);
        for (const p of parts) for (const q of p.queues) this.endReceivers(q);
      },
      undo,
    });
  }

  private subscriptionOrThrow(topic: string, subscription: string): SubscriptionEntry {
    const e = this.ctx.entities.subscriptionEntry(topic, subscription);
    if (!e) throw entityNotFound(`${topic}/Subscriptions/${subscription}`);
    return e;
  }

  // Ends the locks on a deleted entity's messages and detaches its receivers with not-found.
  private endReceivers(q: QueueState): void {
    for (const row of q.rows.values()) if (row.lock) this.locks.release(row.lock.token);
    const gone = entityNotFound(q.path);
    for (const c of q.consumers.splice(0)) c.entityDeleted?.(gone);
  }
}

// The store ops that empty entities (rows, bodies, dedup, sessions, rules) in the same write as their record.
function clears(ids: number[]): StoreOp[] {
  return ids.map((qid) => ({ op: 'clear', qid }));
}

// A subscription created with its own default rule has that rule instead of `$Default` (Service Bus
// "CreateSubscription" with a DefaultRuleDescription).
function replaceDefaultRule(e: SubscriptionEntry, rule: RuleDescription): void {
  const set = ruleSetOf(e.q);
  set.remove('$Default');
  set.add(rule);
}
