// How the admin API shows a stored message: under the field names of the SDK's ServiceBusReceivedMessage
// (`messageId`, `correlationId`, `enqueuedTimeUtc`, `deadLetterReason`, ...), so what a user reads here is
// what their receiver will see, plus the broker's own `lockHolder`, `size` and a short body preview.
// Properties have settlement changes merged, exactly as a receiver would see them. Only this file and the
// redrive filter decode message bytes for the HTTP layer, which gets these functions from the composition
// root (app.ts) so that it never imports rhea itself.

import rhea from './rhea.js';
import type { BrowsedMessage } from '../broker/messaging-port.js';
import { encodeDelivery } from './codec.js';

/** Longest body preview, in characters. */
export const PREVIEW_CHARS = 1024;

/**
 * One message as the admin API returns it. Every field is always present, `null` when the message does not
 * carry it; times are ISO 8601 UTC text (the SDK's `Date`s as JSON writes them).
 */
export interface MessageView {
  sequenceNumber: number;
  messageId: string;
  correlationId: unknown;
  contentType: string | null;
  subject: string | null;
  to: string | null;
  replyTo: string | null;
  replyToSessionId: string | null;
  sessionId: string | null;
  partitionKey: string | null;
  /** The effective time to live in ms, as a receiver gets it (null when the message never expires). */
  timeToLive: number | null;
  scheduledEnqueueTimeUtc: string | null;
  /** The SDK's `active`, `deferred` or `scheduled`, or `locked` for an active message under a peek-lock. */
  state: string;
  deliveryCount: number;
  enqueuedTimeUtc: string;
  /** When the message expires; null when it never does. */
  expiresAtUtc: string | null;
  lockedUntilUtc: string | null;
  /** The connection and link holding the lock. */
  lockHolder: string | null;
  size: number;
  deadLetterReason: string | null;
  deadLetterErrorDescription: string | null;
  deadLetterSource: string | null;
  applicationProperties: Record<string, unknown>;
  /** Body as text (UTF-8, JSON for AMQP values), cut to PREVIEW_CHARS; `binary` bodies are base64. */
  bodyPreview: string;
  bodyEncoding: 'text' | 'json' | 'base64';
  bodyTruncated: boolean;
}

/** The SDK's name for each text AMQP property it surfaces on a received message (as its `fromRheaMessage`). */
const SDK_PROPERTY_NAMES = {
  contentType: 'content_type',
  subject: 'subject',
  to: 'to',
  replyTo: 'reply_to',
  replyToSessionId: 'reply_to_group_id',
  sessionId: 'group_id',
} as const;

interface DecodedMessage extends Record<string, unknown> {
  application_properties?: Record<string, unknown>;
  body?: unknown;
}

/** Decodes stored bytes with rhea; a broken message decodes to an empty one rather than failing a listing. */
function decode(bytes: Uint8Array): DecodedMessage {
  try {
    return rhea.message.decode(Buffer.from(bytes)) as unknown as DecodedMessage;
  } catch {
    return {};
  }
}

/** Application properties of stored bytes (without settlement changes), for the redrive `where` filter. */
export function storedAppProperties(body: Uint8Array): Record<string, unknown> {
  return decode(body).application_properties ?? {};
}

