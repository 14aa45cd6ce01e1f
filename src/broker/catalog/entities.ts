// The entity registry: which paths exist and which in-memory queue each resolves to. Service Bus entity
// names are case-insensitive; every queue and subscription has a `$DeadLetterQueue` subqueue that takes no
// sends (Service Bus dead-letter queue docs); subscriptions are addressed `<topic>/Subscriptions/<name>`.

import { createHash } from 'node:crypto';
import type { AuthorizationRuleConfig, EntitySettings, PeeklockConfig, RuleConfig } from '../../config/types.js';
import type { Store, StoreOp } from '../../store/store.js';
import type { Journal } from '../runtime/journal.js';
import {
  configQueueDescription,
  configSubscriptionDescription,
  configTopicDescription,
  serviceTopicDefaults,
  type QueueDescription,
  type SubscriptionDescription,
  type TopicDescription,
} from './entity-model.js';
import { BrokerError, entityNotFound } from '../errors.js';
import { QueueState, type Backing } from '../indexes/queue-state.js';
import { settleRules } from './sas-rules.js';
import { TopicState } from '../indexes/topic-state.js';
import type { SubscriptionRules } from '../messaging/rule-plan.js';

/** The suffix of a dead-letter subqueue path. */
export const DLQ_SUFFIX = '/$DeadLetterQueue';
/** The suffix of a transfer dead-letter subqueue path: messages a send-via could not deliver (Service Bus's name). */
export const TDLQ_SUFFIX = '/$Transfer/$DeadLetterQueue';

/** Normalises an address to an entity key: no scheme/host prefix, no slashes at the ends, lower case. */
export function entityKey(address: string): string {
  // Some clients (uamqp) put the whole URL into the attach address.
  const path = address.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*\//i, '').replace(/^\/+|\/+$/g, '');
  return path.toLowerCase();
}

/** Settings of a dead-letter subqueue: its parent's lock duration, no delivery limit, no TTL. */
export function deadLetterSettings(parent: EntitySettings): EntitySettings {
  return {
    ...parent,
    maxDeliveryCount: Number.MAX_SAFE_INTEGER,
    defaultMessageTtlMs: null,
    deadLetteringOnMessageExpiration: false,
    requiresDuplicateDetection: false,
    forwardTo: null,
    // The dead-letter subqueue counts against its parent's quota, never its own.
    maxSizeBytes: Number.MAX_SAFE_INTEGER,
  };
}

/** A queue as the management API sees it: its index, its full description and where it came from. */
export interface QueueEntry {
  q: QueueState;
  description: QueueDescription;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms. */
  updatedAt: number;
  /** Declared in Config.json, or created through the management API. */
  origin: 'config' | 'runtime';
  /** Fingerprint of the Config.json declaration (config queues), to tell a config edit from an API update. */
  configHash: string | null;
}

/** What the store keeps of a queue created or changed through the management API (EntityRecord.description). */
export interface StoredQueue {
  description: QueueDescription;
  /** The Config.json fingerprint when the change was made (null for a queue created at run time). */
  configHash: string | null;
}

/** When an entry was created and changed, and where it came from. */
export type EntryInfo = Omit<QueueEntry, 'q' | 'description'>;

/** A topic as the management API sees it. */
export interface TopicEntry extends EntryInfo {
  t: TopicState;
  description: TopicDescription;
}

/** A subscription as the management API sees it. */
export interface SubscriptionEntry extends EntryInfo {
  q: QueueState;
  topic: TopicState;
  /** The subscription's own name (without the topic). */
  name: string;
  description: SubscriptionDescription;
}

/** What the store keeps of a topic created or changed through the management API. */
export interface StoredTopic {
  description: TopicDescription;
  configHash: string | null;
}

/** What the store keeps of a subscription created or changed through the management API. */
export interface StoredSubscription {
  topic: string;
  name: string;
  description: SubscriptionDescription;
  configHash: string | null;
}

