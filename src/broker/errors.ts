// Domain errors with stable codes, each message built by one factory below. `errors/table.ts` is the one table
// that maps each code to an AMQP error condition, a `$management` status and an HTTP status; nothing in broker/
// knows AMQP strings.

/** Stable codes for every failure the broker reports to a client. */
export type BrokerErrorCode =
  | 'EntityNotFound'
  | 'LockLost'
  | 'SessionLockLost'
  | 'SessionCannotBeLocked'
  | 'Timeout'
  | 'MessageNotFound'
  | 'MessageTooLarge'
  | 'InvalidOperation'
  | 'Unauthorized'
  | 'QuotaExceeded'
  | 'ServerBusy'
  | 'StoreUnavailable'
  | 'ShuttingDown'
  | 'Internal'
  | 'ArgumentOutOfRange'
  | 'InvalidArgument'
  | 'EntityAlreadyExists'
  | 'EntityDisabled'
  | 'TransactionUnknown'
  | 'TransactionRolledBack'
  | 'TransactionTimeout';

/** A failure with a code the protocol layer can translate. */
export class BrokerError extends Error {
  constructor(
    readonly code: BrokerErrorCode,
    message: string,
    /** The entity path a not-found error is about, so the protocol layer can name it in full. */
    readonly entityPath?: string,
  ) {
    super(message);
    this.name = 'BrokerError';
  }
}

/** The Service Bus wording for a stale or unknown lock (MessageLockLost). */
export const LOCK_LOST_TEXT =
  'The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.';

/**
 * Builds the "entity not found" error with the description the SDK maps to MessagingEntityNotFound. Service
 * Bus names the entity by its full address, `sb://<namespace host>/<path>`; the domain does not know the
 * host the client used, so the protocol layer rebuilds the error with it (see `errors/table.ts`).
 */
export function entityNotFound(path: string, host?: string): BrokerError {
  const name = host === undefined ? path : `sb://${host}/${path}`;
  return new BrokerError('EntityNotFound', `The messaging entity '${name}' could not be found.`, path);
}

/** Builds a lock-lost error. */
export function lockLost(): BrokerError {
  return new BrokerError('LockLost', LOCK_LOST_TEXT);
}

/**
 * Builds Service Bus's refusal of a message over the size limit (MessageSizeExceeded in the SDK); `entity` names
 * the entity when the limit is the entity's own.
 */
export function messageTooLarge(size: number, limit: number, entity?: string): BrokerError {
  const of = entity === undefined ? '' : ` of entity '${entity}'`;
  return new BrokerError('MessageTooLarge', `The received message (size ${size} bytes) exceeds the limit (${limit} bytes)${of}.`);
}

/**
 * Builds Service Bus's refusal of a request field of the wrong type (ArgumentException: a count that is not a
 * number, a list that is not a list).
 */
export function invalidArgument(field: string, got: unknown, want: string): BrokerError {
  return new BrokerError('InvalidArgument', `The value '${describe(got)}' of '${field}' is not valid: it must be ${want}.`);
}

/** Builds Service Bus's refusal of a request field outside its range (ArgumentOutOfRangeException). */
export function argumentOutOfRange(field: string, got: unknown, allowed: string): BrokerError {
  return new BrokerError('ArgumentOutOfRange', `The value '${describe(got)}' of '${field}' is out of range; allowed: ${allowed}.`);
}

// A short rendering of a client's value for an error text (never a whole list or binary).
function describe(v: unknown): string {
  if (v instanceof Uint8Array) return `binary(${v.length})`;
  if (Array.isArray(v)) return `list(${v.length})`;
  const text = typeof v === 'string' ? v : String(v);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/**
 * Builds the refusal of a plain receiver on a session-enabled entity. Service Bus: "It is not possible for an
 * entity that requires sessions to create a non-sessionful message receiver."
 */
export function requiresSessions(path: string): BrokerError {
  return new BrokerError('InvalidOperation', `The entity '${path}' requires sessions; accept a session to receive from it.`);
}

/** Builds the session-lock-lost error (SessionLockLost), naming the session when it is known. */
export function sessionLockLost(sessionId?: string): BrokerError {
  const which = sessionId === undefined ? '' : ` Session id: '${sessionId}'.`;
  return new BrokerError('SessionLockLost', `The session lock has expired on the MessageSession. Accept a new MessageSession.${which}`);
}

/** Builds Service Bus's refusal to create an entity whose name is taken (MessagingEntityAlreadyExists). */
export function entityAlreadyExists(path: string): BrokerError {
  return new BrokerError('EntityAlreadyExists', `The messaging entity '${path}' already exists.`, path);
}

/**
 * Builds Service Bus's refusal of a create that would pass a per-topic quota (quotas doc: "subsequent requests
 * ... are rejected", QuotaExceeded): `what` names the count, `limit` its quota, `topic` the topic.
 */
export function topicQuotaExceeded(what: string, limit: number, topic: string): BrokerError {
  return new BrokerError('QuotaExceeded', `The topic '${topic}' already has ${limit} ${what}, the most Service Bus allows per topic.`, topic);
}

/** Builds Service Bus's refusal of a send or receive on an entity whose Status forbids it (MessagingEntityDisabled). */
export function entityDisabled(path: string): BrokerError {
  return new BrokerError('EntityDisabled', `Messaging entity '${path}' is currently disabled.`, path);
}

/** A txn-id the coordinator never declared, already discharged, or declared on another connection. */
export function transactionUnknown(id: string): BrokerError {
  return new BrokerError('TransactionUnknown', `The transaction '${id}' is unknown or has already been discharged.`);
}

/** A commit refused because the transaction was rolled back instead (an operation in it failed, or it was aborted). */
export function transactionRolledBack(id: string, why: string): BrokerError {
  return new BrokerError('TransactionRolledBack', `The transaction '${id}' was rolled back: ${why}`);
}

/** A discharge of a transaction the broker rolled back because it stayed open too long (Service Bus: 2 minutes). */
export function transactionTimedOut(id: string, afterMs: number): BrokerError {
  return new BrokerError('TransactionTimeout', `The transaction '${id}' timed out after ${afterMs / 1000} s and was rolled back.`);
}
