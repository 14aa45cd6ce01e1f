// The section-level view of an encoded AMQP message: where each section starts and ends, and typed reads and
// writes of the map sections, without decoding what is only copied. The codec (codec.ts), the one-pass view of an
// incoming message (incoming-view.ts) and the delivery encoder (message-bytes.ts) build on it.

import rhea from './rhea.js';

/** rhea's type codec (Reader, Writer and the Typed wrappers), typed as this module uses it. */
export const types = rhea.types as unknown as RheaTypes;

// rhea's types module is untyped where we need it (Reader/Writer and the Typed wrappers). A described
// section read by `Reader.read()` is one Typed whose `value` is the list's fields, the map's alternating
// keys and values, or a data section's bytes, and whose `descriptor` is the section code.
/** A value as rhea's Reader returns it: the value with its AMQP type and, for a section, its descriptor. */
export interface Typed {
  type?: { name: string };
  value: unknown;
  descriptor?: { value: unknown };
}
/** The part of rhea's untyped types module the codec uses. */
export interface RheaTypes {
  Reader: new (b: Buffer) => { read(): Typed; position: number };
  Writer: new () => { write(t: Typed): void; toBuffer(): Buffer };
  described(descriptor: Typed, value: Typed): Typed;
  wrap_ulong(n: number): Typed;
  wrap_uint(n: number): Typed;
  wrap_ubyte(n: number): Typed;
  wrap_long(n: number): Typed;
  wrap_int(n: number): Typed;
  wrap_boolean(b: boolean): Typed;
  wrap_timestamp(n: number): Typed;
  wrap_symbol(s: string): Typed;
  wrap_uuid(b: Buffer): Typed;
  wrap_string(s: string): Typed;
  wrap_list(l: Typed[]): Typed;
  wrap_binary(b: Buffer): Typed;
  wrap_array(items: unknown[], code: number): Typed;
  wrap_map(m: Record<string, unknown>): Typed;
  wrap(o: unknown): Typed;
  unwrap(t: Typed): unknown;
}

/** Section descriptor codes (AMQP 1.0 §3.2). */
export const HEADER = 0x70;
/** Delivery-annotations section code. */
export const DELIVERY_ANNOTATIONS = 0x71;
/** Message-annotations section code. */
export const MESSAGE_ANNOTATIONS = 0x72;
/** Properties section code. */
export const PROPERTIES = 0x73;
/** Application-properties section code. */
export const APPLICATION_PROPERTIES = 0x74;
/** Data (binary body) section code. */
export const DATA = 0x75;
/** The last body section code (data 0x75, amqp-sequence 0x76, amqp-value 0x77). */
export const AMQP_VALUE = 0x77;

/** Where one section of an encoded message lies. */
export interface Section {
  code: number;
  start: number;
  end: number;
  /** The decoded section (built on first use: most sections are only copied, never decoded). */
  readonly value: Typed;
}

/** Position after the AMQP value that starts at `pos` (AMQP 1.0 §1.6: the constructor's high nibble gives the width). */
export function skipValue(buf: Buffer, pos: number): number {
  const c = buf[pos++];
  if (c === undefined) throw new RangeError('truncated AMQP value');
  if (c === 0x00) return skipValue(buf, skipValue(buf, pos)); // described: descriptor, then value
  switch (c & 0xf0) {
    case 0x40:
      return pos;
    case 0x50:
      return pos + 1;
    case 0x60:
      return pos + 2;
    case 0x70:
      return pos + 4;
    case 0x80:
      return pos + 8;
    case 0x90:
      return pos + 16;
    case 0xa0:
    case 0xc0:
    case 0xe0:
      return pos + 1 + buf.readUInt8(pos);
    case 0xb0:
    case 0xd0:
    case 0xf0:
      return pos + 4 + buf.readUInt32BE(pos);
    default:
      throw new RangeError(`unknown AMQP constructor 0x${c.toString(16)}`);
  }
}

/** Section codes by their symbolic descriptors (a peer may name a section either way). */
const SYMBOLIC_CODES: Record<string, number> = {
  'amqp:header:list': HEADER,
  'amqp:delivery-annotations:map': DELIVERY_ANNOTATIONS,
  'amqp:message-annotations:map': MESSAGE_ANNOTATIONS,
  'amqp:properties:list': PROPERTIES,
  'amqp:application-properties:map': APPLICATION_PROPERTIES,
  'amqp:data:binary': DATA,
};

