// Message bytes in and out. A message is stored as the bytes the client sent (so every AMQP type survives exactly:
// rhea's decode → encode would turn a ulong into a uint or a symbol into a string) and, at delivery, only the sections
// the broker owns are rewritten: the header (the effective TTL, delivery-count), the properties' absolute-expiry-time
// and creation-time (the broker's expiry, not the sender's clock), the message annotations (x-opt-sequence-number,
// x-opt-enqueued-time, x-opt-locked-until as long / timestamp / timestamp) and, when a settlement changed them, the
// application properties (docs/wire-contract.md, "Messages delivered"). The other properties, body and footer
// are copied byte for byte.

import { randomUUID } from 'node:crypto';
import { reportedState, type DeliveredMessage, type IncomingMessage } from '../broker/types.js';
import { filterView } from './filter-view.js';
import { readIncoming, type IncomingView } from './incoming-view.js';
import { effectiveTtl, encodeStamped, insertMessageId, propertiesWithExpiry } from './message-bytes.js';
import {
  types,
  HEADER,
  DELIVERY_ANNOTATIONS,
  MESSAGE_ANNOTATIONS,
  PROPERTIES,
  APPLICATION_PROPERTIES,
  DATA,
  AMQP_VALUE,
  splitSections,
  dataContent,
  encodeSection,
  mapEntries,
  encodeMap,
  keyName,
  type Typed,
  type Section,
} from './sections.js';

/** The Service Bus batch message format: one data section per inner message (docs/wire-contract.md, "Sender links"). */
export const BATCH_FORMAT = 0x80013700;

/** Messages extracted from one transfer: one for format 0, one per data section for a batch. */
export function splitTransfer(payload: Buffer, format: number): Buffer[] {
  if (format !== BATCH_FORMAT) return [payload];
  return splitSections(payload)
    .filter((s) => s.code === DATA)
    .map((s) => dataContent(payload, s));
}

/**
 * What the broker needs from one incoming encoded message, from one pass over its bytes (`readIncoming`); assigns a
 * message-id if it has none. The stored bytes are the client's, but for that id.
 */
export function parseIncoming(raw: Buffer): IncomingMessage {
  const view = readIncoming(raw);
  const decoded = view.fields;
  let body = raw;
  let messageId = decoded.message_id;
  if (messageId === undefined || messageId === null) {
    // Every Service Bus message has a message-id; the JS SDK's lock renewer is keyed by it (docs/wire-contract.md,
    // "Sender links").
    messageId = randomUUID().replace(/-/g, '');
    body = insertMessageId(view, messageId as string) ?? withMessageIdGeneral(view, messageId as string);
  }
  const id = messageId;
  const m: IncomingMessage = { body, messageId: idToString(messageId), view: () => filterView(view, id, body.length) };
  if (typeof decoded.group_id === 'string') m.sessionId = decoded.group_id;
  if (typeof decoded.ttl === 'number') m.ttlMs = decoded.ttl;
  if (decoded.absolute_expiry_time instanceof Date) m.absoluteExpiry = decoded.absolute_expiry_time.getTime();
  const sched = decoded.message_annotations?.['x-opt-scheduled-enqueue-time'];
  if (sched instanceof Date) m.scheduledAt = sched.getTime();
  else if (typeof sched === 'number') m.scheduledAt = sched;
  return m;
}

function idToString(id: unknown): string {
  if (Buffer.isBuffer(id)) return id.length === 16 ? id.toString('hex') : id.toString('base64');
  return String(id);
}

/**
 * The message of `view` with a message-id, its properties section re-encoded through rhea's codec (inserted if there
 * is none); for a properties encoding the direct writer (`insertMessageId`) does not read.
 */
export function withMessageIdGeneral(view: IncomingView, id: string): Buffer {
  const { raw, properties: props } = view;
  const fields: Typed[] = props ? [...(new types.Reader(raw.subarray(props.start, props.end)).read().value as Typed[])] : [];
  fields[0] = types.wrap_string(id);
  for (let i = 0; i < fields.length; i++) fields[i] ??= types.wrap(null);
  const encoded = encodeSection(PROPERTIES, types.wrap_list(fields));
  if (props) return Buffer.concat([raw.subarray(0, props.start), encoded, raw.subarray(props.end)]);
  return Buffer.concat([raw.subarray(0, view.propertiesAt), encoded, raw.subarray(view.propertiesAt)]);
}

