// Just enough of the AMQP type system for the frame guard (frame-guard.ts) to read a performative before
// rhea does: its descriptor, and the first few fields of its list as uints, booleans or null.

/** Performative codes by the name in their symbolic descriptor `amqp:<name>:list` (AMQP 1.0 §2.7). */
const CODES: Record<string, number> = {
  open: 0x10,
  begin: 0x11,
  attach: 0x12,
  flow: 0x13,
  transfer: 0x14,
  disposition: 0x15,
  detach: 0x16,
  end: 0x17,
  close: 0x18,
};

/** A performative's descriptor code and where its list starts in the frame body. */
export interface Performative {
  code: number;
  list: number;
}

/**
 * Reads a performative's descriptor: a ulong (`0x53 code` or `0x80` + 8 bytes) or the symbol
 * `amqp:<name>:list`, followed by a list. Null for anything else: rhea also resolves a descriptor written as
 * a uint or a string, and reads fields out of a described array or map, which a guard that cannot read them
 * the same way must not pass (descriptors are ulongs or symbols, performatives lists: AMQP 1.0 §1.5, §2.7).
 */
export function performative(body: Buffer): Performative | null {
  if (body.length < 3 || body[0] !== 0x00) return null;
  let code = -1;
  let list = -1;
  const c = body[1]!;
  if (c === 0x53) {
    code = body[2]!;
    list = 3;
  } else if (c === 0x80 && body.length >= 10 && body.readUInt32BE(2) === 0) {
    code = body.readUInt32BE(6);
    list = 10;
  } else if (c === 0xa3 || (c === 0xb3 && body.length >= 6)) {
    const start = c === 0xa3 ? 3 : 6;
    const len = c === 0xa3 ? body[2]! : body.readUInt32BE(2);
    if (start + len > body.length) return null;
    const name = /^amqp:([a-z]+):list$/.exec(body.toString('latin1', start, start + len))?.[1];
    code = name !== undefined && Object.hasOwn(CODES, name) ? CODES[name]! : -1;
    list = start + len;
  }
  if (code < 0x10 || code > 0x18 || list >= body.length) return null;
  const l = body[list];
  return l === 0x45 || l === 0xc0 || l === 0xd0 ? { code, list } : null;
}

/** A field as the guard sees it: uints and booleans decoded, null for null, undefined for any other type. */
export type Field = number | boolean | null | undefined;

/** Whether field `i` is present and not null but not of `type` (a value of any other AMQP type reads as undefined). */
export function wrongType(fields: Field[], i: number, type: 'number' | 'boolean'): boolean {
  return i < fields.length && fields[i] !== null && typeof fields[i] !== type;
}

/**
 * Reads the first `n` fields of the list at offset `p` of `body` (see {@link performative}); null if the
 * bytes are not a well-formed list. Only what the guard needs: handles, more, aborted, delivery ids.
 */
export function listFields(body: Buffer, p: number, n: number): Field[] | null {
  if (p < 0 || p >= body.length) return null;
  let count: number;
  const ctor = body[p]!;
  if (ctor === 0x45) return [];
  if (ctor === 0xc0) {
    if (p + 3 > body.length) return null;
    count = body[p + 2]!;
    p += 3;
  } else if (ctor === 0xd0) {
    if (p + 9 > body.length) return null;
    count = body.readUInt32BE(p + 5);
    p += 9;
  } else return null;
  const out: Field[] = [];
  for (let i = 0; i < Math.min(n, count); i++) {
    const r = readField(body, p);
    if (!r) return null;
    out.push(r.value);
    p = r.next;
  }
  return out;
}

/** Where the list at offset `p` of `body` ends (it may lie past the bytes at hand); null if `p` is no list. */
export function listEnd(body: Buffer, p: number): number | null {
  const ctor = body[p];
  if (ctor === 0x45) return p + 1;
  if (ctor === 0xc0 && p + 2 <= body.length) return p + 2 + body[p + 1]!;
  if (ctor === 0xd0 && p + 5 <= body.length) return p + 5 + body.readUInt32BE(p + 1);
  return null;
}

/** Reads one value at `p`: uints and booleans decoded, anything else skipped; null past the end. */
function readField(b: Buffer, p: number, depth = 0): { value: Field; next: number } | null {
  if (p >= b.length || depth > 4) return null;
  const c = b[p]!;
  if (c === 0x00) {
    // Described value (e.g. a delivery state): skip the descriptor, then the value.
    const d = readField(b, p + 1, depth + 1);
    if (!d) return null;
    const v = readField(b, d.next, depth + 1);
    return v ? { value: undefined, next: v.next } : null;
  }
  const width = fixedWidth(c);
  let next: number;
  if (width >= 0) next = p + 1 + width;
  else if ((c & 0xf0) === 0xa0 || (c & 0xf0) === 0xc0 || (c & 0xf0) === 0xe0) next = p + 2 + (b[p + 1] ?? 0);
  else if (p + 5 <= b.length) next = p + 5 + b.readUInt32BE(p + 1);
  else return null;
  if (next > b.length) return null;
  let value: Field;
  if (c === 0x40) value = null;
  else if (c === 0x41) value = true;
  else if (c === 0x42) value = false;
  else if (c === 0x56) value = b[p + 1] !== 0;
  else if (c === 0x43) value = 0;
  else if (c === 0x52) value = b[p + 1]!;
  else if (c === 0x70) value = b.readUInt32BE(p + 1);
  return { value, next };
}

/** Payload width of fixed-width constructors (AMQP 1.0 §1.6), or -1 for variable and compound ones. */
function fixedWidth(c: number): number {
  switch (c >> 4) {
    case 0x4:
      return 0;
    case 0x5:
      return 1;
    case 0x6:
      return 2;
    case 0x7:
      return 4;
    case 0x8:
      return 8;
    case 0x9:
      return 16;
    default:
      return -1;
  }
}
