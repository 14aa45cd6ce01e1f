// The typed value model of the rule engine (docs/filters.md, "Values and types"). Values keep their AMQP type because
// Service Bus compares them with .NET semantics: an Int64 of 2^53+1 must stay exact (bigint), a string "2"
// never equals the number 2, and a uuid is not a string.

/** AMQP integer types; every integer value is held as a bigint so that 64-bit values stay exact. */
export type IntegerType = 'byte' | 'short' | 'int' | 'long' | 'ubyte' | 'ushort' | 'uint' | 'ulong';

/** AMQP floating types; `decimal` is approximated as a double (docs/filters.md, "Values and types"; our choice). */
export type FloatType = 'float' | 'double' | 'decimal';

/** A typed property value as the evaluator sees it. */
export type FilterValue =
  | { readonly type: 'null'; readonly value: null }
  | { readonly type: 'string' | 'symbol'; readonly value: string }
  | { readonly type: IntegerType; readonly value: bigint }
  | { readonly type: FloatType; readonly value: number }
  | { readonly type: 'boolean'; readonly value: boolean }
  /** Epoch milliseconds (AMQP timestamp, .NET DateTime). */
  | { readonly type: 'timestamp'; readonly value: number }
  /** Milliseconds (.NET TimeSpan, e.g. `sys.TimeToLive`). */
  | { readonly type: 'duration'; readonly value: number }
  /** Lower-case 8-4-4-4-12 text. */
  | { readonly type: 'uuid'; readonly value: string }
  | { readonly type: 'binary'; readonly value: Uint8Array }
  /** One UTF-16 code unit. */
  | { readonly type: 'char'; readonly value: string }
  /** Anything else (described types, lists, maps): carried along, only IS NULL / EXISTS see it. */
  | { readonly type: 'other'; readonly value: unknown };

/** Three-valued logic result (docs/filters.md, "Three-valued logic"); a rule selects a message only on `true`. */
export type Truth = boolean | 'unknown';

/** The UNKNOWN truth value. */
export const UNKNOWN = 'unknown' as const;

/** A value during evaluation: `null` stands for SQL UNKNOWN/NULL (missing property, null value, NULL constant). */
export type EvalValue = FilterValue | null;

const INT_RANGES: Record<IntegerType, readonly [bigint, bigint]> = {
  byte: [-128n, 127n],
  short: [-32768n, 32767n],
  int: [-2147483648n, 2147483647n],
  long: [-9223372036854775808n, 9223372036854775807n],
  ubyte: [0n, 255n],
  ushort: [0n, 65535n],
  uint: [0n, 4294967295n],
  ulong: [0n, 18446744073709551615n],
};

/** True when `v` fits in the range of the integer type `t`. */
export function fitsInteger(t: IntegerType, v: bigint): boolean {
  const [lo, hi] = INT_RANGES[t];
  return v >= lo && v <= hi;
}

/** Narrows a value to an integer type. */
export function isInteger(v: FilterValue): v is Extract<FilterValue, { type: IntegerType }> {
  return v.type in INT_RANGES;
}

/** Narrows a value to a floating type. */
export function isFloating(v: FilterValue): v is Extract<FilterValue, { type: FloatType }> {
  return v.type === 'float' || v.type === 'double' || v.type === 'decimal';
}

/** Narrows a value to string or symbol (symbols become strings in .NET, docs/filters.md, "Values and types"). */
export function isText(v: FilterValue): v is Extract<FilterValue, { type: 'string' | 'symbol' }> {
  return v.type === 'string' || v.type === 'symbol';
}

/** Constructors for typed values (tests, config and protocol decoding). */
export const Typed = {
  /** The AMQP null. */
  null: (): FilterValue => ({ type: 'null', value: null }),
  /** A string. */
  string: (value: string): FilterValue => ({ type: 'string', value }),
  /** An integer of the given AMQP type; throws RangeError if it does not fit. */
  integer: (type: IntegerType, value: number | bigint): FilterValue => {
    const b = BigInt(value);
    if (!fitsInteger(type, b)) throw new RangeError(`${String(value)} does not fit in ${type}`);
    return { type, value: b };
  },
  /** An Int32. */
  int: (value: number | bigint): FilterValue => Typed.integer('int', value),
  /** A UInt32 (what the JS SDK sends for a positive integer). */
  uint: (value: number | bigint): FilterValue => Typed.integer('uint', value),
  /** An Int64. */
  long: (value: number | bigint): FilterValue => Typed.integer('long', value),
  /** A UInt64. */
  ulong: (value: number | bigint): FilterValue => Typed.integer('ulong', value),
  /** A double. */
  double: (value: number): FilterValue => ({ type: 'double', value }),
  /** A boolean. */
  boolean: (value: boolean): FilterValue => ({ type: 'boolean', value }),
  /** A timestamp from epoch ms or a Date. */
  timestamp: (value: number | Date): FilterValue => ({
    type: 'timestamp',
    value: typeof value === 'number' ? value : value.getTime(),
  }),
  /** A duration in ms. */
  duration: (ms: number): FilterValue => ({ type: 'duration', value: ms }),
  /** A uuid from its text form (normalised to lower case). */
  uuid: (text: string): FilterValue => ({ type: 'uuid', value: text.toLowerCase() }),
};

/** What `toFilterValue` accepts: a typed value or a plain JS value. */
export type PlainValue = FilterValue | string | number | bigint | boolean | Date | null;

