// The common case of a delivery's bytes, written straight into one buffer: the stored message with a new header
// (the sender's flags, the effective TTL, our delivery-count), the properties with the broker's
// absolute-expiry-time, and the message annotations re-encoded around the broker's own
// (x-opt-sequence-number, x-opt-enqueued-time, x-opt-locked-until, x-opt-message-state, x-opt-deadletter-source; per
// docs/wire-contract.md, "Messages delivered"); everything else is copied byte for byte. The annotation keys are
// encoded once at start-up. Going through rhea's Reader and Writer instead decoded both sections into objects and
// encoded them again into two 1 KiB scratch buffers per delivery: about 8 KB of garbage for each 1 KiB message,
// which drove the collector into the latency tail of the paced benchmark. The output is byte-for-byte what the
// general encoder in codec.ts produces (test/unit/message-bytes.test.ts compares the two).

import { expiryReported, type DeliveredMessage } from '../broker/types.js';
import type { IncomingView } from './incoming-view.js';
import {
  HEADER,
  MESSAGE_ANNOTATIONS,
  PROPERTIES,
  APPLICATION_PROPERTIES,
  DATA,
  AMQP_VALUE,
  descriptorAt,
  skipValue,
} from './sections.js';

/** What this path needs from a delivery (a subset of codec.ts's DeliveryStamp, which satisfies it). */
export interface FastStamp {
  row: Pick<DeliveredMessage, 'seq' | 'enqueuedAt' | 'expiresAt' | 'reportedExpiry' | 'deadLetterSource'>;
  deliveryCount: number;
  lockedUntil?: number;
  messageState?: number;
  omitBody?: boolean;
}

/** A symbol (sym8) encoded once. */
function symbol(name: string): Buffer {
  const text = Buffer.from(name, 'ascii');
  return Buffer.concat([Buffer.from([0xa3, text.length]), text]);
}

const SEQUENCE_NUMBER = symbol('x-opt-sequence-number');
const ENQUEUED_TIME = symbol('x-opt-enqueued-time');
const LOCKED_UNTIL = symbol('x-opt-locked-until');
const MESSAGE_STATE = symbol('x-opt-message-state');
const DEADLETTER_SOURCE = symbol('x-opt-deadletter-source');

/** The annotations the broker owns: a sender's copy of one is dropped (its text, for comparing keys in place). */
const OWNED = [SEQUENCE_NUMBER, ENQUEUED_TIME, LOCKED_UNTIL, MESSAGE_STATE, DEADLETTER_SOURCE].map((b) => b.subarray(2));

/** Header fields 0-3 when the sender left them out or null: durable false, priority 4, ttl null, first-acquirer false. */
const HEADER_DEFAULTS = [Buffer.from([0x42]), Buffer.from([0x50, 0x04]), Buffer.from([0x40]), Buffer.from([0x42])];

/** Index of absolute-expiry-time in the properties list (AMQP 1.0 §3.2.4). */
const ABSOLUTE_EXPIRY = 8;

/**
 * The header ttl a delivery carries: the effective TTL, its expiry minus its enqueued time (Service Bus writes the
 * TTL it applied, the entity's default for a message without one or with a longer one), or null when it never
 * expires or the TTL does not fit the header's uint milliseconds (its absolute-expiry-time still says when).
 */
export function effectiveTtl(row: FastStamp['row']): number | null {
  const expiry = expiryReported(row);
  if (expiry === null) return null;
  const ttl = Math.max(0, expiry - row.enqueuedAt);
  return ttl <= 0xffff_ffff ? ttl : null;
}

/** A uint as rhea writes it: uint0, smalluint or uint. */
function uintBytes(n: number): Buffer {
  if (n === 0) return Buffer.from([0x43]);
  if (n <= 255) return Buffer.from([0x52, n]);
  const b = Buffer.allocUnsafe(5);
  b[0] = 0x70;
  b.writeUInt32BE(n, 1);
  return b;
}

/** Described-section prefix (0x00, smallulong code) and list32/map32 constructor: 3 + 1 + 4 (size) + 4 (count). */
const COMPOUND_PREFIX = 12;

/** Writes a described section's prefix at `at`: descriptor `code`, a list32 or map32 of `len` bytes in all holding `count` items. */
function writeSectionPrefix(out: Buffer, at: number, code: number, list: boolean, len: number, count: number): number {
  out[at++] = 0x00;
  out[at++] = 0x53;
  out[at++] = code;
  out[at++] = list ? 0xd0 : 0xd1;
  at = out.writeUInt32BE(len - 8, at);
  return out.writeUInt32BE(count, at);
}

