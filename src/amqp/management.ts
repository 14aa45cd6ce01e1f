// The `$management` node of an entity: request/response operations over a link pair
// (service-bus-amqp.md §6). Replies carry `statusCode` (camelCase: the SDK's peek reads only that key) and,
// on every error, an `error-condition`, without which the SDK guesses a wrong condition from the status.

import type { Broker } from '../broker/broker.js';
import { BrokerError } from '../broker/errors.js';
import type { Settlement } from '../broker/types.js';
import type { Logger } from '../log/logger.js';
import { NOT_IMPLEMENTED, toAmqpError, toStatusCode } from './conditions.js';
import { uuidBytesToString } from './lock-token.js';
import { amqpTypes, type RheaMessage } from './rhea-types.js';

/** A management reply before it is addressed. */
export interface ManagementReply {
  statusCode: number;
  statusDescription: string;
  errorCondition?: string;
  body?: Record<string, unknown>;
}

/** AMQP type code of a timestamp, for typed arrays. */
const TIMESTAMP = 0x83;

type Operation = (broker: Broker, entity: string, body: Record<string, unknown>) => Promise<ManagementReply>;

const ok = (body?: Record<string, unknown>): ManagementReply => ({ statusCode: 200, statusDescription: 'OK', body });

function lockTokens(body: Record<string, unknown>): string[] {
  const raw = body['lock-tokens'];
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new BrokerError('InvalidOperation', "The request needs a non-empty 'lock-tokens' array.");
  }
  return raw.map((t) => (Buffer.isBuffer(t) ? uuidBytesToString(t) : String(t).toLowerCase()));
}

// com.microsoft:renew-lock → { expirations: timestamp[] } (§6.3.1)
const renewLock: Operation = async (broker, entity, body) => {
  const expirations: number[] = [];
  for (const token of lockTokens(body)) expirations.push(await broker.renewLock(token, entity));
  return ok({ expirations: amqpTypes.wrap_array(expirations, TIMESTAMP) });
};

// com.microsoft:update-disposition: how the SDK settles deferred messages and messages whose receiver
// link is gone (§5.5, §6.3.6). The SDK spells defer "defered".
const updateDisposition: Operation = async (broker, entity, body) => {
  const status = String(body['disposition-status'] ?? '').toLowerCase();
  const props = (body['properties-to-modify'] ?? undefined) as Record<string, unknown> | undefined;
  let s: Settlement;
  if (status === 'completed') s = { kind: 'complete' };
  else if (status === 'abandoned') s = { kind: 'abandon', props };
  else if (status === 'defered' || status === 'deferred') s = { kind: 'defer', props };
  else if (status === 'suspended') {
    const reason = body['deadletter-reason'];
    const description = body['deadletter-description'];
    s = {
      kind: 'deadLetter',
      reason: typeof reason === 'string' ? reason : undefined,
      description: typeof description === 'string' ? description : undefined,
      props,
    };
  } else {
    throw new BrokerError('InvalidOperation', `Unknown disposition-status '${status}'.`);
  }
  for (const token of lockTokens(body)) await broker.settle(token, s, entity);
  return ok();
};

const OPERATIONS: Record<string, Operation> = {
  'com.microsoft:renew-lock': renewLock,
  'com.microsoft:update-disposition': updateDisposition,
};

/** Runs one management request against `entity` and builds the reply (never throws). */
export async function handleManagement(
  broker: Broker,
  entity: string,
  request: RheaMessage,
  log: Logger,
): Promise<ManagementReply> {
  const operation = String(request.application_properties?.operation ?? '');
  const op = OPERATIONS[operation];
  if (!op) {
    return {
      statusCode: 501,
      statusDescription: `The operation '${operation}' is not supported.`,
      errorCondition: NOT_IMPLEMENTED,
    };
  }
  const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
  try {
    return await op(broker, entity, body);
  } catch (err) {
    const e = toAmqpError(err);
    log.debug({ entity, operation, condition: e.condition }, 'management request failed');
    return { statusCode: toStatusCode(err), statusDescription: e.description, errorCondition: e.condition };
  }
}
