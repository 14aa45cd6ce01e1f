// Domain types shared by the broker and the protocol layer, and `reportedState`, the one fact about a message both derive. No AMQP or LMDB types here.

// The persisted row belongs to the store layer (it is what the store keeps); the domain re-exports it.
export type { LockInfo, MessageRow, MessageState } from '../store/row.js';
import type { LockInfo, MessageRow, MessageState } from '../store/row.js';
import type { AttemptHolder } from '../store/history.js';

/** A message as the protocol layer hands it to the broker: the encoded bytes plus what the broker needs. */
export interface IncomingMessage {
  body: Uint8Array;
  /** The sender's message-id, or one the protocol layer assigned (Service Bus always has one). */
  messageId: string;
  sessionId?: string;
  /** Per-message time to live from the header, ms. */
  ttlMs?: number;
  /** Absolute expiry from the properties, epoch ms. */
  absoluteExpiry?: number;
  /** `x-opt-scheduled-enqueue-time`, epoch ms. */
  scheduledAt?: number;
  /** The message as rule filters see it (typed properties); built lazily, only for topic sends. */
  view?: () => unknown;
  /** Changes a route made on the way (a rule action's copy, a dead-letter forward). */
  patch?: { props?: Record<string, unknown>; sys?: Record<string, unknown>; deadLetterSource?: string };
}

/** A message handed to a consumer: a snapshot of its row, its body and, in peek-lock mode, its lock. */
export interface Delivery {
  entityPath: string;
  row: MessageRow;
  body: Uint8Array;
}

/** How a receiver takes messages: under a lock (at-least-once) or deleted on send (at-most-once). */
export type ReceiveMode = 'peekLock' | 'receiveAndDelete';

/**
 * The broker's view of a receiving link. Its credit is pushed (`ConsumerHandle.setCredit`) and spent by the broker
 * as it reserves deliveries; the broker never asks the link for room.
 */
export interface Consumer {
  readonly receiveMode: ReceiveMode;
  /** Who holds the locks taken for this consumer (connection and link), shown by the admin API. */
  readonly holder?: string;
  /** Who the client is (container id, connection, link, receiver name): recorded on each delivery attempt. */
  readonly client?: AttemptHolder;
  /** The message session this consumer holds (session receivers only); set when the session is granted. */
  sessionId?: string;
  /** Called when the broker ends this consumer's session lock (expired, or the session was taken away). */
  sessionLost?(): void;
  /** Called when the entity was deleted through the management API; the link ends with `err` (not found). */
  entityDeleted?(err: Error): void;
  /** False once the link has gone; the broker then releases what it had reserved for it. */
  isOpen(): boolean;
  /**
   * Told of each delivery reserved for it, one credit spent (`+1`, with the row's stored size, while its lock or
   * delete is committed), and of each reservation that ends without a delivery (`-1`: the credit is given back);
   * `deliver` ends a reservation too. The protocol layer counts them against the budgets its links share.
   */
  reserved?(delta: 1 | -1, bytes: number): void;
  /** Hands over one message; called in sequence order, after the store has committed the lock. */
  deliver(d: Delivery): void;
}

/** How a client settles a peek-locked message. */
export type Settlement =
  | { kind: 'complete' }
  /** `released`: the client gave the message back unprocessed (AMQP released): an abandon that counts no delivery. */
  | { kind: 'abandon'; props?: Record<string, unknown>; released?: boolean }
  | { kind: 'defer'; props?: Record<string, unknown> }
  | { kind: 'deadLetter'; reason?: string; description?: string; props?: Record<string, unknown> };

/** A message read by sequence number (peek or receive-deferred): a row snapshot and its body. */
export interface StoredMessage {
  row: MessageRow;
  body: Uint8Array;
}

/**
 * A stored message as the protocol layer encodes it for a receiver or a `$management` reply: the read-only part
 * of its row the wire shows (sequence number, enqueued time, delivery count, lock, state, settlement changes). A
 * `MessageRow` is one; the protocol layer never needs, or gets to change, the rest.
 */
export interface DeliveredMessage {
  readonly seq: number;
  readonly enqueuedAt: number;
  /** When it expires (epoch ms), null for never; null in a dead-letter queue, which ignores TTL. */
  readonly expiresAt: number | null;
  /** In a dead-letter queue: the expiry it had in its entity (see `expiryReported`). */
  readonly reportedExpiry?: number;
  /** Deliveries so far, this one included when it is under a lock. */
  readonly deliveryCount: number;
  readonly state: MessageState;
  readonly deferred?: boolean;
  readonly scheduledAt?: number;
  readonly lock?: Readonly<LockInfo>;
  /** Application-property changes made by abandon / defer / dead-letter / rule actions (merged in at delivery). */
  readonly props?: Readonly<Record<string, unknown>>;
  /** System-property changes made by a rule action (Service Bus names). */
  readonly sys?: Readonly<Record<string, unknown>>;
  /** The entity it was dead-lettered in, when it was forwarded from there (x-opt-deadletter-source). */
  readonly deadLetterSource?: string;
}

/**
 * The state Service Bus reports for a message (`ServiceBusReceivedMessage.state`): deferred once deferred,
 * scheduled for a message that was held back until a scheduled time (before and after it fell due),
 * otherwise active. A lock does not change it.
 */
export function reportedState(m: Pick<DeliveredMessage, 'state' | 'deferred' | 'scheduledAt'>): 'active' | 'deferred' | 'scheduled' {
  if (m.deferred || m.state === 'deferred') return 'deferred';
  if (m.state === 'scheduled' || m.scheduledAt !== undefined) return 'scheduled';
  return 'active';
}

/**
 * The expiry a message reports (its ExpiresAt; its TimeToLive is this minus its enqueued time), null for never: the
 * broker's own, computed at enqueue from the effective TTL (Service Bus: ExpiresAt = EnqueuedTime + TimeToLive, the
 * TTL capped by the entity's DefaultMessageTimeToLive), or for a dead-lettered copy the one it had in its entity.
 */
export function expiryReported(m: Pick<DeliveredMessage, 'expiresAt' | 'reportedExpiry'>): number | null {
  return m.expiresAt ?? m.reportedExpiry ?? null;
}

/** Application property types a message can be sent with from the admin API (AMQP types the SDKs surface). */
export const APP_PROPERTY_TYPES = ['string', 'int', 'long', 'double', 'boolean', 'timestamp'] as const;
/** One of {@link APP_PROPERTY_TYPES}. */
export type AppPropertyType = (typeof APP_PROPERTY_TYPES)[number];

/** A message an operator composes (admin API, explorer); the protocol layer encodes it as a client would. */
export interface MessageSpec {
  body: Uint8Array;
  messageId?: string;
  contentType?: string;
  subject?: string;
  correlationId?: string;
  sessionId?: string;
  /** Time to live, ms. */
  ttlMs?: number;
  /** Scheduled enqueue time, epoch ms. */
  scheduledAt?: number;
  /** Typed application properties: a timestamp value is epoch ms. */
  applicationProperties?: Record<string, { type: AppPropertyType; value: string | number | boolean }>;
}
