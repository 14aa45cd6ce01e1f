// The entity registry: which paths exist and which in-memory queue each resolves to. Service Bus entity
// names are case-insensitive; every queue and subscription has a `$DeadLetterQueue` subqueue that takes no
// sends (Service Bus dead-letter queue docs); subscriptions are addressed `<topic>/Subscriptions/<name>`.

import { createHash } from 'node:crypto';
import type { EntitySettings, PeeklockConfig, RuleConfig } from '../config/types.js';
import type { Store } from '../store/store.js';
import { configQueueDescription, type QueueDescription } from './entity-model.js';
import { BrokerError, entityNotFound } from './errors.js';
import { QueueState } from './queue-state.js';
import { TopicState } from './topic-state.js';
import type { SubscriptionRules } from './rule-plan.js';

/** The suffix of a dead-letter subqueue path. */
export const DLQ_SUFFIX = '/$DeadLetterQueue';

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

/** Fingerprint of a Config.json declaration. */
export function configHash(value: unknown): string {
  return createHash('sha1').update(JSON.stringify(value)).digest('hex');
}

/** Creates and resolves entities. */
export class Entities {
  private readonly byKey = new Map<string, QueueState>();
  private readonly queueEntries = new Map<string, QueueEntry>();
  private readonly ids = new Map<number, QueueState>();
  private readonly topics = new Map<string, TopicState>();

  constructor(
    private readonly config: PeeklockConfig,
    private readonly store: Store,
    /** Compiles a subscription's configured rules (the broker passes the filter engine's compiler). */
    private readonly compileRules: (rules: RuleConfig[], path: string) => SubscriptionRules,
  ) {}

  /**
   * Creates every configured queue, topic and subscription (each with its dead-letter subqueue), then the queues
   * created through the management API. A Config.json queue changed through the API keeps the change across
   * restarts unless its Config.json declaration was edited since (then the later edit, the file's, wins).
   */
  async create(now = Date.now()): Promise<void> {
    const records = new Map(this.store.loadEntities().map((r) => [entityKey(r.path), r]));
    for (const qc of this.config.queues) {
      const key = entityKey(qc.name);
      const hash = configHash(qc.settings);
      const rec = records.get(key);
      records.delete(key);
      const stored = rec?.kind === 'queue' ? (rec.description as StoredQueue) : undefined;
      const keep = stored !== undefined && stored.configHash === hash;
      await this.addQueue(qc.name, keep ? stored.description : configQueueDescription(qc.settings), {
        createdAt: rec?.createdAt ?? now,
        updatedAt: keep ? rec!.updatedAt : now,
        origin: 'config',
        configHash: hash,
      });
    }
    for (const tc of this.config.topics) {
      const key = entityKey(tc.name);
      const t = new TopicState(await this.store.queueId(key), tc.name, {
        defaultMessageTtlMs: tc.defaultMessageTtlMs,
        requiresDuplicateDetection: tc.requiresDuplicateDetection,
        duplicateDetectionWindowMs: tc.duplicateDetectionWindowMs,
      });
      this.topics.set(key, t);
      for (const sc of tc.subscriptions) {
        const path = `${tc.name}/Subscriptions/${sc.name}`;
        const sub = await this.add(path, 'subscription', sc.settings);
        sub.dlq = await this.add(path + DLQ_SUFFIX, 'deadletter', deadLetterSettings(sc.settings));
        sub.dlq.parent = sub;
        sub.rules = this.compileRules(sc.rules, path);
        sub.ruleConfigHash = createHash('sha1').update(JSON.stringify(sc.rules)).digest('hex');
        t.subscriptions.push(sub);
      }
    }
    for (const rec of records.values()) {
      if (rec.kind !== 'queue' || this.topics.has(entityKey(rec.path))) continue;
      const stored = rec.description as StoredQueue;
      await this.addQueue(rec.path, stored.description, {
        createdAt: rec.createdAt,
        updatedAt: rec.updatedAt,
        origin: 'runtime',
        configHash: null,
      });
    }
  }

  /** Registers a queue and its dead-letter subqueue with a description; the caller has checked the name is free. */
  async addQueue(path: string, description: QueueDescription, info: Omit<QueueEntry, 'q' | 'description'>): Promise<QueueEntry> {
    const q = await this.add(path, 'queue', { ...description.settings });
    q.dlq = await this.add(path + DLQ_SUFFIX, 'deadletter', deadLetterSettings(description.settings));
    q.dlq.parent = q;
    const entry: QueueEntry = { q, description, ...info };
    this.queueEntries.set(entityKey(path), entry);
    return entry;
  }

  /** Unregisters a queue and its dead-letter subqueue (its sends and receives then find no entity). */
  removeQueue(entry: QueueEntry): void {
    for (const q of [entry.q, entry.q.dlq]) {
      if (!q) continue;
      this.byKey.delete(entityKey(q.path));
      this.ids.delete(q.id);
    }
    this.queueEntries.delete(entityKey(entry.q.path));
  }

  /** Registers again a queue `removeQueue` took out (when its deletion could not be stored). */
  restoreQueue(entry: QueueEntry): void {
    for (const q of [entry.q, entry.q.dlq]) {
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
    return [...this.queueEntries.values()].sort((a, b) => {
      const x = entityKey(a.q.path);
      const y = entityKey(b.q.path);
      return x < y ? -1 : x > y ? 1 : 0;
    });
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
    const q = new QueueState(id, path, kind, settings);
    this.byKey.set(key, q);
    this.ids.set(id, q);
    return q;
  }
}
