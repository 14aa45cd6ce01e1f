// The AMQP side of the error table (src/errors/table.ts): the condition and description an AMQP error carries,
// and the `$management` status code.

import { BrokerError, sessionLockLost as sessionLockLostError } from '../broker/errors.js';
import { wireError } from '../errors/table.js';

/** An AMQP error as rhea sends it. */
export interface AmqpError {
  condition: string;
  description: string;
}

/**
 * The AMQP error for anything thrown by the broker (unknown errors become internal errors). With `host` (the
 * hostname of the client's AMQP open), a missing entity is named `sb://<host>/<path>`, as Service Bus does.
 */
export function toAmqpError(err: unknown, host?: string): AmqpError {
  const { condition, description } = wireError(err, host);
  return { condition, description };
}

/** The `$management` status code for an error. */
export function toStatusCode(err: unknown): number {
  return wireError(err).status;
}

/** Condition for a request the management node does not implement. */
export const NOT_IMPLEMENTED = 'amqp:not-implemented';

/**
 * On a session, a lost message lock means the session lock was lost (SessionLockLost; docs/wire-contract.md, "Error
 * conditions").
 */
export function sessionLockLost(err: unknown): unknown {
  return err instanceof BrokerError && err.code === 'LockLost' ? sessionLockLostError() : err;
}
