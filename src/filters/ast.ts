// Syntax trees of the SQL filter and action languages (docs/filters.md, "Grammar and precedence", "Actions"). Value
// expressions and predicates are separate types: the grammar never lets a bare value stand where a condition is
// required (`flag` alone is a syntax error, docs/filters.md, "Grammar and precedence"), and the parser enforces this
// when it builds the tree.

import type { SystemProperty } from './system.js';
import type { CompareOp, FilterValue } from './values.js';

/**
 * A property reference: `sys.X` resolved at parse time, or a user property (the default scope, SQL filter syntax doc).
 */
export type PropertyRef =
  | { readonly scope: 'sys'; readonly prop: SystemProperty; readonly offset: number }
  | { readonly scope: 'user'; readonly name: string; readonly offset: number };

/** Arithmetic operators. */
export type ArithOp = '+' | '-' | '*' | '/' | '%';

/** A value expression. */
export type Expr =
  | { readonly kind: 'const'; readonly value: FilterValue; readonly offset: number }
  | { readonly kind: 'prop'; readonly ref: PropertyRef; readonly offset: number }
  /** `property(expr)` / `p(expr)`: a property looked up by a computed name (SQL filter syntax doc). */
  | { readonly kind: 'dynprop'; readonly name: Expr; readonly offset: number }
  | { readonly kind: 'newid'; readonly offset: number }
  | { readonly kind: 'neg' | 'pos'; readonly operand: Expr; readonly offset: number }
  | { readonly kind: 'arith'; readonly op: ArithOp; readonly left: Expr; readonly right: Expr; readonly offset: number };

/** A predicate (three-valued). */
export type Pred =
  | { readonly kind: 'and' | 'or'; readonly left: Pred; readonly right: Pred; readonly offset: number }
  | { readonly kind: 'not'; readonly operand: Pred; readonly offset: number }
  | { readonly kind: 'compare'; readonly op: CompareOp; readonly left: Expr; readonly right: Expr; readonly offset: number }
  | { readonly kind: 'in'; readonly negated: boolean; readonly left: Expr; readonly items: readonly Expr[]; readonly offset: number }
  | {
      readonly kind: 'like';
      readonly negated: boolean;
      readonly left: Expr;
      readonly pattern: Expr;
      readonly escape: Expr | null;
      readonly offset: number;
    }
  | { readonly kind: 'isnull'; readonly negated: boolean; readonly ref: PropertyRef; readonly offset: number }
  | { readonly kind: 'exists'; readonly ref: PropertyRef; readonly offset: number };

/** One statement of a SQL rule action (SQL action syntax doc). */
export type Statement =
  | { readonly kind: 'set'; readonly target: PropertyRef; readonly value: Expr }
  | { readonly kind: 'remove'; readonly target: PropertyRef };