/** Where a compound value's items start and how many there are; null for a constructor this path does not read. */
function compoundAt(raw: Buffer, at: number, list: boolean): { first: number; count: number } | null {
  const c = raw[at];
  if (list && c === 0x45) return { first: at + 1, count: 0 };
  if (c === (list ? 0xc0 : 0xc1)) return { first: at + 3, count: raw[at + 2]! };
  if (c === (list ? 0xd0 : 0xd1)) return { first: at + 9, count: raw.readUInt32BE(at + 5) };
  return null;
}

/** True when the map key at `k` names an annotation the broker owns (a symbol or string key). */
function owned(raw: Buffer, k: number): boolean {
  const c = raw[k];
  let start: number;
  let len: number;
  // Symbol, string or binary: the general encoder compares each key's text form.
  if (c === 0xa3 || c === 0xa1 || c === 0xa0) {
    start = k + 2;
    len = raw[k + 1]!;
  } else if (c === 0xb3 || c === 0xb1 || c === 0xb0) {
    start = k + 5;
    len = raw.readUInt32BE(k + 1);
  } else return false;
  for (const name of OWNED) if (name.length === len && name.compare(raw, start, start + len) === 0) return true;
  return false;
}

/** Bytes of a 64-bit integer (long or timestamp) written after its constructor. */
function writeInt64(out: Buffer, n: number, at: number): number {
  const hi = Math.floor(n / 0x1_0000_0000);
  out.writeInt32BE(hi, at);
  out.writeUInt32BE(n - hi * 0x1_0000_0000, at + 4);
  return at + 8;
}

/**
 * The delivery bytes of `raw` for `s`, or null when the message has a shape this path leaves to the general
 * encoder (an unusual header or annotations encoding). Callers take the general path for settlement patches too.
 */
