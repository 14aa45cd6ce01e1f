// The `$management` node of an entity: request/response operations over a link pair (docs/wire-contract.md,
// "$management operations"). Replies carry `statusCode` (camelCase: the SDK's peek reads only that key) and, on every
// error, an `error-condition`, without which the SDK guesses a wrong condition from the status.

import type { MessagingPort, TxnOp } from '../broker/messaging-port.js';
import { BrokerError, messageTooLarge } from '../broker/errors.js';
import type { Settlement } from '../broker/types.js';
import { RECEIVE_IN_TRANSACTION } from './transaction-types.js';
import { encodeDelivery, messageStateCode, parseIncoming } from './codec.js';
import { ruleOperation } from './rules-wire.js';
import type { ManagementReply } from './management-reply.js';
import { typedBodyField } from './typed-patch.js';
import type { Logger } from '../log/logger.js';
import { NOT_IMPLEMENTED, sessionLockLost, toAmqpError, toStatusCode } from './conditions.js';
import { uuidBytesToString, uuidStringToBytes } from './lock-token.js';
import { amqpTypes, type RheaMessage } from './rhea-types.js';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { intField, listField, sequenceNumbers } from './management-args.js';
import {
  MAX_MANAGEMENT_LOCK_TOKENS,
  MAX_MANAGEMENT_SEQUENCE_NUMBERS,
  MAX_PEEK_MESSAGES,
  MAX_PEEK_REPLY_BYTES,
  MAX_SCHEDULE_MESSAGES,
  PEEK_SLICE,
  MAX_SESSIONS_PAGE,
} from '../broker/runtime/limits.js';


/** AMQP type code of a timestamp, for typed arrays. */
const TIMESTAMP = 0x83;

/**
 * A request's transaction, when its transfer carried transactional-state: settlements and cancellations are staged
 * in it instead of applied (Service Bus runs them on commit).
 */
export type StageInTransaction = (op: TxnOp) => void;

type Operation = (broker: MessagingPort, entity: string, body: Record<string, unknown>, txn?: StageInTransaction) => Promise<ManagementReply>;

const ok = (body?: Record<string, unknown>): ManagementReply => ({ statusCode: 200, statusDescription: 'OK', body });

// At most MAX_MANAGEMENT_LOCK_TOKENS, each a uuid (or its text), checked before any is acted on.
function lockTokens(body: Record<string, unknown>): string[] {
  const raw = body['lock-tokens'];
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new BrokerError('InvalidOperation', "The request needs a non-empty 'lock-tokens' array.");
  }
  return listField(body, 'lock-tokens', MAX_MANAGEMENT_LOCK_TOKENS).map((t) =>
    Buffer.isBuffer(t) ? uuidBytesToString(t) : String(t).toLowerCase(),
  );
}

// com.microsoft:renew-lock → { expirations: timestamp[] }
const renewLock: Operation = async (broker, entity, body) => {
  const expirations: number[] = [];
  for (const token of lockTokens(body)) expirations.push(await broker.renewLock(token, entity));
  return ok({ expirations: amqpTypes.wrap_array(expirations, TIMESTAMP) });
};

// com.microsoft:update-disposition: how the SDK settles deferred messages and messages whose receiver
// link is gone. The SDK spells defer "defered".
const updateDisposition: Operation = async (broker, entity, body, txn) => {
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
  if (txn) {
    for (const token of lockTokens(body)) txn({ kind: 'settle', token, settlement: s, entityPath: entity });
    return ok();
  }
  try {
    for (const token of lockTokens(body)) await broker.settle(token, s, entity);
  } catch (err) {
    throw typeof body['session-id'] === 'string' ? sessionLockLost(err) : err;
  }
  return ok();
};

function sessionIdOf(body: Record<string, unknown>): string {
  const id = body['session-id'];
  if (typeof id !== 'string') throw new BrokerError('InvalidOperation', "The request needs a 'session-id' string.");
  return id;
}

// Message sessions: the lock renewal the SDK runs in the background, and the session state.
const renewSessionLock: Operation = async (broker, entity, body) => {
  const until = await broker.renewSessionLock(entity, sessionIdOf(body));
  return ok({ expiration: new Date(until) });
};

const getSessionState: Operation = async (broker, entity, body) => {
  const state = broker.getSessionState(entity, sessionIdOf(body));
  // The body map must be present even when there is no state (the SDK reads body['session-state']).
  return ok({ 'session-state': state ? Buffer.from(state) : null });
};

const setSessionState: Operation = async (broker, entity, body) => {
  const raw = body['session-state'];
  const state = Buffer.isBuffer(raw) ? raw : raw === null || raw === undefined ? null : Buffer.from(String(raw));
  await broker.setSessionState(entity, sessionIdOf(body), state);
  return ok();
};