/** JSON-safe form of an AMQP value: Buffers as base64, Dates as ISO text, bigints as text. */
function plain(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

function isText(b: Buffer): boolean {
  const s = b.toString('utf8');
  // Replacement characters or control bytes other than whitespace mean the bytes were not text.
  // eslint-disable-next-line no-control-regex -- matching control bytes is the point here
  return !/[\uFFFD\u0000-\u0008\u000E-\u001F]/.test(s);
}

/** A body preview: data sections as text (or base64), AMQP values and sequences as JSON. */
function preview(body: unknown): { text: string; encoding: MessageView['bodyEncoding'] } {
  const section = body as { typecode?: number; content?: unknown } | undefined;
  let value = body;
  if (section && typeof section === 'object' && typeof section.typecode === 'number') value = section.content;
  if (Array.isArray(value) && value.every(Buffer.isBuffer)) value = Buffer.concat(value as Buffer[]);
  if (Buffer.isBuffer(value)) {
    return isText(value)
      ? { text: value.toString('utf8'), encoding: 'text' }
      : { text: value.toString('base64'), encoding: 'base64' };
  }
  if (typeof value === 'string') return { text: value, encoding: 'text' };
  return { text: JSON.stringify(plain(value)) ?? 'null', encoding: 'json' };
}

const iso = (ms: number | null | undefined): string | null =>
  typeof ms === 'number' ? new Date(ms).toISOString() : null;

/** Builds the admin API's view of a browsed message. */
export function messageView(m: BrowsedMessage): MessageView {
  const { row } = m;
  // encodeDelivery merges settlement changes (abandon / dead-letter properties) as a receiver sees them.
  const decoded = decode(encodeDelivery(m.body, { row, deliveryCount: Math.max(0, row.deliveryCount - 1) }));
  const str = (v: unknown): string | null => (v === undefined || v === null ? null : String(v));
  const sys = {} as Record<keyof typeof SDK_PROPERTY_NAMES, string | null>;
  for (const [sdk, amqp] of Object.entries(SDK_PROPERTY_NAMES) as [keyof typeof SDK_PROPERTY_NAMES, string][])
    sys[sdk] = str(decoded[amqp]);
  const annotations = (decoded.message_annotations ?? {}) as Record<string, unknown>;
  const app = (plain(decoded.application_properties ?? {}) ?? {}) as Record<string, unknown>;
  const p = preview(decoded.body);
  const scheduled = row.scheduledAt ?? annotations['x-opt-scheduled-enqueue-time'];
  return {
    sequenceNumber: row.seq,
    messageId: row.messageId,
    // Correlation ids may be binary, a uuid or a number, as message ids may.
    correlationId: decoded.correlation_id === undefined ? null : plain(decoded.correlation_id),
    ...sys,
    partitionKey: str(annotations['x-opt-partition-key']),
    timeToLive: typeof decoded.ttl === 'number' ? decoded.ttl : null,
    scheduledEnqueueTimeUtc: iso(scheduled instanceof Date ? scheduled.getTime() : (scheduled as number | undefined)),
    state: row.state,
    deliveryCount: row.deliveryCount,
    enqueuedTimeUtc: new Date(row.enqueuedAt).toISOString(),
    expiresAtUtc: iso(row.expiresAt),
    lockedUntilUtc: iso(row.lock?.until),
    lockHolder: m.lockHolder ?? null,
    size: row.size,
    // Like the SDK, read from the merged application properties a dead-letter settlement wrote.
    deadLetterReason: str(app.DeadLetterReason),
    deadLetterErrorDescription: str(app.DeadLetterErrorDescription),
    deadLetterSource: row.deadLetterSource ?? null,
    applicationProperties: app,
    bodyPreview: p.text.slice(0, PREVIEW_CHARS),
    bodyEncoding: p.encoding,
    bodyTruncated: p.text.length > PREVIEW_CHARS,
  };
}

/** What a message-action filter reads of a message (admin API, message-actions-api.ts). */
export interface FilterFields {
  subject: string | null;
  deadLetterReason: string | null;
  applicationProperties: Record<string, unknown>;
}

/**
 * The fields a message-action filter matches on, with settlement changes merged as a receiver sees them, at the
 * cost of one decode: the stored bytes are re-encoded only when a settlement or rule action changed them.
 */
export function filterFields(m: BrowsedMessage): FilterFields {
  const { row } = m;
  const bytes = row.props || row.sys ? encodeDelivery(m.body, { row, deliveryCount: 0 }) : m.body;
  const decoded = decode(bytes);
  const app = (plain(decoded.application_properties ?? {}) ?? {}) as Record<string, unknown>;
  const str = (v: unknown): string | null => (v === undefined || v === null ? null : String(v));
  return { subject: str(decoded.subject), deadLetterReason: str(app.DeadLetterReason), applicationProperties: app };
}

/** One message in full, for the explorer's detail view: its view, the whole body and each property's type. */
export interface MessageDetail extends MessageView {
  /** The whole body, encoded as `bodyEncoding` says (base64 for bytes that are not text). */
  body: string;
  /** The AMQP type of each application property as the SDK surfaces it (string, number, boolean, …). */
  applicationPropertyTypes: Record<string, string>;
}

/** The type name of a decoded application property value. */
function typeOf(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Buffer.isBuffer(v)) return 'binary';
  if (v instanceof Date) return 'timestamp';
  if (typeof v === 'bigint') return 'long';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'double';
  if (Array.isArray(v)) return 'list';
  return typeof v === 'object' ? 'map' : typeof v;
}

/** Builds the explorer's full view of one message (the whole body, not a preview). */
export function messageDetail(m: BrowsedMessage): MessageDetail {
  const decoded = decode(encodeDelivery(m.body, { row: m.row, deliveryCount: Math.max(0, m.row.deliveryCount - 1) }));
  const types = Object.fromEntries(
    Object.entries(decoded.application_properties ?? {}).map(([k, v]) => [k, typeOf(v)]),
  );
  return { ...messageView(m), body: preview(decoded.body).text, applicationPropertyTypes: types };
}
