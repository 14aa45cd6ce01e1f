// The message as subscription rules see it: system properties from the AMQP properties, header and
// annotations, and application properties with their exact AMQP types (docs/filters.md, "Values and types": rhea's
// default decoding turns int, uint, long and double into one `number` and loses precision past 2^53).

import type { FilterMessage, SystemProperties } from '../filters/message.js';
import type { FilterValue } from '../filters/values.js';
import type { IncomingView } from './incoming-view.js';
import { uuidBytesToString } from './lock-token.js';

const INTEGER: Record<string, FilterValue['type']> = {
  Ubyte: 'ubyte',
  Ushort: 'ushort',
  Uint: 'uint',
  SmallUint: 'uint',
  Uint0: 'uint',
  Ulong: 'ulong',
  SmallUlong: 'ulong',
  Ulong0: 'ulong',
  Byte: 'byte',
  Short: 'short',
  Int: 'int',
  SmallInt: 'int',
  Long: 'long',
  SmallLong: 'long',
};

function bigOf(v: unknown, unsigned: boolean): bigint {
  if (Buffer.isBuffer(v)) return unsigned ? v.readBigUInt64BE(0) : v.readBigInt64BE(0);
  return BigInt(Math.trunc(Number(v)));
}

/** Converts one rhea-typed value to the filter engine's typed value. */
export function toFilterValue(type: string, value: unknown): FilterValue {
  const int = INTEGER[type];
  if (int) return { type: int, value: bigOf(value, int.startsWith('u')) } as FilterValue;
  switch (type) {
    case 'Null':
      return { type: 'null', value: null };
    case 'Boolean':
    case 'True':
    case 'False':
      return { type: 'boolean', value: Boolean(value) };
    case 'Float':
      return { type: 'float', value: Number(value) };
    case 'Double':
      return { type: 'double', value: Number(value) };
    case 'Timestamp':
      return { type: 'timestamp', value: value instanceof Date ? value.getTime() : Number(value) };
    case 'Uuid':
      return { type: 'uuid', value: uuidBytesToString(value as Buffer) };
    case 'Str8':
    case 'Str32':
      return { type: 'string', value: String(value) };
    case 'Sym8':
    case 'Sym32':
      return { type: 'symbol', value: String(value) };
    case 'Vbin8':
    case 'Vbin32':
      return { type: 'binary', value: value as Uint8Array };
    case 'CharUTF32':
      return { type: 'char', value: String.fromCodePoint(Number(value)) };
    default:
      return { type: 'other', value };
  }
}

function text(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (Buffer.isBuffer(v)) return v.length === 16 ? uuidBytesToString(v) : v.toString('hex');
  return String(v);
}

/**
 * Builds the filter view of an incoming message from its one-pass view (nothing here reads the bytes again):
 * `messageId` is the one it is stored with (a broker-assigned one included), `size` its stored size.
 */
export function filterView(view: IncomingView, messageId: unknown, size: number): FilterMessage {
  const decoded = view.fields;
  const ann = decoded.message_annotations ?? {};
  const sched = ann['x-opt-scheduled-enqueue-time'];
  const system: SystemProperties = {
    messageId: text(messageId),
    correlationId: text(decoded.correlation_id),
    to: text(decoded.to),
    replyTo: text(decoded.reply_to),
    label: text(decoded.subject),
    sessionId: text(decoded.group_id),
    replyToSessionId: text(decoded.reply_to_group_id),
    contentType: text(decoded.content_type),
    timeToLive: typeof decoded.ttl === 'number' ? decoded.ttl : null,
    scheduledEnqueueTimeUtc: sched instanceof Date ? sched.getTime() : null,
    partitionKey: text(ann['x-opt-partition-key']),
    deliveryCount: 0,
    size,
  };
  const properties = new Map<string, FilterValue>();
  for (const p of view.applicationProperties()) {
    if (!properties.has(p.name)) properties.set(p.name, toFilterValue(p.type, p.value));
  }
  return { system, properties };
}