// com.microsoft:get-message-sessions ("enumerate sessions") → { skip: int, 'sessions-ids': string[] }, or 204
// when the page is empty. The reply's skip is where the next page starts (the Java client sends it back).
const getMessageSessions: Operation = async (broker, entity, body) => {
  const since = body['last-updated-time'];
  const skip = intField(body, 'skip', { dflt: 0, min: 0, max: Number.MAX_SAFE_INTEGER });
  // A larger top is served a page of MAX_SESSIONS_PAGE; the reply's skip says where the next one starts.
  const top = intField(body, 'top', { dflt: MAX_SESSIONS_PAGE, min: 0, max: MAX_SESSIONS_PAGE, clamp: true });
  const ids = broker.listSessions(entity, since instanceof Date ? since.getTime() : 0, skip, top);
  if (!ids.length) return { statusCode: 204, statusDescription: 'No sessions' };
  return ok({ skip: amqpTypes.wrap_int(skip + ids.length), 'sessions-ids': amqpTypes.wrap_array(ids, STR32) });
};

/** AMQP type code of a string (str32-utf8), for typed arrays. */
const STR32 = 0xb1;

// com.microsoft:batch-delete-messages (SDK 7.10 deleteMessages / purgeMessages) → { 'message-count': int },
// the number deleted (0 included: the SDK reads a 200 body). `enqueued-time-utc` is the cut-off (the SDKs
// always send it, defaulting to now); a session receiver adds its `session-id`.
const batchDeleteMessages: Operation = async (broker, entity, body) => {
  const cutoff = body['enqueued-time-utc'];
  if (cutoff !== undefined && cutoff !== null && !(cutoff instanceof Date && !Number.isNaN(cutoff.getTime()))) {
    throw new BrokerError('InvalidOperation', "'enqueued-time-utc' must be a timestamp.");
  }
  // Not an integer: an argument error; an integer outside 1 … MAX_DELETE_MESSAGE_COUNT (or none: NaN) gets Azure's
  // own wording (checkDeleteCount in broker/messaging/batch-delete.ts), so it is read here without a range.
  const count = intField(body, 'message-count', { dflt: NaN, min: -Infinity, max: Infinity });
  const sessionId = typeof body['session-id'] === 'string' ? body['session-id'] : undefined;
  const deleted = await broker.deleteMessages(entity, {
    count,
    ...(cutoff instanceof Date ? { before: cutoff.getTime() } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
  });
  return ok({ 'message-count': amqpTypes.wrap_int(deleted) });
};

/** AMQP type code of a long, for typed arrays. */
const LONG = 0x81;

// com.microsoft:peek-message → { messages: [{ message: binary }] }, or 204 when there is nothing.
const peekMessage: Operation = async (broker, entity, body) => {
  const from = intField(body, 'from-sequence-number', { dflt: 1, min: 0, max: Number.MAX_SAFE_INTEGER, clamp: true });
  // Service Bus's peek "returns at most the requested number of messages": a larger count is served with
  // MAX_PEEK_MESSAGES (and the broker stops at MAX_PEEK_REPLY_BYTES), which the SDKs page on like any reply.
  const count = intField(body, 'message-count', { dflt: 1, min: 1, max: MAX_PEEK_MESSAGES, clamp: true });
  const sessionId = typeof body['session-id'] === 'string' ? body['session-id'] : undefined;
  // omit-message-body (the SDK's PeekMessagesOptions.omitMessageBody): everything but the body sections.
  const omitBody = body['omit-message-body'] === true;
  // Read and encoded PEEK_SLICE messages at a time, with a yield to the event loop between two slices, and no
  // more than MAX_PEEK_REPLY_BYTES of stored messages in all (peek is a snapshot: nothing is held meanwhile).
  const messages: { message: Buffer }[] = [];
  let next = from;
  let bytes = 0;
  while (messages.length < count && bytes < MAX_PEEK_REPLY_BYTES) {
    if (messages.length) await yieldToLoop();
    const slice = Math.min(PEEK_SLICE, count - messages.length);
    const found = broker.peek(entity, next, slice, sessionId);
    for (const { row, body: stored } of found) {
      messages.push({ message: encodeDelivery(stored, { row, deliveryCount: row.deliveryCount, messageState: messageStateCode(row), omitBody }) });
      bytes += stored.length;
    }
    if (found.length < slice) break;
    next = found[found.length - 1]!.row.seq + 1;
  }
  if (!messages.length) return { statusCode: 204, statusDescription: 'No messages' };
  return ok({ messages });
};

// com.microsoft:receive-by-sequence-number: deferred messages, locked in peek-lock mode (settle mode 1), with
// the lock token as an AMQP uuid in standard byte order.
const receiveBySequenceNumber: Operation = async (broker, entity, body, txn) => {
  // Service Bus: receiving is not part of a transaction (a message is received under its lock, then settled in one).
  if (txn) throw RECEIVE_IN_TRANSACTION;
  const seqs = sequenceNumbers(body, 'sequence-numbers', MAX_MANAGEMENT_SEQUENCE_NUMBERS);
  // AMQP's receiver-settle-mode (a uint): 0 receives and deletes, 1 locks (the default); nothing else exists.
  const peekLock = intField(body, 'receiver-settle-mode', { dflt: 1, min: 0, max: 1 }) === 1;
  const found = await broker.receiveDeferred(entity, seqs, peekLock ? 'peekLock' : 'receiveAndDelete');
  const messages = found.map(({ row, body: stored }) => {
    const message = encodeDelivery(stored, {
      row,
      deliveryCount: Math.max(0, row.deliveryCount - (peekLock ? 1 : 0)),
      lockedUntil: row.lock?.until,
      messageState: 1,
      ...(peekLock ? { lockToken: uuidStringToBytes(row.lock!.token) } : {}),
    });
    return peekLock ? { 'lock-token': amqpTypes.wrap_uuid(uuidStringToBytes(row.lock!.token)), message } : { message };
  });
  return ok({ messages });
};

// com.microsoft:schedule-message: each entry's `message` is a complete encoded message carrying
// x-opt-scheduled-enqueue-time; the reply lists the sequence numbers as longs. In a transaction (.NET's
// ScheduleMessageAsync in a TransactionScope) the numbers are reserved now and the messages stored on commit.
const scheduleMessage: Operation = async (broker, entity, body, txn) => {
  const entries = listField(body, 'messages', MAX_SCHEDULE_MESSAGES) as Record<string, unknown>[];
  const msgs = entries.map((e) => {
    const raw = e.message;
    if (!Buffer.isBuffer(raw)) throw new BrokerError('InvalidOperation', "Each scheduled entry needs a binary 'message'.");
    if (raw.length > broker.maxMessageSize) {
      throw messageTooLarge(raw.length, broker.maxMessageSize);
    }
    return parseIncoming(raw);
  });
  let seqs: number[];
  if (txn) {
    const op: TxnOp = { kind: 'schedule', path: entity, msgs, seqs: [] };
    txn(op);
    seqs = op.seqs;
  } else {
    seqs = await broker.send(entity, msgs);
  }
  return ok({ 'sequence-numbers': amqpTypes.wrap_array(seqs, LONG) });
};

// com.microsoft:cancel-scheduled-message.
const cancelScheduledMessage: Operation = async (broker, entity, body, txn) => {
  const seqs = sequenceNumbers(body, 'sequence-numbers', MAX_MANAGEMENT_SEQUENCE_NUMBERS);
  if (txn) {
    txn({ kind: 'cancelScheduled', path: entity, seqs });
    return ok();
  }
  await broker.cancelScheduled(entity, seqs);
  return ok();
};

const OPERATIONS: Record<string, Operation> = {
  'com.microsoft:renew-lock': renewLock,
  'com.microsoft:update-disposition': updateDisposition,
  'com.microsoft:peek-message': peekMessage,
  'com.microsoft:receive-by-sequence-number': receiveBySequenceNumber,
  'com.microsoft:schedule-message': scheduleMessage,
  'com.microsoft:cancel-scheduled-message': cancelScheduledMessage,
  'com.microsoft:renew-session-lock': renewSessionLock,
  'com.microsoft:get-session-state': getSessionState,
  'com.microsoft:set-session-state': setSessionState,
  'com.microsoft:get-message-sessions': getMessageSessions,
  'com.microsoft:batch-delete-messages': batchDeleteMessages,
  'com.microsoft:add-rule': (b, e, body) => ruleOperation(b, e, 'com.microsoft:add-rule', body),
  'com.microsoft:remove-rule': (b, e, body) => ruleOperation(b, e, 'com.microsoft:remove-rule', body),
  'com.microsoft:enumerate-rules': (b, e, body) => ruleOperation(b, e, 'com.microsoft:enumerate-rules', body),
};

/** Runs one management request against `entity` (after `authorize`) and builds the reply (never throws). */
export async function handleManagement(
  broker: MessagingPort,
  entity: string,
  request: RheaMessage,
  log: Logger,
  authorize: (operation: string) => void = () => undefined,
  txn?: StageInTransaction,
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
  // Stored as sent, each value with its AMQP type (typed-patch.ts).
  if (body['properties-to-modify']) body['properties-to-modify'] = typedBodyField(request, 'properties-to-modify') ?? body['properties-to-modify'];
  try {
    authorize(operation);
    return await op(broker, entity, body, txn);
  } catch (err) {
    const e = toAmqpError(err);
    log.debug({ entity, operation, condition: e.condition }, 'management request failed');
    return { statusCode: toStatusCode(err), statusDescription: e.description, errorCondition: e.condition };
  }
}
