// The persisted state of one stored message: the row the store keeps beside the body. The rows database is
// also the lock table: a row carries its lock token, locked-until and delivery count (docs/architecture.md).

/** Where a stored message is in its life: visible, under a peek-lock, set aside, or not yet due. */
export type MessageState = 'active' | 'locked' | 'deferred' | 'scheduled';

/** A peek-lock: the token (a GUID string, standard byte order) and when it lapses (epoch ms). */
export interface LockInfo {
  token: string;
  until: number;
}

/** The mutable, persisted state of one stored message. The body is stored separately and never rewritten. */
export interface MessageRow {
  seq: number;
  state: MessageState;
  /** Deliveries so far, counted when a lock is taken (so a broker crash still counts the attempt). */
  deliveryCount: number;
  /** When the message became visible (epoch ms): the send, or for a scheduled message its scheduled time. */
  enqueuedAt: number;
  /** Absolute expiry (epoch ms) or null for never. */
  expiresAt: number | null;
  /**
   * A dead-letter queue ignores TTL (its rows have `expiresAt` null), but a dead-lettered message still says when it
   * expired or would have: the expiry it had in its entity, which its TimeToLive and ExpiresAt keep reporting.
   */
  reportedExpiry?: number;
  /** Due time of a scheduled message; kept once it is due, as Service Bus still reports such a message as scheduled. */
  scheduledAt?: number;
  lock?: LockInfo;
  messageId: string;
  sessionId?: string;
  /** Encoded size of the body in bytes. */
  size: number;
  /** Set once deferred: a lock taken by sequence number ends back in the deferred state, not the queue. */
  deferred?: boolean;
  /** Application-property changes made by abandon / defer / dead-letter / rule actions; merged in at delivery
   * (a `{ $remove: true }` value removes the property). */
  props?: Record<string, unknown>;
  /** System-property changes made by a rule action (Service Bus names: To, Label, CorrelationId, …). */
  sys?: Record<string, unknown>;
  /** For a subscription copy: the topic's sequence number for the send (schedule/cancel use it). */
  topicSeq?: number;
  /** For a copy whose body is shared (a topic's subscriptions): the [qid, seq] the body is stored under. */
  bodyRef?: [number, number];
  /** Entity the message was dead-lettered in, when it was forwarded from there (x-opt-deadletter-source). */
  deadLetterSource?: string;
}