/** The rule fingerprint of a subscription created at run time: its stored rules always apply. */
export const RUNTIME_RULES = 'runtime';

function compareKeys(a: string, b: string): number {
  const x = entityKey(a);
  const y = entityKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Fingerprint of a Config.json declaration. */
export function configHash(value: unknown): string {
  return createHash('sha1').update(JSON.stringify(value)).digest('hex');
}

/** Creates and resolves entities. */
export class Entities {
  private readonly byKey = new Map<string, QueueState>();
  private readonly queueEntries = new Map<string, QueueEntry>();
  private readonly topicEntries = new Map<string, TopicEntry>();
  private readonly subscriptionEntries = new Map<string, SubscriptionEntry>();
  /** Paths (keys) of entities deleted through the management plane since start (health reports them as intended). */
  private readonly deletedKeys = new Set<string>();
  private readonly ids = new Map<number, QueueState>();
  private readonly topics = new Map<string, TopicState>();

  constructor(
    private readonly config: PeeklockConfig,
    private readonly store: Store,
    /** The one write path (for the keys generated for Config.json SAS rules at start-up). */
    private readonly journal: Journal,
    /** Compiles a subscription's configured rules (the broker passes the filter engine's compiler). */
    private readonly compileRules: (rules: RuleConfig[], path: string) => SubscriptionRules,
    /** Lets deep queues keep only their front in memory (none: every row stays in memory). */
    private readonly backing: Backing | null = null,
  ) {}

  /**
   * Creates every configured queue, topic and subscription (each with its dead-letter subqueue), then the queues
   * created through the management API. A Config.json queue changed through the API keeps the change across
   * restarts unless its Config.json declaration was edited since (then the later edit, the file's, wins).
   */
  async create(now = Date.now()): Promise<void> {
    const records = new Map(this.store.loadEntities().map((r) => [entityKey(r.path), r]));
    // Config.json SAS rules declared without keys get generated ones, stored with the entity so they outlive a restart.
    const generated: StoreOp[] = [];
    const remember = (path: string, kind: 'queue' | 'topic', description: QueueDescription | TopicDescription, configHash: string, rules: AuthorizationRuleConfig[] | undefined): void => {
      if (!rules?.some((r) => !r.primaryKey || !r.secondaryKey)) return;
      generated.push({ op: 'entity', path, record: { path, kind, description: { description, configHash }, createdAt: now, updatedAt: now } });
    };
    for (const qc of this.config.queues) {
      const key = entityKey(qc.name);
      // Rules join the hash only when declared, so a file without them keeps the hashes stored before they existed.
      const hash = configHash(qc.authorizationRules?.length ? [qc.settings, qc.authorizationRules] : qc.settings);
      const rec = records.get(key);
      records.delete(key);
      const stored = rec?.kind === 'queue' ? (rec.description as StoredQueue) : undefined;
      const keep = stored !== undefined && stored.configHash === hash;
      const description = keep ? stored.description : configQueueDescription(qc.settings, settleRules(qc.authorizationRules ?? [], [], now));
      if (!keep) remember(qc.name, 'queue', description, hash, qc.authorizationRules);
      await this.addQueue(qc.name, description, {
        createdAt: rec?.createdAt ?? now,
        updatedAt: keep ? rec!.updatedAt : now,
        origin: 'config',
        configHash: hash,
      });
    }
    for (const tc of this.config.topics) {
      const key = entityKey(tc.name);
      // The size joins the fingerprint only when configured, so topics configured before it keep their records.
      const sized = tc.maxSizeBytes === serviceTopicDefaults().maxSizeBytes ? [] : [tc.maxSizeBytes];
      const topicFields = [tc.defaultMessageTtlMs, tc.requiresDuplicateDetection, tc.duplicateDetectionWindowMs, ...sized];
      const hash = configHash(tc.authorizationRules?.length ? [...topicFields, tc.authorizationRules] : topicFields);
      const rec = records.get(key);
      records.delete(key);
      const stored = rec?.kind === 'topic' ? (rec.description as StoredTopic) : undefined;
      const keep = stored !== undefined && stored.configHash === hash;
      const description = keep ? stored.description : configTopicDescription(tc, settleRules(tc.authorizationRules ?? [], [], now));
      if (!keep) remember(tc.name, 'topic', description, hash, tc.authorizationRules);
      const info = { createdAt: rec?.createdAt ?? now, updatedAt: keep ? rec!.updatedAt : now, origin: 'config' as const, configHash: hash };
      const t = await this.addTopic(tc.name, description, info);
      for (const sc of tc.subscriptions) {
        const path = `${tc.name}/Subscriptions/${sc.name}`;
        const skey = entityKey(path);
        const shash = configHash(sc.settings);
        const srec = records.get(skey);
        records.delete(skey);
        const sstored = srec?.kind === 'subscription' ? (srec.description as StoredSubscription) : undefined;
        const skeep = sstored !== undefined && sstored.configHash === shash;
        const sdesc = skeep ? sstored.description : configSubscriptionDescription(sc.settings);
        const sub = await this.addSubscription(t.t, sc.name, sdesc, {
          createdAt: srec?.createdAt ?? now,
          updatedAt: skeep ? srec!.updatedAt : now,
          origin: 'config',
          configHash: shash,
        });
        sub.q.rules = this.compileRules(sc.rules, path);
        sub.q.ruleConfigHash = configHash(sc.rules);
      }
    }
    if (generated.length) await this.journal.run({ ops: generated }); // memory already holds them: nothing to undo
    // Then what was created through the management API: queues and topics, then subscriptions of known topics.
    const rest = [...records.values()];
    for (const rec of rest) {
      if (rec.kind === 'subscription' || this.exists(rec.path)) continue;
      const info = { createdAt: rec.createdAt, updatedAt: rec.updatedAt, origin: 'runtime' as const, configHash: null };
      if (rec.kind === 'queue') await this.addQueue(rec.path, (rec.description as StoredQueue).description, info);
      else await this.addTopic(rec.path, (rec.description as StoredTopic).description, info);
    }
    for (const rec of rest) {
      if (rec.kind !== 'subscription' || this.exists(rec.path)) continue;
      const stored = rec.description as StoredSubscription;
      const t = this.topics.get(entityKey(stored.topic));
      if (!t) continue;
      await this.addSubscription(t, stored.name, stored.description, {
        createdAt: rec.createdAt,
        updatedAt: rec.updatedAt,
        origin: 'runtime',
        configHash: null,
      });
    }
  }

  /** Registers a topic with a description; the caller has checked the name is free. */
  async addTopic(path: string, description: TopicDescription, info: EntryInfo): Promise<TopicEntry> {
    const key = entityKey(path);
    const t = new TopicState(await this.store.queueId(key), path, {
      defaultMessageTtlMs: description.defaultMessageTtlMs,
      requiresDuplicateDetection: description.requiresDuplicateDetection,
      duplicateDetectionWindowMs: description.duplicateDetectionWindowMs,
      maxSizeBytes: description.maxSizeBytes,
    });
    this.topics.set(key, t);
    t.status = description.status;
    const entry: TopicEntry = { t, description, ...info };
    this.topicEntries.set(key, entry);
    return entry;
  }

  /**
   * Registers a subscription of `t` with its dead-letter subqueue and the `$Default` rule (the caller replaces
   * the rules of a configured one); a runtime subscription's stored rules are restored by Recovery.
   */
  async addSubscription(t: TopicState, name: string, description: SubscriptionDescription, info: EntryInfo): Promise<SubscriptionEntry> {
    const path = `${t.path}/Subscriptions/${name}`;
    const q = await this.add(path, 'subscription', { ...description.settings });
    q.dlq = await this.add(path + DLQ_SUFFIX, 'deadletter', deadLetterSettings(description.settings));
    q.dlq.parent = q;
    q.tdlq = await this.add(path + TDLQ_SUFFIX, 'deadletter', deadLetterSettings(description.settings));
    q.tdlq.parent = q;
    q.rules = this.compileRules([], path);
    q.ruleConfigHash = RUNTIME_RULES;
    q.status = description.status;
    t.subscriptions.push(q);
    const entry: SubscriptionEntry = { q, topic: t, name, description, ...info };
    this.subscriptionEntries.set(entityKey(path), entry);
    return entry;
  }

  /** Unregisters a topic and its subscriptions; returns what puts them back (if their deletion cannot be stored). */
  removeTopic(entry: TopicEntry): () => void {
    const key = entityKey(entry.t.path);
    const subs = this.subscriptionsOf(entry.t);
    const undo = subs.map((s) => this.removeSubscription(s));
    this.topics.delete(key);
    this.topicEntries.delete(key);
    return () => {
      this.topics.set(key, entry.t);
      this.topicEntries.set(key, entry);
      for (const u of undo) u();
    };
  }

  /** Unregisters a subscription and its dead-letter subqueue; returns what puts it back. */
  removeSubscription(entry: SubscriptionEntry): () => void {
    const key = entityKey(entry.q.path);
    for (const q of [entry.q, entry.q.dlq, entry.q.tdlq]) {
      if (!q) continue;
      this.byKey.delete(entityKey(q.path));
      this.ids.delete(q.id);
    }
    this.subscriptionEntries.delete(key);
    const i = entry.topic.subscriptions.indexOf(entry.q);
    if (i >= 0) entry.topic.subscriptions.splice(i, 1);
    return () => {
      for (const q of [entry.q, entry.q.dlq, entry.q.tdlq]) {
        if (!q) continue;
        this.byKey.set(entityKey(q.path), q);
        this.ids.set(q.id, q);
      }
      this.subscriptionEntries.set(key, entry);
      if (!entry.topic.subscriptions.includes(entry.q)) entry.topic.subscriptions.push(entry.q);
    };
  }

  /** The topic named `name` as the management API sees it, or undefined. */
  topicEntry(name: string): TopicEntry | undefined {
    return this.topicEntries.get(entityKey(name));
  }

  /** Every topic, ordered by name. */
  topicEntriesSorted(): TopicEntry[] {
    return [...this.topicEntries.values()].sort((a, b) => compareKeys(a.t.path, b.t.path));
  }

  /** The subscription `name` of topic `topic`, or undefined. */
  subscriptionEntry(topic: string, name: string): SubscriptionEntry | undefined {
    return this.subscriptionEntries.get(entityKey(`${topic}/Subscriptions/${name}`));
  }

  /** The subscriptions of a topic, ordered by name. */
  subscriptionsOf(t: TopicState): SubscriptionEntry[] {
    return t.subscriptions
      .map((q) => this.subscriptionEntries.get(entityKey(q.path)))
      .filter((e): e is SubscriptionEntry => e !== undefined)
      .sort((a, b) => compareKeys(a.name, b.name));
  }

  /** Registers a queue and its dead-letter subqueue with a description; the caller has checked the name is free. */
  async addQueue(path: string, description: QueueDescription, info: Omit<QueueEntry, 'q' | 'description'>): Promise<QueueEntry> {
    const q = await this.add(path, 'queue', { ...description.settings });
    q.dlq = await this.add(path + DLQ_SUFFIX, 'deadletter', deadLetterSettings(description.settings));
    q.dlq.parent = q;
    q.tdlq = await this.add(path + TDLQ_SUFFIX, 'deadletter', deadLetterSettings(description.settings));
    q.tdlq.parent = q;
    q.status = description.status;
    const entry: QueueEntry = { q, description, ...info };
    this.queueEntries.set(entityKey(path), entry);
    return entry;
  }

  /** Unregisters a queue and its dead-letter subqueue (its sends and receives then find no entity). */
  removeQueue(entry: QueueEntry): void {
    for (const q of [entry.q, entry.q.dlq, entry.q.tdlq]) {
      if (!q) continue;
      this.byKey.delete(entityKey(q.path));
      this.ids.delete(q.id);
    }
    this.queueEntries.delete(entityKey(entry.q.path));
  }

  /** Registers again a queue `removeQueue` took out (when its deletion could not be stored). */
  restoreQueue(entry: QueueEntry): void {
    for (const q of [entry.q, entry.q.dlq, entry.q.tdlq]) {
      if (!q) continue;
      this.byKey.set(entityKey(q.path), q);
      this.ids.set(q.id, q);
    }
    this.queueEntries.set(entityKey(entry.q.path), entry);
  }

  /** The queue named `name` as the management API sees it, or undefined. */
  queueEntry(name: string): QueueEntry | undefined {
    return this.queueEntries.get(entityKey(name));
  }

  /** Every queue (not subscriptions or dead-letter queues), ordered by name as Service Bus lists them. */
  queueEntriesSorted(): QueueEntry[] {
    return [...this.queueEntries.values()].sort((a, b) => compareKeys(a.q.path, b.q.path));
  }

  /** Records that an entity was deleted on purpose (or, with `false`, created again). */
  markDeleted(path: string, deleted = true): void {
    if (deleted) this.deletedKeys.add(entityKey(path));
    else this.deletedKeys.delete(entityKey(path));
  }

  /** True when the entity at `path` was deleted through the management plane since start. */
  wasDeleted(path: string): boolean {
    return this.deletedKeys.has(entityKey(path));
  }

  /** True when any entity (queue, topic, subscription, dead-letter queue) has this path. */
  exists(path: string): boolean {
    const key = entityKey(path);
    return this.byKey.has(key) || this.topics.has(key);
  }

  /** Every topic. */
  allTopics(): TopicState[] {
    return [...this.topics.values()];
  }

  /** Every message-holding entity. */
  all(): QueueState[] {
    return [...this.ids.values()];
  }

  /** The entity with a store id. */
  byId(qid: number): QueueState | undefined {
    return this.ids.get(qid);
  }

  /** Resolves a path that holds messages (queue, subscription or dead-letter subqueue), or throws. */
  resolve(address: string): QueueState {
    const key = entityKey(address);
    const q = this.byKey.get(key);
    if (q) return q;
    if (this.topics.has(key)) {
      throw new BrokerError('InvalidOperation', `Cannot receive from the topic '${address}'; receive from a subscription.`);
    }
    throw entityNotFound(address);
  }

  /** Resolves a path a client may send to: a queue or a topic (dead-letter queues and subscriptions take no sends). */
  forSend(address: string): QueueState | TopicState {
    const t = this.topics.get(entityKey(address));
    if (t) return t;
    const q = this.resolve(address);
    if (q.kind === 'deadletter' || q.kind === 'subscription') {
      throw new BrokerError('InvalidOperation', `Cannot send to '${q.path}'; send to its queue or topic.`);
    }
    return q;
  }

  /** Checks that an address names any entity (a topic too); throws EntityNotFound otherwise. */
  node(address: string): QueueState | TopicState {
    return this.topics.get(entityKey(address)) ?? this.resolve(address);
  }

  /** Resolves a queue a client may send to (not a topic). */
  queueForSend(address: string): QueueState {
    const target = this.forSend(address);
    if (target.kind === 'topic') throw new BrokerError('InvalidOperation', `'${target.path}' is a topic, not a queue.`);
    return target;
  }

  /** Resolves a path a client may receive from. */
  forReceive(address: string): QueueState {
    return this.resolve(address);
  }

  /** True when `address` names `q`. */
  sameEntity(q: QueueState, address: string): boolean {
    return this.byKey.get(entityKey(address)) === q;
  }

  private async add(path: string, kind: QueueState['kind'], settings: EntitySettings): Promise<QueueState> {
    const key = entityKey(path);
    const id = await this.store.queueId(key);
    const q = new QueueState(id, path, kind, settings, this.backing);
    this.byKey.set(key, q);
    this.ids.set(id, q);
    return q;
  }
}
