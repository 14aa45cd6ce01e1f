// Domain errors with stable codes. `amqp/conditions.ts` is the one table that maps each code to an AMQP
// error condition and a `$management` status code; nothing in broker/ knows AMQP strings.

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
  | 'StoreUnavailable'
  | 'ShuttingDown'
  | 'Internal'
  | 'ArgumentOutOfRange';

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
 * host the client used, so the protocol layer rebuilds the error with it (see `amqp/conditions.ts`).
 */
export function entityNotFound(path: string, host?: string): BrokerError {
  const name = host === undefined ? path : `sb://${host}/${path}`;
  return new BrokerError('EntityNotFound', `The messaging entity '${name}' could not be found.`, path);
}

/** Builds a lock-lost error. */
export function lockLost(): BrokerError {
  return new BrokerError('LockLost', LOCK_LOST_TEXT);
}