/** What a delivery adds to a stored message. */
export interface DeliveryStamp {
  /** The message's row as the wire shows it (a `MessageRow` is one). */
  row: DeliveredMessage;
  /**
   * Previous delivery attempts, as the wire's zero-based header delivery-count (docs/wire-contract.md, "Messages
   * delivered").
   */
  deliveryCount: number;
  /** Locked-until for peek-lock deliveries and receive-by-sequence-number results. */
  lockedUntil?: number;
  /** `x-opt-message-state`: 0 active, 1 deferred, 2 scheduled (for peek). */
  messageState?: number;
  /** Leave out the body sections (peek-message's `omit-message-body`); the footer stays. */
  omitBody?: boolean;
  /**
   * The lock token (16 bytes, standard order) as delivery-annotation `x-opt-lock-token`, for messages returned in
   * a `$management` response, which have no delivery tag. Service Bus documents it there, and the Python SDK 7.x
   * reads a deferred message's lock token only from it.
   */
  lockToken?: Uint8Array;
}

const STATE_CODES = { active: 0, deferred: 1, scheduled: 2 } as const;

/** `x-opt-message-state` of a message: 0 active, 1 deferred, 2 scheduled (the SDK's `state`). */
export function messageStateCode(row: DeliveredMessage): number {
  return STATE_CODES[reportedState(row)];
}

const OWNED_ANNOTATIONS = new Set([
  'x-opt-deadletter-source',
  'x-opt-sequence-number',
  'x-opt-enqueued-time',
  'x-opt-locked-until',
  'x-opt-message-state',
]);

/** True when `o` has an own enumerable key (without building the key list). */
function hasKeys(o: object | undefined): boolean {
  for (const k in o) if (Object.hasOwn(o!, k)) return true;
  return false;
}

/** Builds the bytes sent to a receiver: the stored message with the broker's sections rewritten. */
export function encodeDelivery(stored: Uint8Array, stamp: DeliveryStamp): Buffer {
  // A view, not a copy: the stored bytes are only read.
  const raw = Buffer.isBuffer(stored) ? stored : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  // Every delivery but those carrying settlement changes or a management lock token takes the direct encoder.
  if (!stamp.lockToken && !hasKeys(stamp.row.sys) && !hasKeys(stamp.row.props)) {
    const fast = encodeStamped(raw, stamp);
    if (fast) return fast;
  }
  return encodeGeneral(raw, stamp);
}

/** The delivery bytes built through rhea's section codec: any shape, settlement patches, a lock token. */
export function encodeGeneral(raw: Buffer, stamp: DeliveryStamp): Buffer {
  const sections = splitSections(raw);
  const find = (code: number): Section | undefined => sections.find((s) => s.code === code);
  const parts: Buffer[] = [encodeHeader(find(HEADER), stamp.deliveryCount, effectiveTtl(stamp.row))];
  if (stamp.lockToken) {
    parts.push(encodeMap(DELIVERY_ANNOTATIONS, [[types.wrap_symbol('x-opt-lock-token'), types.wrap_uuid(Buffer.from(stamp.lockToken))]]));
  }

  const ann = mapEntries(find(MESSAGE_ANNOTATIONS)).filter(([k]) => !OWNED_ANNOTATIONS.has(keyName(k)));
  ann.push([types.wrap_symbol('x-opt-sequence-number'), types.wrap_long(stamp.row.seq)]);
  ann.push([types.wrap_symbol('x-opt-enqueued-time'), types.wrap_timestamp(stamp.row.enqueuedAt)]);
  if (stamp.lockedUntil !== undefined) {
    ann.push([types.wrap_symbol('x-opt-locked-until'), types.wrap_timestamp(stamp.lockedUntil)]);
  }
  if (stamp.messageState !== undefined) {
    ann.push([types.wrap_symbol('x-opt-message-state'), types.wrap_int(stamp.messageState)]);
  }
  if (stamp.row.deadLetterSource) {
    ann.push([types.wrap_symbol('x-opt-deadletter-source'), types.wrap_string(stamp.row.deadLetterSource)]);
  }
  parts.push(encodeMap(MESSAGE_ANNOTATIONS, ann));

  const found = find(PROPERTIES);
  const props = stamp.row.sys && Object.keys(stamp.row.sys).length ? patchProperties(found, stamp.row.sys) : found && raw.subarray(found.start, found.end);
  // The broker's absolute-expiry-time, written as the direct encoder writes it (an unreadable section stays as sent).
  if (props) parts.push(propertiesWithExpiry(props, 0, props.length, stamp.row) ?? props);
  else parts.push(propertiesWithExpiry(raw, -1, 0, stamp.row)!);

  const app = find(APPLICATION_PROPERTIES);
  if (stamp.row.props && Object.keys(stamp.row.props).length) {
    const patch = stamp.row.props;
    // Application property names are case-insensitive in Service Bus: a change replaces any casing of it.
    const folded = new Set(Object.keys(patch).map((k) => k.toLowerCase()));
    const entries = mapEntries(app).filter(([k]) => !folded.has(keyName(k).toLowerCase()));
    for (const [k, v] of Object.entries(patch)) {
      const typed = patchValue(v);
      if (typed) entries.push([types.wrap_string(k), typed]);
    }
    parts.push(encodeMap(APPLICATION_PROPERTIES, entries));
  } else if (app) {
    parts.push(raw.subarray(app.start, app.end));
  }

  // Body sections and footer, unchanged; delivery annotations are per hop and are not forwarded.
  for (const s of sections) {
    if (!(s.code > APPLICATION_PROPERTIES || s.code < 0)) continue;
    if (stamp.omitBody && s.code >= DATA && s.code <= AMQP_VALUE) continue;
    parts.push(raw.subarray(s.start, s.end));
  }
  return Buffer.concat(parts);
}

