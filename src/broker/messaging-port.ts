// The messaging port: everything the AMQP layer (src/amqp) asks of a namespace's broker to move messages, and
// nothing else. A client's link reaches the broker only through these calls: its attach is checked here (the node
// exists and may be sent to or received from), its transfers are sent, its deliveries come through `attach`'s
// consumer, its dispositions and `$management` requests settle, renew, peek and schedule, and its coordinator
// declares, stages and discharges transactions. `Broker` implements it; the transport never sees the broker's
// in-memory indexes (docs/architecture.md, "Layers").

import type { RuleDescription } from '../filters/index.js';
import type { EntityRules } from './catalog/sas-rules.js';
import type { DeleteMessagesRequest } from './messaging/batch-delete.js';
import type { ConsumerHandle } from './messaging/dispatcher.js';
import type { SessionGrant } from './messaging/sessions.js';
import type { TxnOp, TxnOwner } from './messaging/transactions.js';
import type { Consumer, IncomingMessage, ReceiveMode, Settlement, StoredMessage } from './types.js';

export type { ConsumerHandle, DeleteMessagesRequest, SessionGrant, TxnOp, TxnOwner };
export type { BrowsedMessage } from './operations/operator.js';
// Two pure helpers the wire needs to agree with the broker on: how an address names an entity, and how a typed
// property change is stored (so a rule action's value keeps its AMQP type).
export { entityKey } from './catalog/entities.js';
export { patchOf } from './messaging/subscription-rules.js';

/** What a receiver's attach learns of the entity it receives from. */
export interface ReceiveSource {
  /** The entity's path as the broker spells it (for error texts). */
  readonly path: string;
  /** True when the entity requires sessions: only a session receiver may attach (Service Bus refuses others). */
  readonly sessionful: boolean;
}

/** What the AMQP layer calls on a namespace's broker. */
export interface MessagingPort {
  /** Largest message accepted, in bytes (advertised as max-message-size). */
  readonly maxMessageSize: number;
  /** Largest batch transfer accepted, in bytes (advertised as com.microsoft:max-message-batch-size). */
  readonly maxBatchSize: number;

  /** Throws (not found, or InvalidOperation for a subqueue or subscription) unless a client may send to `address`. */
  checkSendTarget(address: string): void;
  /** Throws unless `address` is an entity a send-via link may send through (a queue or a subscription). */
  checkSendVia(address: string): void;
  /** The entity a receiver on `address` receives from; throws not-found when there is none. */
  receiveSource(address: string): ReceiveSource;
  /** Throws not-found unless `address` names an entity (queue, topic, subscription or subqueue). */
  checkEntity(address: string): void;
  /** The SAS rules of the queue or topic `path` is or lies under, or null (a token's `sr`). */
  rulesGuarding(path: string): EntityRules | null;
  /** Every entity SAS rule named `keyName` (a SASL PLAIN login names no entity). */
  rulesNamed(keyName: string): EntityRules[];

  /** Stores messages; resolves with their sequence numbers once they are durable. */
  send(path: string, msgs: IncomingMessage[]): Promise<number[]>;
  /** Sends through the entity `via` to `destination` (send-via outside a transaction), durably. */
  sendVia(via: string, destination: string, msgs: IncomingMessage[]): Promise<void>;
  /** Registers a receiving link; messages reach it through `consumer.deliver`. */
  attach(path: string, consumer: Consumer): ConsumerHandle;
  /** Locks a session for `consumer`, by id or (null) the next available one. */
  acceptSession(path: string, sessionId: string | null, timeoutMs: number, consumer: Consumer): Promise<SessionGrant>;
  /** Settles a peek-locked message by lock token; LockLost if the lock is not current. */
  settle(token: string, s: Settlement, entityPath?: string): Promise<void>;
  /** Extends a lock by the entity's LockDuration; resolves with the new locked-until (epoch ms). */
  renewLock(token: string, entityPath?: string): Promise<number>;

  /** Peeks messages from sequence number `from` on, without locking. */
  peek(path: string, from: number, count: number, sessionId?: string): StoredMessage[];
  /** Fetches deferred messages by sequence number. */
  receiveDeferred(path: string, seqs: number[], mode: ReceiveMode): Promise<StoredMessage[]>;
  /** Cancels scheduled messages by the sequence numbers their send reported. */
  cancelScheduled(path: string, seqs: number[]): Promise<void>;
  /** Batch delete of the oldest available messages (batch-delete-messages). */
  deleteMessages(path: string, req: DeleteMessagesRequest): Promise<number>;
  /** Extends a session lock; SessionLockLost when the session is not locked (any more). */
  renewSessionLock(path: string, sessionId: string): Promise<number>;
  /** The session's state (null when never set). */
  getSessionState(path: string, sessionId: string): Uint8Array | null;
  /** Sets (or with null clears) the session's state, durably. */
  setSessionState(path: string, sessionId: string, state: Uint8Array | null): Promise<void>;
  /** Ids of sessions selected by get-message-sessions, paged. */
  listSessions(path: string, since: number, skip: number, top: number): string[];
  /** A subscription's rules, sorted by name (enumerate-rules). */
  listRules(subscriptionPath: string): RuleDescription[];
  /** Adds a rule durably (add-rule). */
  addRule(subscriptionPath: string, rule: RuleDescription): Promise<void>;
  /** Removes a rule durably (remove-rule). */
  removeRule(subscriptionPath: string, name: string): Promise<void>;

  /** Declares a local transaction for `owner`; returns its id (hex). */
  declareTransaction(owner: TxnOwner): string;
  /** Stages one piece of work in transaction `txn` of `connection`; throws its refusal. */
  stageInTransaction(txn: string, connection: string, op: TxnOp): void;
  /** Commits (or with `fail` rolls back) transaction `txn` of `connection`. */
  dischargeTransaction(txn: string, connection: string, fail: boolean): Promise<void>;
  /** Rolls back the open transactions of `connection` (of its coordinator link `link` only, when given). */
  rollbackTransactions(connection: string, link?: string): void;
}
