// SQL rule actions (docs/filters.md, "Actions", SQL action syntax doc): SET / REMOVE on application and system
// properties, applied to a copy of the message, statement by statement (each sees the previous ones' effects).

import type { Statement } from './ast.js';
import { evalExpr } from './evaluate.js';
import { bindParameters, checkExpressionText, type SqlParameters } from './filter.js';
import { findPropertyKey, type FilterMessage } from './message.js';
import { parseAction } from './parser.js';
import { assignSystem } from './system.js';
import { isFloating, isInteger, Typed, type EvalValue, type FilterValue, type IntegerType } from './values.js';

/** A compiled SQL rule action; `expression` is the original text. */
export interface SqlAction {
  readonly expression: string;
  /** Returns a modified copy of `msg` (the input is not touched); throws FilterEvaluationError. */
  apply(msg: FilterMessage): FilterMessage;
}

// C#'s implicit numeric conversions (C# specification, "Implicit numeric conversions"), widening only: the integer
// types each integer type converts to without a cast. AMQP byte is .NET sbyte and ubyte is byte.
const WIDER_INTEGERS: Record<IntegerType, readonly IntegerType[]> = {
  byte: ['short', 'int', 'long'],
  ubyte: ['short', 'ushort', 'int', 'uint', 'long', 'ulong'],
  short: ['int', 'long'],
  ushort: ['int', 'uint', 'long', 'ulong'],
  int: ['long'],
  uint: ['long', 'ulong'],
  long: [],
  ulong: [],
};

/**
 * Converts an assigned value to the existing property's type where C# converts implicitly (SQL action syntax doc: "SET
 * performs implicit conversion if possible when the expression type and the existing property type are different";
 * docs/filters.md, "Actions"). Implicit conversions only widen: an int assigned to a long property becomes a long, an
 * integer assigned to a floating one takes its type; a long never narrows back to an int. Integer constants are
 * Int64 (SQL filter syntax doc) and int ⊕ long is long, so `SET qty = qty * 10` turns an Int32 qty into an Int64, as
 * Service Bus delivers it. Anything else replaces the property with the new value and type.
 */
function convertForUser(old: FilterValue | undefined, v: FilterValue): FilterValue {
  if (old === undefined || old.type === 'null' || v.type === 'null') return v;
  if (isInteger(old) && isInteger(v) && WIDER_INTEGERS[v.type].includes(old.type)) return { type: old.type, value: v.value };
  if (isFloating(old) && isInteger(v)) return { type: old.type, value: Number(v.value) };
  if (old.type === 'double' && v.type === 'float') return { type: 'double', value: v.value };
  return v;
}

// UNKNOWN stores null (SQL UPDATE semantics, docs/filters.md, "Actions"; our choice). Names are matched
// case-insensitively and an existing key keeps its spelling (.NET rule-manager live test: `SET Priority = 'high'`
// overwrites `priority`); a new key is as given.
/** Returns a copy of `msg` with application property `name` set to `value` (case-insensitive name match). */
export function setUserProperty(msg: FilterMessage, name: string, value: EvalValue): FilterMessage {
  const key = findPropertyKey(msg.properties, name) ?? name;
  const properties = new Map(msg.properties);
  properties.set(key, convertForUser(msg.properties.get(key), value ?? Typed.null()));
  return { system: msg.system, properties };
}

function removeUserProperty(msg: FilterMessage, name: string): FilterMessage {
  const key = findPropertyKey(msg.properties, name);
  if (key === undefined) return msg;
  const properties = new Map(msg.properties);
  properties.delete(key);
  return { system: msg.system, properties };
}

function run(s: Statement, msg: FilterMessage): FilterMessage {
  const t = s.target;
  if (s.kind === 'remove') {
    return t.scope === 'user' ? removeUserProperty(msg, t.name) : { ...msg, system: assignSystem(msg.system, t.prop, null) };
  }
  // Missing user properties on the right are UNKNOWN "following the same semantics as SQLFilter" (SQL action syntax
  // doc).
  const value = evalExpr(s.value, msg);
  if (t.scope === 'user') return setUserProperty(msg, t.name, value);
  return { ...msg, system: assignSystem(msg.system, t.prop, value) };
}

/** Parses a SQL rule action once; throws FilterSyntaxError (≤ 1,024 characters, ≤ 32 statements, quotas doc). */
export function compileSqlAction(expression: string, parameters?: SqlParameters): SqlAction {
  checkExpressionText(expression, 'action');
  const statements = parseAction(expression, bindParameters(parameters, 'action'));
  return Object.freeze({
    expression,
    apply(msg: FilterMessage): FilterMessage {
      let out: FilterMessage = { system: { ...msg.system }, properties: new Map(msg.properties) };
      for (const s of statements) out = run(s, out);
      return out;
    },
  });
}
