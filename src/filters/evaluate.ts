// Evaluation of parsed filters against a message, with SQL three-valued logic (the SQL filter syntax doc's truth
// tables; docs/filters.md, "Three-valued logic"). NULL and UNKNOWN behave alike everywhere except IS [NOT] NULL and
// EXISTS (our choice), so `x = NULL` is never TRUE. Failures that Service Bus raises as exceptions (division by zero, a
// computed ESCAPE of the wrong length, an unknown `sys.` name in `property()`) throw FilterEvaluationError.

import { randomUUID } from 'node:crypto';
import { arithmetic, unary } from './arith.js';
import type { Expr, PropertyRef, Pred } from './ast.js';
import { FilterEvaluationError } from './errors.js';
import { likeMatch } from './like.js';
import { getProperty, type FilterMessage } from './message.js';
import { readSystem, systemProperty } from './system.js';
import { compareValues, isText, Typed, UNKNOWN, type EvalValue, type FilterValue, type Truth } from './values.js';

function not(t: Truth): Truth {
  return t === UNKNOWN ? UNKNOWN : !t;
}

/** A property's raw state: undefined when absent, a typed null when present with a null value. */
function lookup(ref: PropertyRef, msg: FilterMessage): FilterValue | undefined {
  return ref.scope === 'sys' ? readSystem(msg, ref.prop) : getProperty(msg.properties, ref.name);
}

function present(v: FilterValue | undefined): EvalValue {
  return v === undefined || v.type === 'null' ? null : v;
}

// property(name) / p(name): the name may carry a scope, `p('sys.Label')` (docs/filters.md, "Property resolution"; our
// choice); non-string → UNKNOWN.
function dynamicProperty(name: EvalValue, msg: FilterMessage): EvalValue {
  if (name === null || !isText(name)) return null;
  const m = /^(sys|user)\.(.+)$/is.exec(name.value);
  if (m === null || m[1]!.toLowerCase() === 'user') return present(getProperty(msg.properties, m?.[2] ?? name.value));
  const prop = systemProperty(m[2]!);
  // A nonexistent system property is an error, not UNKNOWN (SQL filter syntax doc; its 2018 revision "throws a
  // FilterException").
  if (prop === undefined) throw new FilterEvaluationError('FilterException', `'sys.${m[2]}' is not a system property.`);
  return present(readSystem(msg, prop));
}

/** Evaluates a value expression; null means UNKNOWN/NULL. */
export function evalExpr(e: Expr, msg: FilterMessage): EvalValue {
  switch (e.kind) {
    case 'const':
      return present(e.value);
    case 'prop':
      return present(lookup(e.ref, msg));
    case 'dynprop':
      return dynamicProperty(evalExpr(e.name, msg), msg);
    case 'newid':
      return Typed.uuid(randomUUID());
    case 'neg':
    case 'pos':
      return unary(e.kind, evalExpr(e.operand, msg));
    case 'arith':
      return arithmetic(e.op, evalExpr(e.left, msg), evalExpr(e.right, msg));
  }
}

// x IN (a, b) ≡ x = a OR x = b (SQL filter syntax doc); an UNKNOWN item makes a non-match UNKNOWN (docs/filters.md,
// "Three-valued logic"; SQL-92, our choice).
function evalIn(p: Pred & { kind: 'in' }, msg: FilterMessage): Truth {
  const left = evalExpr(p.left, msg);
  if (left === null) return UNKNOWN;
  let result: Truth = false;
  for (const item of p.items) {
    const t = compareValues('=', left, evalExpr(item, msg));
    if (t === true) {
      result = true;
      break;
    }
    if (t === UNKNOWN) result = UNKNOWN;
  }
  return p.negated ? not(result) : result;
}

function evalLike(p: Pred & { kind: 'like' }, msg: FilterMessage): Truth {
  const value = evalExpr(p.left, msg);
  const pattern = evalExpr(p.pattern, msg);
  const escape = p.escape === null ? undefined : evalExpr(p.escape, msg);
  // Any UNKNOWN operand → UNKNOWN (SQL filter syntax doc); a non-string left side or pattern → UNKNOWN
  // (docs/filters.md, "LIKE"; our choice).
  if (value === null || pattern === null || escape === null) return UNKNOWN;
  if (!isText(value) || !isText(pattern)) return UNKNOWN;
  let esc: string | null = null;
  if (escape !== undefined) {
    if (!isText(escape) || escape.value.length !== 1) {
      throw new FilterEvaluationError('FilterException', 'The ESCAPE value must be a string of exactly one character.');
    }
    esc = escape.value;
  }
  const match = likeMatch(value.value, pattern.value, esc);
  return p.negated ? !match : match;
}

// AND is decided by a FALSE operand and OR by a TRUE one; otherwise the result is UNKNOWN unless both
// operands are the other truth value (SQL filter syntax doc truth tables).
function connective(p: Pred & { kind: 'and' | 'or' }, msg: FilterMessage, decisive: boolean): Truth {
  const l = evalPred(p.left, msg);
  if (l === decisive) return decisive;
  const r = evalPred(p.right, msg);
  if (r === decisive) return decisive;
  return l === !decisive && r === !decisive ? !decisive : UNKNOWN;
}

/** Evaluates a predicate to TRUE, FALSE or UNKNOWN; throws FilterEvaluationError on evaluation failures. */
export function evalPred(p: Pred, msg: FilterMessage): Truth {
  switch (p.kind) {
    case 'and':
      return connective(p, msg, false);
    case 'or':
      return connective(p, msg, true);
    case 'not':
      return not(evalPred(p.operand, msg));
    case 'compare':
      return compareValues(p.op, evalExpr(p.left, msg), evalExpr(p.right, msg));
    case 'in':
      return evalIn(p, msg);
    case 'like':
      return evalLike(p, msg);
    case 'isnull': {
      // IS NULL is TRUE "if either the property doesn't exist or the property's value is null" (SQL filter syntax doc).
      const isNull = present(lookup(p.ref, msg)) === null;
      return p.negated ? !isNull : isNull;
    }
    case 'exists': {
      // EXISTS tests presence: a user property present with a null value exists; a system one exists when set
      // (docs/filters.md, "IS NULL and EXISTS").
      const v = lookup(p.ref, msg);
      return p.ref.scope === 'sys' ? v !== undefined && v.type !== 'null' : v !== undefined;
    }
  }
}