/** Types a plain JS value: integer → int (long outside Int32), number → double, bigint → long, Date → timestamp. */
export function toFilterValue(v: PlainValue): FilterValue {
  if (v === null) return Typed.null();
  if (typeof v === 'string') return Typed.string(v);
  if (typeof v === 'boolean') return Typed.boolean(v);
  if (typeof v === 'bigint') return Typed.long(v);
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) return Typed.double(v);
    return fitsInteger('int', BigInt(v)) ? Typed.int(v) : Typed.long(v);
  }
  if (v instanceof Date) return Typed.timestamp(v);
  return v;
}

/** Ordering of two non-null values: -1/0/1, NaN for unordered doubles, null when the types do not compare. */
function order(a: FilterValue, b: FilterValue): number | null {
  // C# binary numeric promotion: any floating operand → double; otherwise exact integer compare.
  if ((isInteger(a) || isFloating(a)) && (isInteger(b) || isFloating(b))) {
    if (isInteger(a) && isInteger(b)) return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
    const x = Number(a.value);
    const y = Number(b.value);
    return x < y ? -1 : x > y ? 1 : x === y ? 0 : NaN;
  }
  if (isText(a) && isText(b)) return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
  if (a.type !== b.type) return null;
  switch (a.type) {
    case 'timestamp':
    case 'duration':
    case 'boolean':
    case 'uuid':
    case 'char': {
      const x = a.value;
      const y = b.value as typeof x;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'binary': {
      const y = b.value as Uint8Array;
      return a.value.length === y.length && a.value.every((byte, i) => byte === y[i]) ? 0 : 1;
    }
    default:
      return null;
  }
}

/** Types on which only `=` and `<>` are defined (docs/filters.md, "Comparisons"; our choice). */
const EQUALITY_ONLY = new Set(['boolean', 'uuid', 'char', 'binary']);

/** Comparison operators of the SQL language (`!=` is parsed as `<>`). */
export type CompareOp = '=' | '<>' | '<' | '<=' | '>' | '>=';

// NULL/UNKNOWN operands and type mismatches (string vs number, bool vs number, timestamp vs string…) yield UNKNOWN,
// never an implicit conversion (docs/filters.md, "Comparisons"; azure-service-bus#401, azure-docs#56144 show no match).
/** Compares two values with Service Bus SQL semantics; UNKNOWN for NULLs and mismatched types. */
export function compareValues(op: CompareOp, a: EvalValue, b: EvalValue): Truth {
  if (a === null || b === null || a.type === 'null' || b.type === 'null') return UNKNOWN;
  const c = order(a, b);
  if (c === null) return UNKNOWN;
  if (op !== '=' && op !== '<>' && EQUALITY_ONLY.has(a.type)) return UNKNOWN;
  if (Number.isNaN(c)) return op === '<>';
  switch (op) {
    case '=':
      return c === 0;
    case '<>':
      return c !== 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
  }
}

/** Formats a TimeSpan the way .NET's invariant `ToString()` does: `[-][d.]hh:mm:ss[.fffffff]`. */
export function formatTimeSpan(ms: number): string {
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  const days = Math.floor(rest / 86_400_000);
  rest -= days * 86_400_000;
  const two = (n: number): string => String(n).padStart(2, '0');
  const h = Math.floor(rest / 3_600_000);
  const m = Math.floor((rest % 3_600_000) / 60_000);
  const s = Math.floor((rest % 60_000) / 1000);
  const frac = rest % 1000;
  const fraction = frac === 0 ? '' : '.' + String(Math.round(frac * 10_000)).padStart(7, '0');
  return `${sign}${days > 0 ? `${days}.` : ''}${two(h)}:${two(m)}:${two(s)}${fraction}`;
}

// Invariant .NET formatting (docs/filters.md, "Arithmetic"; our choice): booleans `True`/`False`, doubles with an
// upper-case exponent, uuids lower-case.
/** Renders a value as text (concatenation, string system properties); null when it has no text form. */
export function renderText(v: FilterValue): string | null {
  switch (v.type) {
    case 'string':
    case 'symbol':
    case 'uuid':
    case 'char':
      return v.value;
    case 'boolean':
      return v.value ? 'True' : 'False';
    case 'float':
    case 'double':
    case 'decimal':
      return String(v.value).replace('e', 'E');
    case 'timestamp':
      return new Date(v.value).toISOString();
    case 'duration':
      return formatTimeSpan(v.value);
    case 'null':
    case 'binary':
    case 'other':
      return null;
    default:
      return v.value.toString();
  }
}

/** Parses .NET TimeSpan text `[-][d.]hh:mm[:ss[.fffffff]]` into ms; null if malformed. */
export function parseTimeSpan(text: string): number | null {
  const m = /^\s*(-)?(?:(\d+)\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7}))?)?\s*$/.exec(text);
  if (m === null) return null;
  const [, neg, d, h, min, s, f] = m;
  if (Number(h) > 23 || Number(min) > 59 || Number(s ?? 0) > 59) return null;
  const ms =
    Number(d ?? 0) * 86_400_000 +
    Number(h) * 3_600_000 +
    Number(min) * 60_000 +
    Number(s ?? 0) * 1000 +
    Math.round(Number(`0.${f ?? '0'}`) * 1000);
  return neg === undefined ? ms : -ms;
}
