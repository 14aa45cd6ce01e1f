// Domain types shared by the broker, the stores and the protocol layer. No AMQP or LMDB types here.

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
  /** Entity the message was dead-lettered in, when it was forwarded from there (x-opt-deadletter-source). */
  deadLetterSource?: string;
}

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

/** The broker's view of a receiving link. */
export interface Consumer {
  readonly receiveMode: ReceiveMode;
  /** Who holds the locks taken for this consumer (connection and link), shown by the admin API. */
  readonly holder?: string;
  /** The message session this consumer holds (session receivers only); set when the session is granted. */
  sessionId?: string;
  /** Called when the broker ends this consumer's session lock (expired, or the session was taken away). */
  sessionLost?(): void;
  /** Link credit not yet used by deliveries already handed over. */
  capacity(): number;
  /** False once the link has gone; the broker then releases what it had reserved for it. */
  isOpen(): boolean;
  /** Hands over one message; called in sequence order, after the store has committed the lock. */
  deliver(d: Delivery): void;
}

/** How a client settles a peek-locked message. */
export type Settlement =
  | { kind: 'complete' }
  | { kind: 'abandon'; props?: Record<string, unknown> }
  | { kind: 'defer'; props?: Record<string, unknown> }
  | { kind: 'deadLetter'; reason?: string; description?: string; props?: Record<string, unknown> };

/** A message read by sequence number (peek or receive-deferred): a row snapshot and its body. */
export interface StoredMessage {
  row: MessageRow;
  body: Uint8Array;
}
