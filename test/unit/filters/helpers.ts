// Shorthands for the typed values in the filter case tables: `i32`, `u32`, `i64`, `dbl`, `str`,
// `bool`, `ts`, `null`, and a message builder.

import { expect } from 'vitest';
import { filterMessage, Typed, type FilterMessage, type FilterValue, type MessageDescription, type SystemProperties } from '../../../src/filters/index.js';
import { RuleDefinitionError, type RuleErrorCode } from '../../../src/filters/index.js';

/** Int32 value. */
export const i32 = (v: number): FilterValue => Typed.int(v);
/** UInt32 value (what the JS SDK sends for a positive integer). */
export const u32 = (v: number): FilterValue => Typed.uint(v);
/** Int64 value. */
export const i64 = (v: bigint | number): FilterValue => Typed.long(v);
/** Double value. */
export const dbl = (v: number): FilterValue => Typed.double(v);
/** String value. */
export const str = (v: string): FilterValue => Typed.string(v);
/** Boolean value. */
export const bool = (v: boolean): FilterValue => Typed.boolean(v);
/** Timestamp value from an ISO date. */
export const ts = (iso: string): FilterValue => Typed.timestamp(Date.parse(iso));

/** A message with the given application properties (a record, or entries in wire order) and system properties. */
export function msg(props: MessageDescription['properties'] = {}, system: SystemProperties = {}): FilterMessage {
  return filterMessage({ properties: props, system });
}

/** Runs `f`, expects a RuleDefinitionError, and returns it (fails the test when nothing is thrown). */
export function refusal(f: () => unknown, code: RuleErrorCode = 'InvalidArgument'): RuleDefinitionError {
  let caught: unknown = undefined;
  try {
    f();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RuleDefinitionError);
  const err = caught as RuleDefinitionError;
  expect(err.code).toBe(code);
  return err;
}
