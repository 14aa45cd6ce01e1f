// How the admin API shows a stored message: the row's state and lock, the AMQP properties and application
// properties (with settlement changes merged, exactly as a receiver would see them) and a short body
// preview. Only this file and the redrive filter decode message bytes in the HTTP layer.

import rhea from 'rhea';
import type { BrowsedMessage } from '../broker/broker.js';
import { encodeDelivery } from '../amqp/codec.js';

/** Longest body preview, in characters. */
export const PREVIEW_CHARS = 1024;

/** One message as the admin API returns it. */
export interface MessageView {
  sequenceNumber: number;
  messageId: string;
  state: string;
  deliveryCount: number;
  enqueuedAt: string;
  expiresAt: string | null;
  scheduledAt: string | null;
  lockedUntil: string | null;
  lockHolder: string | null;
  size: number;
  deadLetterReason: string | null;
  deadLetterErrorDescription: string | null;
  properties: Record<string, unknown>;
  applicationProperties: Record<string, unknown>;
  /** Body as text (UTF-8, JSON for AMQP values), cut to PREVIEW_CHARS; `binary` bodies are base64. */
  bodyPreview: string;
  bodyEncoding: 'text' | 'json' | 'base64';
  bodyTruncated: boolean;
}

const PROPERTY_NAMES = [
  'message_id',
  'user_id',
  'to',
  'subject',
  'reply_to',
  'correlation_id',
  'content_type',
  'content_encoding',
  'absolute_expiry_time',
  'creation_time',
  'group_id',
  'reply_to_group_id',
] as const;

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
  const properties: Record<string, unknown> = {};
  for (const name of PROPERTY_NAMES)
    if (decoded[name] !== undefined && decoded[name] !== null) properties[name] = plain(decoded[name]);
  const app = (plain(decoded.application_properties ?? {}) ?? {}) as Record<string, unknown>;
  const p = preview(decoded.body);
  const str = (v: unknown): string | null => (v === undefined || v === null ? null : String(v));
  return {
    sequenceNumber: row.seq,
    messageId: row.messageId,
    state: row.state,
    deliveryCount: row.deliveryCount,
    enqueuedAt: new Date(row.enqueuedAt).toISOString(),
    expiresAt: iso(row.expiresAt),
    scheduledAt: iso(row.scheduledAt),
    lockedUntil: iso(row.lock?.until),
    lockHolder: m.lockHolder ?? null,
    size: row.size,
    deadLetterReason: str(row.props?.DeadLetterReason),
    deadLetterErrorDescription: str(row.props?.DeadLetterErrorDescription),
    properties,
    applicationProperties: app,
    bodyPreview: p.text.slice(0, PREVIEW_CHARS),
    bodyEncoding: p.encoding,
    bodyTruncated: p.text.length > PREVIEW_CHARS,
  };
}
