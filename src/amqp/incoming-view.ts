// One incoming message, read once. A transfer's bytes are walked section by section a single time: where each
// section lies is recorded, the sections before the application properties (header, annotations, properties) are
// decoded in one go for the fields the broker needs, the application properties are decoded, with their AMQP types,
// only when a rule filter first asks (once), and the body is never decoded. Everything downstream — the message-id
// insertion, the IncomingMessage's fields, the filter view — reads this view instead of the bytes
// (docs/architecture.md, "The transfer becomes an IncomingMessage"). The entity sender's links skip rhea's own
// decode of the transfer (`transfersAsBytes`, raw-transfers.ts), so this is the only pass.

import { decodeMessage } from './raw-transfers.js';
import { APPLICATION_PROPERTIES, HEADER, PROPERTIES, descriptorAt, mapEntries, keyName, countScan, skipValue, types } from './sections.js';

/** Where one section lies in the message: [start, end). */
export interface Span {
  start: number;
  end: number;
}

/** One application property with its AMQP type name as rhea's reader gives it (Str8, Long, …). */
export interface TypedProperty {
  name: string;
  type: string;
  value: unknown;
}

/** The fields of the sections before the application properties, as rhea's message decoder names them. */
export interface DecodedPrefix {
  message_id?: unknown;
  to?: unknown;
  subject?: unknown;
  reply_to?: unknown;
  correlation_id?: unknown;
  content_type?: unknown;
  absolute_expiry_time?: unknown;
  group_id?: unknown;
  reply_to_group_id?: unknown;
  ttl?: unknown;
  message_annotations?: Record<string, unknown>;
}

/** What the broker reads of an incoming message: its section offsets and its fields, from one walk. */
export interface IncomingView {
  readonly raw: Buffer;
  /** The first properties section, if any. */
  readonly properties?: Span;
  /** Where a properties section goes when there is none: after the header and annotations. */
  readonly propertiesAt: number;
  /** The header, annotations and properties fields (rhea's names and values). */
  readonly fields: DecodedPrefix;
  /** The first application-properties section's entries with their AMQP types, decoded on first use only. */
  applicationProperties(): readonly TypedProperty[];
}

/** Walks `raw` once into its view; throws a RangeError for bytes that are not a sequence of described sections. */
export function readIncoming(raw: Buffer): IncomingView {
  countScan('walk');
  let properties: Span | undefined;
  let app: Span | undefined;
  let propertiesAt = 0;
  // The end of the sections the broker reads fields from (AMQP orders them before the application properties).
  let prefixEnd = 0;
  for (let pos = 0; pos < raw.length; ) {
    if (raw[pos] !== 0x00) throw new RangeError('a message section must be a described value');
    const end = skipValue(raw, pos);
    if (end > raw.length) throw new RangeError('truncated message section');
    const code = descriptorAt(raw, pos + 1);
    if (code >= HEADER && code <= PROPERTIES) {
      prefixEnd = end;
      if (code === PROPERTIES) properties ??= { start: pos, end };
      else propertiesAt = end;
    } else if (code === APPLICATION_PROPERTIES) app ??= { start: pos, end };
    pos = end;
  }
  let fields: DecodedPrefix = {};
  if (prefixEnd > 0) {
    // rhea's decoder over the prefix alone: the same field values as a decode of the whole message, without
    // reading the application properties or the body.
    fields = decodeMessage(raw.subarray(0, prefixEnd)) as DecodedPrefix;
  }
  let typed: TypedProperty[] | undefined;
  return {
    raw,
    properties,
    propertiesAt,
    fields,
    applicationProperties: () => (typed ??= decodeApplicationProperties(raw, app)),
  };
}

function decodeApplicationProperties(raw: Buffer, app: Span | undefined): TypedProperty[] {
  if (!app) return [];
  countScan('decode', app.end - app.start);
  const section = new types.Reader(raw.subarray(app.start, app.end)).read();
  return mapEntries({ value: section }).map(([k, v]) => ({ name: keyName(k), type: v.type?.name ?? 'Null', value: v.value }));
}
