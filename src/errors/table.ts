// The one table from failure codes to what each transport says: the AMQP error condition, the `$management`
// status code and the HTTP status of the admin API. Domain errors (broker/errors.ts), rule refusals
// (filters/errors.ts) and refused credentials (auth/sas.ts) all map here, and nowhere else. The conditions are
// the ones @azure/service-bus maps to the matching ServiceBusError codes (docs/wire-contract.md, "Error
// conditions"; core-amqp's ConditionErrorNameMapper). Rule refusals never use a retryable condition: the SDK
// would retry them (docs/filters.md, "Refusals and their conditions").

import { AuthError } from '../auth/sas.js';
import { BrokerError, entityNotFound, type BrokerErrorCode } from '../broker/errors.js';
import { RuleDefinitionError, type RuleErrorCode } from '../filters/errors.js';

/** How one failure code shows on each transport. */
export interface WireMapping {
  /** AMQP error condition (link detach, rejected outcome, `error-condition` of a management reply). */
  condition: string;
  /** `status-code` of a `$management` or `$cbs` reply. */
  status: number;
  /** HTTP status of the admin API. */
  http: number;
}

const BROKER: Record<BrokerErrorCode, WireMapping> = {
  EntityNotFound: { condition: 'amqp:not-found', status: 404, http: 404 }, // MessagingEntityNotFound (needs the description)
  LockLost: { condition: 'com.microsoft:message-lock-lost', status: 410, http: 410 }, // MessageLockLost
  SessionLockLost: { condition: 'com.microsoft:session-lock-lost', status: 410, http: 410 }, // SessionLockLost
  SessionCannotBeLocked: { condition: 'com.microsoft:session-cannot-be-locked', status: 410, http: 409 }, // SessionCannotBeLocked
  Timeout: { condition: 'com.microsoft:timeout', status: 408, http: 408 }, // ServiceTimeout, retried
  MessageNotFound: { condition: 'com.microsoft:message-not-found', status: 410, http: 404 }, // MessageNotFound
  MessageTooLarge: { condition: 'amqp:link:message-size-exceeded', status: 413, http: 413 }, // MessageSizeExceeded
  InvalidOperation: { condition: 'amqp:not-allowed', status: 400, http: 400 }, // GeneralError, not retried
  Unauthorized: { condition: 'amqp:unauthorized-access', status: 401, http: 401 }, // UnauthorizedAccess
  QuotaExceeded: { condition: 'amqp:resource-limit-exceeded', status: 403, http: 403 }, // QuotaExceeded
  ServerBusy: { condition: 'com.microsoft:server-busy', status: 503, http: 503 }, // ServiceBusy, retried
  StoreUnavailable: { condition: 'com.microsoft:server-busy', status: 503, http: 503 }, // ServiceBusy, retried
  ShuttingDown: { condition: 'com.microsoft:server-busy', status: 503, http: 503 }, // ServiceBusy, retried
  Internal: { condition: 'amqp:internal-error', status: 500, http: 500 }, // GeneralError, retried
  ArgumentOutOfRange: { condition: 'com.microsoft:argument-out-of-range', status: 400, http: 400 }, // GeneralError, not retried
  InvalidArgument: { condition: 'com.microsoft:argument-error', status: 400, http: 400 }, // GeneralError, not retried
  EntityAlreadyExists: { condition: 'com.microsoft:entity-already-exists', status: 409, http: 409 }, // MessagingEntityAlreadyExists
  EntityDisabled: { condition: 'com.microsoft:entity-disabled', status: 400, http: 400 }, // MessagingEntityDisabled, not retried
  // AMQP 1.0 part 4 (transactions) conditions, which Service Bus's coordinator answers with.
  TransactionUnknown: { condition: 'amqp:transaction:unknown-id', status: 404, http: 404 },
  TransactionRolledBack: { condition: 'amqp:transaction:rollback', status: 409, http: 409 },
  TransactionTimeout: { condition: 'amqp:transaction:timeout', status: 408, http: 408 },
};

const RULES: Record<RuleErrorCode, WireMapping> = {
  InvalidArgument: { condition: 'com.microsoft:argument-error', status: 400, http: 400 },
  ArgumentOutOfRange: { condition: 'com.microsoft:argument-out-of-range', status: 400, http: 400 },
  AlreadyExists: { condition: 'com.microsoft:entity-already-exists', status: 409, http: 409 }, // MessagingEntityAlreadyExists
  NotFound: { condition: 'amqp:not-found', status: 404, http: 404 }, // MessagingEntityNotFound (with the description)
};

/** A failure as every transport reports it. */
export interface WireError extends WireMapping {
  /** The failure code (the domain's, the rule engine's, or `Unauthorized`). */
  code: string;
  /** The text the client sees. */
  description: string;
}

/** What an unexpected error shows: no internals leak to the client. */
const INTERNAL: WireError = {
  code: 'Internal',
  description: 'The service was unable to process the request.',
  ...BROKER.Internal,
};

/**
 * The wire form of anything thrown while serving a request; unknown errors become internal errors. With
 * `host` (the hostname of the client's AMQP open), a missing entity is named `sb://<host>/<path>`, as Service
 * Bus does.
 */
export function wireError(err: unknown, host?: string): WireError {
  if (err instanceof BrokerError) {
    const e = err.code === 'EntityNotFound' && err.entityPath !== undefined && host ? entityNotFound(err.entityPath, host) : err;
    return { code: e.code, description: e.message, ...BROKER[e.code] };
  }
  if (err instanceof RuleDefinitionError) return { code: err.code, description: err.message, ...RULES[err.code] };
  if (err instanceof AuthError) return { code: 'Unauthorized', description: err.message, ...BROKER.Unauthorized };
  return INTERNAL;
}
