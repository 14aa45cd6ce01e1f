// A topic: it stores nothing for receivers. A send is fanned out to its subscriptions by their rules
// (docs/filters.md, "Fan-out"); sequence numbers for the send, duplicate detection and the default TTL are
// the topic's own, as Service Bus keeps them at the topic level.

import type { QueueState } from './queue-state.js';

/** Topic-level settings from `Topics[].Properties`. */
export interface TopicSettings {
  defaultMessageTtlMs: number | null;
  requiresDuplicateDetection: boolean;
  duplicateDetectionWindowMs: number;
}

/** The copies a subscription takes for one message, decided by its rules. */
export interface CopyPlan {
  /** Name of the rule whose action made this copy (set as the RuleName property), none for the plain copy. */
  ruleName?: string;
  /** Application-property changes of the action: a value, or null to remove the property. */
  props?: Record<string, unknown>;
  /** System-property changes of the action, by Service Bus name (To, Label, CorrelationId, SessionId, …). */
  sys?: Record<string, unknown>;
}

/** What a subscription's rules decide for one message. */
export interface RulePlan {
  copies: CopyPlan[];
  /** A filter or action failed: the message is dead-lettered in the subscription with this reason. */
  error?: { reason: string; description: string };
}

/** A subscription's compiled rules. */
export interface SubscriptionRules {
  /** The copies for a message; `view` is the protocol layer's filter view of it (see IncomingMessage.view). */
  plan(view: unknown): RulePlan;
}

/** A topic and its subscriptions. */
export class TopicState {
  readonly kind = 'topic' as const;
  /** The subscriptions, each a queue of its own with its own dead-letter subqueue. */
  readonly subscriptions: QueueState[] = [];
  /** Next topic-level sequence number (what a send or schedule-message reports). */
  nextSeq = 1;
  /** Duplicate detection: message-id key → end of its window. */
  readonly dedup = new Map<string, number>();
  /** Sends since the duplicate-detection history was last pruned. */
  dedupSincePrune = 0;

  constructor(
    readonly id: number,
    readonly path: string,
    readonly settings: TopicSettings,
  ) {}
}