/** The section code from the descriptor bytes at `pos` (after the 0x00). */
export function descriptorAt(buf: Buffer, pos: number): number {
  const c = buf[pos];
  if (c === 0x53) return buf.readUInt8(pos + 1);
  if (c === 0x80) return Number(buf.readBigUInt64BE(pos + 1));
  if (c === 0x44) return 0;
  if (c === 0xa3) return SYMBOLIC_CODES[buf.toString('ascii', pos + 2, pos + 2 + buf.readUInt8(pos + 1))] ?? -1;
  if (c === 0xb3) return SYMBOLIC_CODES[buf.toString('ascii', pos + 5, pos + 5 + buf.readUInt32BE(pos + 1))] ?? -1;
  return -1;
}

/** How often message bytes were walked or decoded since a probe was installed (see `probeScans`). */
export interface ScanCount {
  /** Walks over a whole message's sections. */
  walk: number;
  /** Decodes of message bytes into values (rhea's message decoder, or one section's reader). */
  decode: number;
  /** The bytes those decodes read. */
  bytes: number;
}

let probe: ScanCount | undefined;

/**
 * Installs `count` (or removes the probe with undefined): every walk and decode of message bytes is then counted in
 * it. The test that proves an incoming message is read once (test/unit/incoming-view.test.ts) reads it.
 */
export function probeScans(count: ScanCount | undefined): void {
  probe = count;
}

/** Counts one walk of a message, or one decode of `bytes` of it, on the installed probe, if any. */
export function countScan(kind: 'walk' | 'decode', bytes = 0): void {
  if (!probe) return;
  probe[kind]++;
  probe.bytes += bytes;
}

/** Splits an encoded message into its sections by walking the encoding, without decoding them. */
export function splitSections(buf: Buffer): Section[] {
  countScan('walk');
  const out: Section[] = [];
  let pos = 0;
  while (pos < buf.length) {
    if (buf[pos] !== 0x00) throw new RangeError('a message section must be a described value');
    const start = pos;
    const end = skipValue(buf, pos);
    if (end > buf.length) throw new RangeError('truncated message section');
    let decoded: Typed | undefined;
    out.push({
      code: descriptorAt(buf, start + 1),
      start,
      end,
      get value(): Typed {
        if (!decoded) countScan('decode', end - start);
        return (decoded ??= new types.Reader(buf.subarray(start, end)).read());
      },
    });
    pos = end;
  }
  return out;
}

/** The bytes inside a data section (bin8 or bin32 after the descriptor). */
export function dataContent(buf: Buffer, s: Section): Buffer {
  const at = skipValue(buf, s.start + 1); // past the descriptor
  const c = buf[at];
  if (c === 0xa0) return buf.subarray(at + 2, at + 2 + buf.readUInt8(at + 1));
  if (c === 0xb0) return buf.subarray(at + 5, at + 5 + buf.readUInt32BE(at + 1));
  throw new RangeError('a data section must hold binary');
}

/** One described section, encoded. */
export function encodeSection(code: number, value: Typed): Buffer {
  const w = new types.Writer();
  w.write(types.described(types.wrap_ulong(code), value));
  return w.toBuffer();
}

/** Map entries of a typed map section as [key, value] pairs, keeping their AMQP types. */
export function mapEntries(section: Pick<Section, 'value'> | undefined): [Typed, Typed][] {
  const items = section?.value.value;
  const out: [Typed, Typed][] = [];
  if (Array.isArray(items)) for (let i = 0; i + 1 < items.length; i += 2) out.push([items[i], items[i + 1]]);
  return out;
}

/** A map section from typed entries, keeping each key's and value's AMQP type. */
export function encodeMap(code: number, entries: [Typed, Typed][]): Buffer {
  const flat = entries.flat();
  // rhea's map Typed is a list of alternating keys and values with the map type code.
  const mapTyped = types.wrap_map({});
  (mapTyped as { value: Typed[] }).value = flat;
  return encodeSection(code, mapTyped);
}

/** A map key as text. */
export function keyName(k: Typed): string {
  return String(k.value);
}
