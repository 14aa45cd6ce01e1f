// The counts and lists of a `$management` request body, read as the AMQP types rhea decodes them to and checked
// against the limits of src/broker/runtime/limits.ts. A value of the wrong type (a string, a list, a binary where a count
// belongs) is `com.microsoft:argument-error`; a number outside its range (negative, NaN, a fraction, too many items)
// is `com.microsoft:argument-out-of-range`, as Service Bus answers (ArgumentException / ArgumentOutOfRangeException
// in its .NET service). Both are 400s; nothing of a refused request is acted on.

import { argumentOutOfRange, BrokerError, invalidArgument } from '../broker/errors.js';

/** How one integer field of a request is read. */
export interface IntField {
  /** Used when the field is absent. */
  dflt: number;
  /** Least value accepted. */
  min: number;
  /** Largest value served; beyond it the request is refused, or with `clamp` served with `max`. */
  max: number;
  /** Serve a larger value with `max` (a count whose answer may be shorter, as a peek's), instead of refusing it. */
  clamp?: boolean;
}

/**
 * An integer field: an AMQP int or long (rhea gives a number, or an 8-byte Buffer beyond 2^53), within `f`.
 * NaN and fractions are numbers out of range, as Service Bus reads a double where an int belongs.
 */
export function intField(body: Record<string, unknown>, key: string, f: IntField): number {
  const n = numberField(body, key, f.dflt);
  if (!Number.isInteger(n) || n < f.min || (n > f.max && !f.clamp)) throw argumentOutOfRange(key, n, `${f.min} to ${f.max}`);
  return Math.min(n, f.max);
}

/** A numeric field (an AMQP number, or a long as an 8-byte Buffer), `dflt` when absent, unchecked for range. */
export function numberField(body: Record<string, unknown>, key: string, dflt: number): number {
  const v = body[key];
  if (v === undefined || v === null) return dflt;
  if (Buffer.isBuffer(v) && v.length === 8) return Number(v.readBigInt64BE(0));
  if (typeof v === 'number') return v;
  throw invalidArgument(key, v, 'an integer');
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
  return listField(body, key, max).map((x) => {
    if (Buffer.isBuffer(x) && x.length === 8) return Number(x.readBigInt64BE(0));
    if (typeof x === 'number' && Number.isInteger(x)) return x;
    throw invalidArgument(key, x, 'a list of sequence numbers (longs)');
  });
}