export function encodeStamped(raw: Buffer, s: FastStamp): Buffer | null {
  // One pass over the sections: the first header, annotations, properties and application properties count (as
  // in the general encoder); delivery annotations are per hop and dropped; the rest (body, footer) is copied.
  let header = -1;
  let annotations = -1;
  let props = -1;
  let propsEnd = 0;
  let app = -1;
  let appEnd = 0;
  const rest: number[] = [];
  for (let pos = 0; pos < raw.length; ) {
    if (raw[pos] !== 0x00) return null;
    const end = skipValue(raw, pos);
    if (end > raw.length) return null;
    const code = descriptorAt(raw, pos + 1);
    if (code === HEADER) {
      if (header < 0) header = pos;
    } else if (code === MESSAGE_ANNOTATIONS) {
      if (annotations < 0) annotations = pos;
    } else if (code === PROPERTIES) {
      if (props < 0) {
        props = pos;
        propsEnd = end;
      }
    } else if (code === APPLICATION_PROPERTIES) {
      if (app < 0) {
        app = pos;
        appEnd = end;
      }
    } else if (code > APPLICATION_PROPERTIES || code < 0) {
      // Body sections and footer (delivery annotations, per hop, and unknown low codes are dropped).
      if (!(s.omitBody && code >= DATA && code <= AMQP_VALUE)) rest.push(pos, end);
    }
    pos = end;
  }

  // Header: the sender's durable, priority and first-acquirer as sent (null ones defaulted), the effective TTL,
  // then our delivery-count as a uint.
  const fields: number[] = [];
  if (header >= 0) {
    const list = compoundAt(raw, skipValue(raw, header + 1), true);
    if (!list) return null;
    for (let i = 0, p = list.first; i < Math.min(list.count, 4); i++) {
      const end = skipValue(raw, p);
      if (raw[p] !== 0x40 && i !== 2) fields.push(i, p, end);
      p = end;
    }
  }
  const ttl = effectiveTtl(s.row);
  const ttlField = ttl === null ? HEADER_DEFAULTS[2]! : uintBytes(ttl);
  const dc = s.deliveryCount;
  if (dc < 0) return null;
  const dcLen = dc === 0 ? 1 : dc <= 255 ? 2 : 5;
  let headerLen = COMPOUND_PREFIX + dcLen;
  for (let i = 0, f = 0; i < 4; i++) {
    if (fields[f] === i) {
      headerLen += fields[f + 2]! - fields[f + 1]!;
      f += 3;
    } else headerLen += i === 2 ? ttlField.length : HEADER_DEFAULTS[i]!.length;
  }

  // Annotations: the sender's entries but the broker's, as sent, then the broker's.
  const kept: number[] = [];
  if (annotations >= 0) {
    const map = compoundAt(raw, skipValue(raw, annotations + 1), false);
    if (!map) return null;
    for (let i = 0, p = map.first; i + 1 < map.count; i += 2) {
      const valueAt = skipValue(raw, p);
      const end = skipValue(raw, valueAt);
      if (!owned(raw, p)) kept.push(p, end);
      p = end;
    }
  }
  let entries = kept.length / 2 + 2;
  let annotationsLen = COMPOUND_PREFIX + SEQUENCE_NUMBER.length + (s.row.seq > 127 || s.row.seq < -128 ? 9 : 2) + ENQUEUED_TIME.length + 9;
  for (let i = 0; i < kept.length; i += 2) annotationsLen += kept[i + 1]! - kept[i]!;
  if (s.lockedUntil !== undefined) {
    annotationsLen += LOCKED_UNTIL.length + 9;
    entries++;
  }
  if (s.messageState !== undefined) {
    annotationsLen += MESSAGE_STATE.length + (s.messageState > 127 || s.messageState < -128 ? 5 : 2);
    entries++;
  }
  const dls = s.row.deadLetterSource ? Buffer.byteLength(s.row.deadLetterSource) : -1;
  if (dls >= 0) {
    annotationsLen += DEADLETTER_SOURCE.length + (dls > 255 ? 5 : 2) + dls;
    entries++;
  }

  const properties = propertiesWithExpiry(raw, props, propsEnd, s.row);
  if (!properties) return null;
  let total = headerLen + annotationsLen + properties.length;
  if (app >= 0) total += appEnd - app;
  for (let i = 0; i < rest.length; i += 2) total += rest[i + 1]! - rest[i]!;

  const out = Buffer.allocUnsafe(total);
  let at = 0;
  // Described list32 header: 0x00 0x53 0x70 0xd0 size count.
  at = writeSectionPrefix(out, at, HEADER, true, headerLen, 5);
  for (let i = 0, f = 0; i < 4; i++) {
    if (fields[f] === i) {
      at += raw.copy(out, at, fields[f + 1], fields[f + 2]);
      f += 3;
    } else at += (i === 2 ? ttlField : HEADER_DEFAULTS[i]!).copy(out, at);
  }
  // A uint as rhea writes it: uint0, smalluint or uint.
  if (dc === 0) out[at++] = 0x43;
  else if (dc <= 255) {
    out[at++] = 0x52;
    out[at++] = dc;
  } else {
    out[at++] = 0x70;
    at = out.writeUInt32BE(dc, at);
  }

  at = writeSectionPrefix(out, at, MESSAGE_ANNOTATIONS, false, annotationsLen, entries * 2);
  for (let i = 0; i < kept.length; i += 2) at += raw.copy(out, at, kept[i], kept[i + 1]);
  at += SEQUENCE_NUMBER.copy(out, at);
  // A long as rhea writes it: smalllong when it fits a byte.
  if (s.row.seq > 127 || s.row.seq < -128) {
    out[at++] = 0x81;
    at = writeInt64(out, s.row.seq, at);
  } else {
    out[at++] = 0x55;
    at = out.writeInt8(s.row.seq, at);
  }
  at += ENQUEUED_TIME.copy(out, at);
  out[at++] = 0x83;
  at = writeInt64(out, s.row.enqueuedAt, at);
  if (s.lockedUntil !== undefined) {
    at += LOCKED_UNTIL.copy(out, at);
    out[at++] = 0x83;
    at = writeInt64(out, s.lockedUntil, at);
  }
  if (s.messageState !== undefined) {
    at += MESSAGE_STATE.copy(out, at);
    const m = s.messageState;
    if (m > 127 || m < -128) {
      out[at++] = 0x71;
      at = out.writeInt32BE(m, at);
    } else {
      out[at++] = 0x54;
      at = out.writeInt8(m, at);
    }
  }
  if (dls >= 0) {
    at += DEADLETTER_SOURCE.copy(out, at);
    if (dls > 255) {
      out[at++] = 0xb1;
      at = out.writeUInt32BE(dls, at);
    } else {
      out[at++] = 0xa1;
      out[at++] = dls;
    }
    at += out.write(s.row.deadLetterSource!, at);
  }

  at += properties.copy(out, at);
  if (app >= 0) at += raw.copy(out, at, app, appEnd);
  for (let i = 0; i < rest.length; i += 2) at += raw.copy(out, at, rest[i], rest[i + 1]);
  return out;
}

