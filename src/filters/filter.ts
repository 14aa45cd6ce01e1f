// Compiled filters: SQL filters (parsed once, when the rule is created), and the true and false filters, which "derive
// from the SQL filter" and mean `1=1` and `1=0` (docs/filters.md, "TRUE and FALSE filters", topic filters doc).

import type { Pred } from './ast.js';
import { FilterSyntaxError } from './errors.js';
import { evalPred } from './evaluate.js';
import type { FilterMessage } from './message.js';
import { parseFilter } from './parser.js';
import { toFilterValue, type FilterValue, type PlainValue, type Truth } from './values.js';

/**
 * Values of a SQL filter's or action's `@name` parameters (SqlFilter.Parameters / SqlRuleAction.Parameters of the
 * management API), keyed as the client sent them (`@min`; a key without `@` is accepted too).
 */
export type SqlParameters = Readonly<Record<string, PlainValue>>;

/** Most parameters one expression may carry (our bound; an expression of 1,024 characters cannot use more). */
export const MAX_SQL_PARAMETERS = 256;

/** Types a rule's parameters for the parser: lower-case names without `@` (names match case-insensitively, as properties do). */
export function bindParameters(params: SqlParameters | undefined, kind: 'filter' | 'action'): Map<string, FilterValue> {
  const out = new Map<string, FilterValue>();
  const entries = Object.entries(params ?? {});
  if (entries.length > MAX_SQL_PARAMETERS) {
    throw new FilterSyntaxError(`The ${kind} has ${entries.length} parameters; the maximum is ${MAX_SQL_PARAMETERS}.`, null, kind, 'ArgumentOutOfRange');
  }
  for (const [key, value] of entries) {
    const name = key.replace(/^@/, '').toLowerCase();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new FilterSyntaxError(`'${key}' is not a valid parameter name.`, null, kind);
    out.set(name, toFilterValue(value));
  }
  return out;
}

/** Longest SQL filter or action text: 1,024 characters (quotas doc; .NET MaximumSqlRuleFilterStatementLength). */
export const MAX_EXPRESSION_LENGTH = 1024;

/** A compiled rule filter; a rule selects a message only when `evaluate` returns `true`. */
export interface Filter {
  readonly kind: 'sql' | 'true' | 'false' | 'correlation';
  /** TRUE, FALSE or UNKNOWN; throws FilterEvaluationError when Service Bus would raise a filter exception. */
  evaluate(msg: FilterMessage): Truth;
}

/**
 * A compiled SQL filter; `expression` is the original text, returned byte for byte by enumerate-rules (docs/filters.md,
 * "Rule management").
 */
export interface SqlFilter extends Filter {
  readonly kind: 'sql';
  readonly expression: string;
}

/** The filter of `$Default`: selects every message (`1=1`). */
export interface TrueFilter extends Filter {
  readonly kind: 'true';
  readonly expression: '1=1';
}

/** Selects no message (`1=0`). */
export interface FalseFilter extends Filter {
  readonly kind: 'false';
  readonly expression: '1=0';
}

/** The true filter. */
export const TRUE_FILTER: TrueFilter = Object.freeze({ kind: 'true', expression: '1=1', evaluate: () => true });

/** The false filter. */
export const FALSE_FILTER: FalseFilter = Object.freeze({ kind: 'false', expression: '1=0', evaluate: () => false });

// An empty text is an argument error (the .NET SDK's SqlRuleFilter rejects it too); more than 1,024 characters is
// `argument-out-of-range` (docs/filters.md, "Limits", "Refusals and their conditions").
/** Refuses empty and over-long expressions before parsing; throws FilterSyntaxError. */
export function checkExpressionText(expression: string, kind: 'filter' | 'action'): void {
  if (typeof expression !== 'string' || expression.trim().length === 0) {
    throw new FilterSyntaxError('The expression is empty.', null, kind);
  }
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new FilterSyntaxError(
      `The expression is ${expression.length} characters long; the maximum is ${MAX_EXPRESSION_LENGTH}.`,
      null,
      kind,
      'ArgumentOutOfRange',
    );
  }
}

/** Parses a SQL filter once, binding its `@name` parameters; throws FilterSyntaxError (a RuleDefinitionError) when the SDK's add-rule must fail. */
export function compileSqlFilter(expression: string, parameters?: SqlParameters): SqlFilter {
  checkExpressionText(expression, 'filter');
  const root: Pred = parseFilter(expression, bindParameters(parameters, 'filter'));
  return Object.freeze({
    kind: 'sql' as const,
    expression,
    evaluate: (msg: FilterMessage): Truth => evalPred(root, msg),
  });
}
