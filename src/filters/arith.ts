// Arithmetic on typed values, following C# operator binding as the SQL filter docs require (SQL filter syntax doc
// "follow the same semantics as the C# operator binding in data type promotions and implicit conversions"; the C#
// specification's binary numeric promotion; docs/filters.md, "Arithmetic"): integer ⊕ integer stays integral
// (7 / 2 = 3, -7 % 3 = -1), any double makes a double, integer division by zero throws, `+` with a string
// concatenates, other mismatches are UNKNOWN.

import type { ArithOp } from './ast.js';
import { FilterEvaluationError } from './errors.js';
import { isFloating, isInteger, isText, renderText, Typed, type EvalValue, type FilterValue } from './values.js';

const INT64_MIN = -9223372036854775808n;

function isNumeric(v: FilterValue): boolean {
  return isInteger(v) || isFloating(v);
}

function integerOp(op: ArithOp, x: bigint, y: bigint, unsigned: boolean): FilterValue {
  if ((op === '/' || op === '%') && y === 0n) {
    throw new FilterEvaluationError('DivideByZeroException', 'Attempted to divide by zero.');
  }
  // C# throws even in unchecked code for Int64.MinValue / -1.
  if (op === '/' && !unsigned && x === INT64_MIN && y === -1n) {
    throw new FilterEvaluationError('OverflowException', 'Arithmetic operation resulted in an overflow.');
  }
  // BigInt division truncates toward zero and % takes the dividend's sign, exactly as C# does.
  const r = op === '+' ? x + y : op === '-' ? x - y : op === '*' ? x * y : op === '/' ? x / y : x % y;
  // Unchecked Int64 arithmetic wraps (docs/filters.md, "Arithmetic"; our choice); ulong ⊕ ulong stays ulong.
  return unsigned ? { type: 'ulong', value: BigInt.asUintN(64, r) } : { type: 'long', value: BigInt.asIntN(64, r) };
}

function doubleOp(op: ArithOp, x: number, y: number): FilterValue {
  // IEEE semantics: division by zero gives ±Infinity or NaN, no error (C#).
  const r = op === '+' ? x + y : op === '-' ? x - y : op === '*' ? x * y : op === '/' ? x / y : x % y;
  return Typed.double(r);
}

/** Applies a binary arithmetic operator; null (UNKNOWN) for UNKNOWN operands and undefined combinations. */
export function arithmetic(op: ArithOp, a: EvalValue, b: EvalValue): EvalValue {
  if (a === null || b === null) return null;
  if (op === '+' && (isText(a) || isText(b))) {
    // C# string + object: concatenation with the other side rendered invariantly (azure-service-bus#196 `OrderNum +
    // newid()`).
    const l = renderText(a);
    const r = renderText(b);
    return l === null || r === null ? null : Typed.string(l + r);
  }
  if (isInteger(a) && isInteger(b)) return integerOp(op, a.value, b.value, a.type === 'ulong' && b.type === 'ulong');
  if (isNumeric(a) && isNumeric(b)) return doubleOp(op, Number(a.value), Number(b.value));
  // DateTime - DateTime = TimeSpan, DateTime ± TimeSpan = DateTime, TimeSpan ± TimeSpan = TimeSpan (C#; filter examples
  // doc).
  if (op === '+' || op === '-') {
    const sign = op === '+' ? 1 : -1;
    if (a.type === 'timestamp' && b.type === 'timestamp' && op === '-') return Typed.duration(a.value - b.value);
    if (a.type === 'timestamp' && b.type === 'duration') return Typed.timestamp(a.value + sign * b.value);
    if (a.type === 'duration' && b.type === 'timestamp' && op === '+') return Typed.timestamp(a.value + b.value);
    if (a.type === 'duration' && b.type === 'duration') return Typed.duration(a.value + sign * b.value);
  }
  return null;
}

/** Applies unary minus or plus; numbers only (docs/filters.md, "Arithmetic"; our choice), otherwise UNKNOWN. */
export function unary(op: 'neg' | 'pos', a: EvalValue): EvalValue {
  if (a === null) return null;
  if (isInteger(a)) {
    if (op === 'pos') return a;
    return { type: 'long', value: BigInt.asIntN(64, -a.value) };
  }
  if (isFloating(a)) return op === 'pos' ? a : Typed.double(-a.value);
  if (a.type === 'duration') return op === 'pos' ? a : Typed.duration(-a.value);
  return null;
}
