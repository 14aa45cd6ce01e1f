// A topic: it stores nothing for receivers. A send is fanned out to its subscriptions by their rules
// (docs/filters.md, "Fan-out"); sequence numbers for the send, duplicate detection and the default TTL are
// the topic's own, as Service Bus keeps them at the topic level.

import type { EntityStatus } from '../catalog/entity-model.js';
import type { QueueState } from './queue-state.js';
import { DuplicateHistory } from './dedup.js';

/** Topic-level settings from `Topics[].Properties`. */
export interface TopicSettings {
  defaultMessageTtlMs: number | null;
  requiresDuplicateDetection: boolean;
  duplicateDetectionWindowMs: number;
  /** MaxSizeInMegabytes in bytes: the most its subscriptions (with their dead-letter queues) may hold together. */
  maxSizeBytes: number;
}

/** A topic and its subscriptions. */
export class TopicState {
  readonly kind = 'topic' as const;
  /** The subscriptions, each a queue of its own with its own dead-letter subqueue. */
  readonly subscriptions: QueueState[] = [];
  /** Next topic-level sequence number (what a send or schedule-message reports). */
  nextSeq = 1;
  /** Service Bus entity status: Disabled or SendDisabled refuses sends. */
  status: EntityStatus = 'Active';
  /** Duplicate detection history (kept at the topic, as Service Bus keeps it). */
  readonly dedup = new DuplicateHistory();

  constructor(
    readonly id: number,
    readonly path: string,
    readonly settings: TopicSettings,
  ) {}
}
