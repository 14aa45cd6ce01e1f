// The one table from domain error codes to AMQP error conditions and `$management` status codes. The
// conditions are the ones @azure/service-bus maps to the matching ServiceBusError codes
// (docs/wire-contract.md, "Error conditions"; core-amqp `ConditionErrorNameMapper`).

import { BrokerError, entityNotFound, type BrokerErrorCode } from '../broker/errors.js';

/** An AMQP error as rhea sends it. */
export interface AmqpError {
  condition: string;
  description: string;
}

const TABLE: Record<BrokerErrorCode, { condition: string; status: number }> = {
  EntityNotFound: { condition: 'amqp:not-found', status: 404 }, // MessagingEntityNotFound (needs the description)
  LockLost: { condition: 'com.microsoft:message-lock-lost', status: 410 }, // MessageLockLost
  SessionLockLost: { condition: 'com.microsoft:session-lock-lost', status: 410 }, // SessionLockLost
  SessionCannotBeLocked: { condition: 'com.microsoft:session-cannot-be-locked', status: 410 }, // SessionCannotBeLocked
  Timeout: { condition: 'com.microsoft:timeout', status: 408 }, // ServiceTimeout, retried
  MessageNotFound: { condition: 'com.microsoft:message-not-found', status: 410 }, // MessageNotFound
  MessageTooLarge: { condition: 'amqp:link:message-size-exceeded', status: 413 }, // MessageSizeExceeded
  InvalidOperation: { condition: 'amqp:not-allowed', status: 400 }, // GeneralError, not retried
  Unauthorized: { condition: 'amqp:unauthorized-access', status: 401 }, // UnauthorizedAccess
  QuotaExceeded: { condition: 'amqp:resource-limit-exceeded', status: 403 }, // QuotaExceeded
  StoreUnavailable: { condition: 'com.microsoft:server-busy', status: 503 }, // ServiceBusy, retried
  ShuttingDown: { condition: 'com.microsoft:server-busy', status: 503 }, // ServiceBusy, retried
  Internal: { condition: 'amqp:internal-error', status: 500 }, // GeneralError, retried
  ArgumentOutOfRange: { condition: 'com.microsoft:argument-out-of-range', status: 400 }, // GeneralError, not retried
};

/**
 * The AMQP error for anything thrown by the broker (unknown errors become internal errors). With `host` (the
 * hostname of the client's AMQP open), a missing entity is named `sb://<host>/<path>`, as Service Bus does.
 */
export function toAmqpError(err: unknown, host?: string): AmqpError {
  if (err instanceof BrokerError) {
    const e = err.code === 'EntityNotFound' && err.entityPath !== undefined && host ? entityNotFound(err.entityPath, host) : err;
    return { condition: TABLE[e.code].condition, description: e.message };
  }
  return { condition: 'amqp:internal-error', description: 'The service was unable to process the request.' };
}

/** The `$management` status code for an error. */
export function toStatusCode(err: unknown): number {
  return err instanceof BrokerError ? TABLE[err.code].status : 500;
}

/** Condition for a request the management node does not implement. */
export const NOT_IMPLEMENTED = 'amqp:not-implemented';

/**
 * On a session, a lost message lock means the session lock was lost (SessionLockLost; docs/wire-contract.md, "Error
 * conditions").
 */
export function sessionLockLost(err: unknown): unknown {
  if (err instanceof BrokerError && err.code === 'LockLost') {
    return new BrokerError('SessionLockLost', 'The session lock has expired on the MessageSession. Accept a new MessageSession.');
  }
  return err;
}

/**
 * Rule refusals (src/filters) as AMQP condition and `$management` status (docs/filters.md, "Refusals and their
 * conditions").
 */
export const RULE_ERRORS: Record<string, { condition: string; status: number }> = {
  InvalidArgument: { condition: 'com.microsoft:argument-error', status: 400 },
  ArgumentOutOfRange: { condition: 'com.microsoft:argument-out-of-range', status: 400 },
  AlreadyExists: { condition: 'com.microsoft:entity-already-exists', status: 409 }, // MessagingEntityAlreadyExists
  NotFound: { condition: 'amqp:not-found', status: 404 }, // MessagingEntityNotFound (with the description)
};