/** The header with the sender's durable / priority / first-acquirer, the effective TTL and our delivery-count. */
function encodeHeader(header: Section | undefined, deliveryCount: number, ttl: number | null): Buffer {
  const old = (header?.value.value as Typed[] | undefined) ?? [];
  const field = (i: number): Typed | undefined => {
    const f = old[i];
    return f && f.value !== null && f.value !== undefined ? f : undefined;
  };
  // Always present, even with count 0: the SDKs read null metadata without it (docs/wire-contract.md, "Messages
  // delivered").
  const fields = [
    field(0) ?? types.wrap_boolean(false),
    field(1) ?? types.wrap_ubyte(4),
    ttl === null ? types.wrap(null) : types.wrap_uint(ttl),
    field(3) ?? types.wrap_boolean(false),
    types.wrap_uint(deliveryCount),
  ];
  return encodeSection(HEADER, types.wrap_list(fields));
}

/** Index in the AMQP properties list of each system property a rule action may set (Service Bus names). */
const PROPERTY_FIELDS: Record<string, { index: number; symbol?: boolean }> = {
  messageid: { index: 0 },
  to: { index: 2 },
  label: { index: 3 },
  subject: { index: 3 },
  replyto: { index: 4 },
  correlationid: { index: 5 },
  contenttype: { index: 6, symbol: true },
  sessionid: { index: 10 },
  replytosessionid: { index: 12 },
};

/** The properties section with a rule action's system-property changes applied. */
function patchProperties(section: Section | undefined, sys: Record<string, unknown>): Buffer {
  const fields: Typed[] = section ? [...(section.value.value as Typed[])] : [];
  for (const [name, v] of Object.entries(sys)) {
    const f = PROPERTY_FIELDS[name.toLowerCase()];
    if (!f) continue;
    const plain = v && typeof v === 'object' && '$type' in v ? (v as unknown as { value: unknown }).value : v;
    fields[f.index] =
      plain === null || plain === undefined || (typeof v === 'object' && v !== null && '$remove' in v)
        ? types.wrap(null)
        : f.symbol
          ? types.wrap_symbol(String(plain))
          : types.wrap_string(String(plain));
  }
  for (let i = 0; i < fields.length; i++) fields[i] ??= types.wrap(null);
  return encodeSection(PROPERTIES, types.wrap_list(fields));
}

/**
 * The AMQP value of a property change: a plain JS value (from a settlement), `{ $type, value }` for a typed
 * value a rule action produced (64-bit integers as decimal text), or `{ $remove: true }` (null result).
 */
function patchValue(v: unknown): Typed | null {
  if (v === null || typeof v !== 'object' || Buffer.isBuffer(v) || v instanceof Date) return types.wrap(v);
  const o = v as { $remove?: boolean; $type?: string; value?: unknown };
  if (o.$remove) return null;
  if (!o.$type) return types.wrap(v);
  const x = o.value;
  const t = types as unknown as Record<string, (v: unknown) => Typed>;
  switch (o.$type) {
    case 'string':
      return types.wrap_string(String(x));
    case 'symbol':
      return types.wrap_symbol(String(x));
    case 'boolean':
      return types.wrap_boolean(Boolean(x));
    case 'long':
    case 'ulong': {
      const big = BigInt(String(x));
      if (big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER)) {
        return o.$type === 'long' ? types.wrap_long(Number(big)) : types.wrap_ulong(Number(big));
      }
      const b = Buffer.alloc(8);
      if (o.$type === 'long') b.writeBigInt64BE(big);
      else b.writeBigUInt64BE(big);
      return t[`wrap_${o.$type}`]!(b);
    }
    case 'int':
    case 'uint':
    case 'short':
    case 'ushort':
    case 'byte':
    case 'ubyte':
    case 'double':
    case 'float':
      return t[`wrap_${o.$type}`]!(Number(x));
    case 'timestamp':
      return types.wrap_timestamp(Number(x));
    case 'uuid':
      return t.wrap_uuid!(Buffer.from(String(x).replace(/-/g, ''), 'hex'));
    case 'binary':
      return t.wrap_binary!(Buffer.from(String(x), 'base64'));
    default:
      return types.wrap(x ?? null);
  }
}
