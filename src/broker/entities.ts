// The entity registry: which paths exist and which in-memory queue each resolves to. Service Bus entity
// names are case-insensitive, and every queue has a `$DeadLetterQueue` subqueue that takes no sends
// (Service Bus dead-letter queue docs). Topics and subscriptions get their own entries when they arrive.

import type { EntitySettings, PeeklockConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { Store } from '../store/store.js';
import { BrokerError, entityNotFound } from './errors.js';
import { QueueState } from './queue-state.js';

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

  constructor(
    private readonly config: PeeklockConfig,
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  /** Creates every configured queue and its dead-letter subqueue, with persistent ids. */
  async create(): Promise<void> {
    for (const qc of this.config.queues) {
      const q = await this.add(qc.name, 'queue', qc.settings);
      q.dlq = await this.add(qc.name + DLQ_SUFFIX, 'deadletter', deadLetterSettings(qc.settings));
    }
    if (this.config.topics.length) {
      this.log.warn({ topics: this.config.topics.map((t) => t.name) }, 'topics are not supported yet; ignored');
    }
  }

  /** Every message-holding entity. */
  all(): QueueState[] {
    return [...this.ids.values()];
  }

  /** The entity with a store id. */
  byId(qid: number): QueueState | undefined {
    return this.ids.get(qid);
  }

  /** Resolves any entity path (queue or subqueue), or throws EntityNotFound. */
  resolve(address: string): QueueState {
    const q = this.byKey.get(entityKey(address));
    if (!q) throw entityNotFound(address);
    return q;
  }

  /** Resolves a path a client may send to; dead-letter queues take no sends. */
  forSend(address: string): QueueState {
    const q = this.resolve(address);
    if (q.kind === 'deadletter') {
      throw new BrokerError('InvalidOperation', `Cannot send to the dead-letter queue '${q.path}'.`);
    }
    return q;
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