/**
 * The message with `id` as its message-id (a str8 or str32), written directly from its one-pass view: the properties
 * section rebuilt around the sender's other fields as sent, or a new one after the header and annotations. Null for
 * a properties encoding this path does not read (codec.ts then takes rhea's section codec, which gives the same
 * bytes; the test compares them).
 */
export function insertMessageId(view: IncomingView, id: string): Buffer | null {
  const { raw } = view;
  const props = view.properties?.start ?? -1;
  const propsEnd = view.properties?.end ?? 0;
  const insertAt = view.propertiesAt;
  // The sender's fields after the message-id, copied as they are.
  let restStart = 0;
  let restEnd = 0;
  let count = 1;
  if (props >= 0) {
    const list = compoundAt(raw, skipValue(raw, props + 1), true);
    if (!list) return null;
    if (list.count > 0) {
      restStart = skipValue(raw, list.first);
      restEnd = propsEnd;
      count = list.count;
    }
  }
  const idLen = Buffer.byteLength(id);
  const idBytes = (idLen > 255 ? 5 : 2) + idLen;
  const section = COMPOUND_PREFIX + idBytes + (restEnd - restStart);
  const [before, after] = props >= 0 ? [props, propsEnd] : [insertAt, insertAt];
  const out = Buffer.allocUnsafe(before + section + raw.length - after);
  let at = raw.copy(out, 0, 0, before);
  at = writeSectionPrefix(out, at, PROPERTIES, true, section, count);
  if (idLen > 255) {
    out[at++] = 0xb1;
    at = out.writeUInt32BE(idLen, at);
  } else {
    out[at++] = 0xa1;
    out[at++] = idLen;
  }
  at += out.write(id, at);
  at += raw.copy(out, at, restStart, restEnd);
  raw.copy(out, at, after);
  return out;
}

/**
 * The properties section from `start` to `end` of `raw` (`start` < 0: there is none) with the broker's expiry: for
 * a message that expires, absolute-expiry-time = `row`'s expiry and creation-time = its enqueued time; for one that
 * never does, no absolute-expiry-time. The other fields stay as sent. Service Bus stamps its own expiry (EnqueuedTime
 * + the effective TTL): the sender's came from the sender's clock. Creation-time goes with it because the JS SDK
 * reads a message's timeToLive as absolute-expiry-time minus creation-time when both are set (core-amqp's
 * `fromRheaMessage`); the .NET SDK's ExpiresAt is absolute-expiry-time, else EnqueuedTime + TimeToLive. Null for a
 * properties encoding this path does not read. Both encoders use it, so their bytes stay equal.
 */
export function propertiesWithExpiry(raw: Buffer, start: number, end: number, row: FastStamp['row']): Buffer | null {
  const expiry = expiryReported(row);
  let first = 0;
  let count = 0;
  if (start >= 0) {
    const list = compoundAt(raw, skipValue(raw, start + 1), true);
    if (!list) return null;
    ({ first, count } = list);
    // Nothing to write and nothing to clear: the section as sent.
    if (expiry === null && count <= ABSOLUTE_EXPIRY) return raw.subarray(start, end);
  } else if (expiry === null) return Buffer.alloc(0);
  // Written: absolute-expiry-time (null or a timestamp) and, with an expiry, creation-time (a timestamp).
  const written = expiry === null ? 1 : 2;
  let before = first;
  for (let i = 0; i < Math.min(count, ABSOLUTE_EXPIRY); i++) before = skipValue(raw, before);
  // The fields after those run to the end of the list, which is the end of the section.
  let after = before;
  for (let i = ABSOLUTE_EXPIRY; i < Math.min(count, ABSOLUTE_EXPIRY + written); i++) after = skipValue(raw, after);
  if (count <= ABSOLUTE_EXPIRY + written) after = end;
  const pad = Math.max(0, ABSOLUTE_EXPIRY - count);
  const len = COMPOUND_PREFIX + (before - first) + pad + (expiry === null ? 1 : 18) + (end - after);
  const out = Buffer.allocUnsafe(len);
  let at = writeSectionPrefix(out, 0, PROPERTIES, true, len, Math.max(count, ABSOLUTE_EXPIRY + written));
  at += raw.copy(out, at, first, before);
  out.fill(0x40, at, at + pad);
  at += pad;
  if (expiry === null) out[at++] = 0x40;
  else {
    out[at++] = 0x83;
    at = writeInt64(out, expiry, at);
    out[at++] = 0x83;
    at = writeInt64(out, row.enqueuedAt, at);
  }
  raw.copy(out, at, after, end);
  return out;
}
