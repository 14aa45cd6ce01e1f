// The entity registry: which paths exist and which in-memory queue each resolves to. Service Bus entity
// names are case-insensitive; every queue and subscription has a `$DeadLetterQueue` subqueue that takes no
// sends (Service Bus dead-letter queue docs); subscriptions are addressed `<topic>/Subscriptions/<name>`.

import { createHash } from 'node:crypto';
import type { EntitySettings, PeeklockConfig, RuleConfig } from '../config/types.js';
import type { Store } from '../store/store.js';
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
function deadLetterSettings(parent: EntitySettings): EntitySettings {
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

/** Creates and resolves entities. */
export class Entities {
  private readonly byKey = new Map<string, QueueState>();
  private readonly ids = new Map<number, QueueState>();
  private readonly topics = new Map<string, TopicState>();

  constructor(
    private readonly config: PeeklockConfig,
    private readonly store: Store,
    /** Compiles a subscription's configured rules (the broker passes the filter engine's compiler). */
    private readonly compileRules: (rules: RuleConfig[], path: string) => SubscriptionRules,
  ) {}

  /** Creates every configured queue, topic and subscription (each with its dead-letter subqueue). */
  async create(): Promise<void> {
    for (const qc of this.config.queues) {
      const q = await this.add(qc.name, 'queue', qc.settings);
      q.dlq = await this.add(qc.name + DLQ_SUFFIX, 'deadletter', deadLetterSettings(qc.settings));
      q.dlq.parent = q;
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
