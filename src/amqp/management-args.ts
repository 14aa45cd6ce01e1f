// The counts and lists of a `$management` request body, read as the AMQP types rhea decodes them to and checked
// against the limits of src/broker/runtime/limits.ts. Every integer argument of every operation is read by one
// function, `integerValue`: a value that is not an integer whatever its AMQP type — a string, a list, a binary, an
// AMQP null (what rhea writes for a JavaScript NaN or undefined), NaN, ±Infinity, a fraction — is
// `com.microsoft:argument-error`; an integer outside the argument's range is `com.microsoft:argument-out-of-range`,
// as Service Bus answers (ArgumentException / ArgumentOutOfRangeException in the .NET SDK, both non-transient).
// Both are 400s; nothing of a refused request is acted on.

import { argumentOutOfRange, BrokerError, invalidArgument } from '../broker/errors.js';

/** How one integer field of a request is read. */
export interface IntField {
  /** Used when the field is absent (an explicit null is a value, and not an integer). */
  dflt: number;
  /** Least value accepted. */
  min: number;
  /** Largest value served; beyond it the request is refused, or with `clamp` served with `max`. */
  max: number;
  /** Serve a larger value with `max` (a count whose answer may be shorter, as a peek's), instead of refusing it. */
  clamp?: boolean;
}

/**
 * An integer value of any numeric AMQP type (rhea gives a number, or an 8-byte Buffer for a long beyond 2^53), or
 * argument-error naming `key`. An integral double (2.0) is an integer; NaN, ±Infinity and 1.5 are not.
 */
export function integerValue(key: string, v: unknown, want = 'an integer'): number {
  const n = Buffer.isBuffer(v) && v.length === 8 ? Number(v.readBigInt64BE(0)) : v;
  if (typeof n === 'number' && Number.isInteger(n)) return n;
  throw invalidArgument(key, v, want);
}

/** An integer field within `f`: `f.dflt` when absent, else {@link integerValue} and its range. */
export function intField(body: Record<string, unknown>, key: string, f: IntField): number {
  if (body[key] === undefined) return f.dflt;
  const n = integerValue(key, body[key]);
  if (n < f.min || (n > f.max && !f.clamp)) throw argumentOutOfRange(key, n, `${f.min} to ${f.max}`);
  return Math.min(n, f.max);
}

/**
 * A non-empty list field of at most `max` items (an AMQP list or array; a single value counts as a list of one).
 * An empty or absent list is the operation's own refusal (`amqp:not-allowed`, as before); too many items is out
 * of range, refused before any item is looked at.
 */
export function listField(body: Record<string, unknown>, key: string, max: number): unknown[] {
  const v = body[key];
  const list = Array.isArray(v) ? v : v === undefined || v === null ? [] : [v];
  if (!list.length) throw new BrokerError('InvalidOperation', `The request needs a non-empty '${key}' array.`);
  if (list.length > max) throw argumentOutOfRange(key, list, `1 to ${max} items`);
  return list;
}

/** Sequence numbers (AMQP longs: a number, or an 8-byte Buffer beyond 2^53); anything else is an argument error. */
export function sequenceNumbers(body: Record<string, unknown>, key: string, max: number): number[] {
  return listField(body, key, max).map((x) => integerValue(key, x, 'a list of sequence numbers (longs)'));
}
