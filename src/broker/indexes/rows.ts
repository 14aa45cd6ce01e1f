// Rows: how a new one is made, how settlement changes merge into one, and copies (a row handed to the store
// or to a consumer is a snapshot: the in-memory row keeps changing).

import { createHash } from 'node:crypto';
import type { QueueState } from './queue-state.js';
import type { IncomingMessage, MessageRow } from '../types.js';

/** A deep copy of a row (its lock and props are the only nested values). */
export function cloneRow(row: MessageRow): MessageRow {
  const c: MessageRow = { ...row };
  if (row.lock) c.lock = { ...row.lock };
  if (row.props) c.props = { ...row.props };
  return c;
}

/** A new row for a message stored in `q` under `seq`. */
export function newRow(q: QueueState, m: IncomingMessage, seq: number, now: number, topicTtlMs?: number | null): MessageRow {
  const scheduled = m.scheduledAt !== undefined && m.scheduledAt > now;
  // A scheduled message is enqueued at its scheduled time: that is its EnqueuedTimeUtc, and its time to live
  // runs from there (Service Bus: ExpiresAt = EnqueuedTime + TimeToLive).
  const enqueuedAt = scheduled ? m.scheduledAt! : now;
  // The entity's (and for a subscription, the topic's) DefaultMessageTimeToLive caps the message's own TTL:
  // the smallest wins.
  const ttls = [m.ttlMs, q.settings.defaultMessageTtlMs, topicTtlMs].filter((t): t is number => typeof t === 'number' && t > 0);
  let expiresAt = ttls.length ? enqueuedAt + Math.min(...ttls) : null;
  if (m.absoluteExpiry !== undefined && m.ttlMs === undefined) {
    expiresAt = expiresAt === null ? m.absoluteExpiry : Math.min(expiresAt, m.absoluteExpiry);
  }
  const row: MessageRow = {
    seq,
    state: scheduled ? 'scheduled' : 'active',
    deliveryCount: 0,
    enqueuedAt,
    expiresAt,
    messageId: m.messageId,
    size: m.body.length,
  };
  if (scheduled) row.scheduledAt = m.scheduledAt;
  if (m.sessionId !== undefined) row.sessionId = m.sessionId;
  if (m.patch?.props) row.props = { ...m.patch.props };
  if (m.patch?.sys) row.sys = { ...m.patch.sys };
  if (m.patch?.deadLetterSource) row.deadLetterSource = m.patch.deadLetterSource;
  return row;
}

/**
 * Makes `row` a dead-letter queue's row: a dead-letter queue ignores TTL, so it never expires there, but it keeps
 * reporting the expiry it had (Service Bus moves the message with its TimeToLive and ExpiresAt).
 */
export function ignoreTtl(row: MessageRow): void {
  if (row.expiresAt !== null) row.reportedExpiry = row.expiresAt;
  row.expiresAt = null;
}

/**
 * Takes back the delivery counted when the current lock was taken. Deliveries are counted at lock time, so an
 * attempt cut short by a crash still counts; a lock that ends in a way Service Bus does not treat as a failed
 * delivery (an explicit dead-letter; anything but complete in a dead-letter queue) is un-counted here.
 */
export function uncountDelivery(row: MessageRow): void {
  row.deliveryCount = Math.max(0, row.deliveryCount - 1);
}

/** Merges property changes into a row, skipping nulls (the SDK sends null for values it was not given). */
export function mergeProps(row: MessageRow, props: Record<string, unknown> | undefined): void {
  if (!props) return;
  for (const [k, v] of Object.entries(props)) {
    // The JS SDK sends null for a dead-letter reason it was not given; null means "leave unset".
    if (v === null || v === undefined) continue;
    (row.props ??= {})[k] = v;
  }
}

/** The DeadLetterReason / DeadLetterErrorDescription properties. */
export function reasonProps(reason?: string, description?: string): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  if (reason != null) p.DeadLetterReason = reason;
  if (description != null) p.DeadLetterErrorDescription = description;
  return p;
}

/** The opaque, bounded key under which a message-id is remembered for duplicate detection. */
export function dedupKey(messageId: string): string {
  return createHash('sha1').update(messageId).digest('base64');
}
