// Recursive-descent parser for SQL filters and actions (docs/filters.md, "Grammar and precedence", "Actions", "Rule
// management"). Precedence follows SQL-92 (docs/filters.md, "Grammar and precedence"; inferred): OR < AND < NOT <
// comparison/IN/LIKE/IS < + - < * / % < unary. Comparisons are parsed as the lowest-precedence operators of one
// expression grammar and each operand is then checked to be a value or a condition; this resolves the `(`-ambiguity of
// the grammar without backtracking: `(a + 1) * 2 > 3` and `(a = 1 OR b = 2) AND c = 3` both parse.

import type { ArithOp, Expr, PropertyRef, Pred, Statement } from './ast.js';
import { FilterSyntaxError } from './errors.js';
import { positionAt, tokenize, type Token } from './lexer.js';
import { systemProperty } from './system.js';
import { Typed, type CompareOp, type FilterValue } from './values.js';

/**
 * Guard rails (our choice; docs/filters.md, "Limits"): far beyond what 1,024 characters need, and keep recursion off
 * the stack limit.
 */
export const MAX_DEPTH = 64;
/** Largest IN list (docs/filters.md, "Limits"; our choice). */
export const MAX_IN_ITEMS = 1000;
/** At most 32 statements per action (quotas doc "expressions per rule action"). */
export const MAX_ACTION_STATEMENTS = 32;

type Node = { readonly pred: Pred; readonly offset: number } | { readonly expr: Expr; readonly offset: number };

const COMPARE_OPS = new Set(['=', '<>', '<', '<=', '>', '>=']);
const FUNCTIONS = new Set(['newid', 'property', 'p']);

class Parser {
  private pos = 0;
  private depth = 0;
  private readonly tokens: Token[];

  constructor(
    private readonly src: string,
    private readonly kind: 'filter' | 'action',
    /** Parameter values by lower-case name without `@`. */
    private readonly params: ReadonlyMap<string, FilterValue> = new Map(),
  ) {
    this.tokens = tokenize(src, kind);
  }

  fail(offset: number, details: string): never {
    const tok = this.tokens.find((t) => t.offset === offset);
    const text = tok === undefined || tok.kind === 'eof' ? '<EOF>' : tok.text;
    throw new FilterSyntaxError(details, positionAt(this.src, offset, text), this.kind);
  }

  peek(ahead = 0): Token {
    return this.tokens[Math.min(this.pos + ahead, this.tokens.length - 1)]!;
  }

  next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.pos++;
    return t;
  }

  isOp(value: string, ahead = 0): boolean {
    const t = this.peek(ahead);
    return t.kind === 'op' && t.value === value;
  }

  isKeyword(value: string): boolean {
    const t = this.peek();
    return t.kind === 'keyword' && t.value === value;
  }

  unexpected(): never {
    const t = this.peek();
    this.fail(t.offset, t.kind === 'eof' ? 'Unexpected end of expression.' : `Unexpected token '${t.text}'.`);
  }

  expectOp(value: string): void {
    if (!this.isOp(value)) {
      const t = this.peek();
      this.fail(t.offset, `Expected '${value}' but found ${t.kind === 'eof' ? 'the end of the expression' : `'${t.text}'`}.`);
    }
    this.next();
  }

  expectEnd(): void {
    if (this.peek().kind !== 'eof') this.unexpected();
  }

  nested<T>(offset: number, f: () => T): T {
    if (++this.depth > MAX_DEPTH) this.fail(offset, `Expression is nested more than ${MAX_DEPTH} levels deep.`);
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  asPred(n: Node): Pred {
    if ('pred' in n) return n.pred;
    this.fail(n.offset, 'A value is not a condition; compare it, e.g. `flag = TRUE`.');
  }

  asExpr(n: Node): Expr {
    if ('expr' in n) return n.expr;
    this.fail(n.offset, 'A condition cannot be used as a value.');
  }

  // or_pred = and_pred { OR and_pred }
  parseOr(): Node {
    return this.parseConnective('OR', () => this.parseAnd());
  }

  // and_pred = not_pred { AND not_pred }
  parseAnd(): Node {
    return this.parseConnective('AND', () => this.parseNot());
  }

  parseConnective(keyword: 'AND' | 'OR', operand: () => Node): Node {
    let left = operand();
    while (this.isKeyword(keyword)) {
      const offset = this.next().offset;
      const right = this.asPred(operand());
      const kind = keyword === 'AND' ? 'and' : 'or';
      left = { pred: { kind, left: this.asPred(left), right, offset }, offset: left.offset };
    }
    return left;
  }

  // not_pred = NOT not_pred | comparison
  parseNot(): Node {
    if (!this.isKeyword('NOT')) return this.parseComparison();
    const offset = this.next().offset;
    const operand = this.nested(offset, () => this.asPred(this.parseNot()));
    return { pred: { kind: 'not', operand, offset }, offset };
  }

  // expr comp_op expr | expr [NOT] IN (...) | expr [NOT] LIKE expr [ESCAPE expr] | property IS [NOT] NULL | expr
  parseComparison(): Node {
    const left = this.parseAdditive();
    const offset = left.offset;
    const t = this.peek();
    if (t.kind === 'op' && COMPARE_OPS.has(t.value)) {
      this.next();
      const right = this.asExpr(this.parseAdditive());
      return { pred: { kind: 'compare', op: t.value as CompareOp, left: this.asExpr(left), right, offset }, offset };
    }
    if (this.isKeyword('IS')) {
      this.next();
      const negated = this.isKeyword('NOT');
      if (negated) this.next();
      if (!this.isKeyword('NULL')) this.unexpected();
      this.next();
      // IS [NOT] NULL needs a property on the left (SQL filter syntax doc grammar): `(a+1) IS NULL` is an error.
      const e = this.asExpr(left);
      if (e.kind !== 'prop') this.fail(offset, 'IS NULL can only be applied to a property.');
      return { pred: { kind: 'isnull', negated, ref: e.ref, offset }, offset };
    }
    const negated = this.isKeyword('NOT');
    if (negated) this.next();
    if (this.isKeyword('IN')) {
      this.next();
      return { pred: { kind: 'in', negated, left: this.asExpr(left), items: this.parseInList(), offset }, offset };
    }
    if (this.isKeyword('LIKE')) {
      this.next();
      const pattern = this.asExpr(this.parseAdditive());
      let escape: Expr | null = null;
      if (this.isKeyword('ESCAPE')) {
        this.next();
        escape = this.asExpr(this.parseAdditive());
        this.checkConstantEscape(escape);
      }
      return { pred: { kind: 'like', negated, left: this.asExpr(left), pattern, escape, offset }, offset };
    }
    if (negated) this.unexpected();
    return left;
  }

  parseInList(): Expr[] {
    this.expectOp('(');
    const items: Expr[] = [];
    for (;;) {
      if (items.length === MAX_IN_ITEMS) this.fail(this.peek().offset, `An IN list may hold at most ${MAX_IN_ITEMS} items.`);
      items.push(this.asExpr(this.parseAdditive()));
      if (!this.isOp(',')) break;
      this.next();
    }
    this.expectOp(')');
    return items;
  }

  // ESCAPE must be one character (SQL filter syntax doc); a constant that is not is refused at add-rule
  // (docs/filters.md, "LIKE"; our choice).
  checkConstantEscape(e: Expr): void {
    if (e.kind !== 'const' || e.value.type === 'null') return;
    if (e.value.type !== 'string' || e.value.value.length !== 1) {
      this.fail(e.offset, 'The ESCAPE value must be a string of exactly one character.');
    }
  }

  // expr = term { (+|-) term }
  parseAdditive(): Node {
    return this.parseBinary(['+', '-'], () => this.parseTerm());
  }

  // term = unary { (*|/|%) unary }
  parseTerm(): Node {
    return this.parseBinary(['*', '/', '%'], () => this.parseUnary());
  }

  parseBinary(ops: readonly string[], operand: () => Node): Node {
    let left = operand();
    for (;;) {
      const t = this.peek();
      if (t.kind !== 'op' || !ops.includes(t.value)) return left;
      this.next();
      const right = this.asExpr(operand());
      const expr: Expr = { kind: 'arith', op: t.value as ArithOp, left: this.asExpr(left), right, offset: t.offset };
      left = { expr, offset: left.offset };
    }
  }

  // unary = (+|-) unary | primary
  parseUnary(): Node {
    const t = this.peek();
    if (!this.isOp('-') && !this.isOp('+')) return this.parsePrimary();
    this.next();
    const operand = this.nested(t.offset, () => this.asExpr(this.parseUnary()));
    return { expr: { kind: t.value === '-' ? 'neg' : 'pos', operand, offset: t.offset }, offset: t.offset };
  }

  parsePrimary(): Node {
    const t = this.peek();
    const offset = t.offset;
    const constant = (value: Expr & { kind: 'const' }): Node => {
      this.next();
      return { expr: value, offset };
    };
    switch (t.kind) {
      case 'integer':
        return constant({ kind: 'const', value: Typed.long(t.int!), offset });
      case 'decimal':
        return constant({ kind: 'const', value: Typed.double(t.num!), offset });
      case 'string':
        return constant({ kind: 'const', value: Typed.string(t.value), offset });
      case 'param': {
        // `@name` takes its value from the rule's Parameters (SqlFilter.Parameters / SqlRuleAction.Parameters of the
        // management API), bound once when the rule is created; a parameter without a value refuses the rule.
        const value = this.params.get(t.value.toLowerCase());
        if (value === undefined) return this.fail(offset, `Parameter '${t.text}' has no value in the rule's Parameters.`);
        return constant({ kind: 'const', value, offset });
      }
      case 'keyword':
        if (t.value === 'TRUE' || t.value === 'FALSE') {
          return constant({ kind: 'const', value: Typed.boolean(t.value === 'TRUE'), offset });
        }
        if (t.value === 'NULL') return constant({ kind: 'const', value: Typed.null(), offset });
        if (t.value === 'EXISTS') {
          this.next();
          this.expectOp('(');
          const ref = this.parseProperty();
          this.expectOp(')');
          return { pred: { kind: 'exists', ref, offset }, offset };
        }
        return this.unexpected();
      case 'op':
        if (t.value !== '(') return this.unexpected();
        this.next();
        return this.nested(offset, () => {
          const inner = this.parseOr();
          this.expectOp(')');
          return 'pred' in inner ? { pred: inner.pred, offset } : { expr: inner.expr, offset };
        });
      case 'ident':
        // newid, property, p are functions only when followed by "(" (docs/filters.md, "Lexical rules"; our choice).
        if (this.isOp('(', 1) && FUNCTIONS.has(t.value.toLowerCase())) return this.parseFunction(t);
        return { expr: { kind: 'prop', ref: this.parseProperty(), offset }, offset };
      case 'name':
        return { expr: { kind: 'prop', ref: this.parseProperty(), offset }, offset };
      default:
        return this.unexpected();
    }
  }

  parseFunction(t: Token): Node {
    this.next();
    this.expectOp('(');
    const offset = t.offset;
    if (t.value.toLowerCase() === 'newid') {
      this.expectOp(')');
      return { expr: { kind: 'newid', offset }, offset };
    }
    const name = this.nested(offset, () => this.asExpr(this.parseAdditive()));
    this.expectOp(')');
    return { expr: { kind: 'dynprop', name, offset }, offset };
  }

  // property = [ (sys|user) "." ] name
  parseProperty(): PropertyRef {
    const t = this.next();
    const offset = t.offset;
    if (t.kind !== 'ident' && t.kind !== 'name') {
      this.pos--;
      return this.unexpected();
    }
    if (t.kind === 'ident' && this.isOp('.')) {
      const scope = t.value.toLowerCase();
      // Scope "Valid values are sys or user" (SQL filter syntax doc); `a.b` unbracketed is not a name.
      if (scope !== 'sys' && scope !== 'user') this.fail(offset, `Unknown scope '${t.value}'; valid scopes are sys and user.`);
      this.next();
      const n = this.peek();
      if (n.kind !== 'ident' && n.kind !== 'name') return this.unexpected();
      this.next();
      if (scope === 'user') return { scope: 'user', name: n.value, offset };
      const prop = systemProperty(n.value);
      // "An attempt to access a nonexistent system property is an error" (SQL filter syntax doc); refused early
      // (docs/filters.md, "Property resolution"; our choice).
      if (prop === undefined) this.fail(n.offset, `'sys.${n.value}' is not a system property.`);
      return { scope: 'sys', prop, offset };
    }
    return { scope: 'user', name: t.value, offset };
  }

  // action = statement { [";"|","] statement } [";"]
  parseStatements(): Statement[] {
    const out: Statement[] = [];
    for (;;) {
      if (out.length === MAX_ACTION_STATEMENTS) {
        this.fail(this.peek().offset, `An action may hold at most ${MAX_ACTION_STATEMENTS} statements.`);
      }
      out.push(this.parseStatement());
      if (this.isOp(';') || this.isOp(',')) this.next();
      if (this.peek().kind === 'eof') return out;
    }
  }

  parseStatement(): Statement {
    const t = this.peek();
    if (t.kind !== 'keyword' || (t.value !== 'SET' && t.value !== 'REMOVE')) {
      this.fail(t.offset, t.kind === 'eof' ? 'Expected SET or REMOVE.' : `Expected SET or REMOVE but found '${t.text}'.`);
    }
    this.next();
    const target = this.parseProperty();
    if (t.value === 'REMOVE') {
      if (target.scope === 'sys' && !target.prop.removable) {
        this.fail(target.offset, `System property ${target.prop.name} cannot be removed.`);
      }
      return { kind: 'remove', target };
    }
    // Read-only system properties (message payloads doc) cannot be set (our choice: refused at add-rule;
    // docs/filters.md, "Actions").
    if (target.scope === 'sys' && !target.prop.settable) {
      this.fail(target.offset, `System property ${target.prop.name} is read-only.`);
    }
    this.expectOp('=');
    // The action grammar has no predicates: `SET x = a >= 1` is a syntax error (docs/filters.md, "Actions").
    const value = this.asExpr(this.parseAdditive());
    return { kind: 'set', target, value };
  }
}

/** Parses a SQL filter expression into a predicate; throws FilterSyntaxError. */
export function parseFilter(src: string, params?: ReadonlyMap<string, FilterValue>): Pred {
  const p = new Parser(src, 'filter', params);
  const root = p.parseOr();
  p.expectEnd();
  return p.asPred(root);
}

/** Parses a SQL rule action into its statements; throws FilterSyntaxError. */
export function parseAction(src: string, params?: ReadonlyMap<string, FilterValue>): Statement[] {
  const p = new Parser(src, 'action', params);
  const statements = p.parseStatements();
  p.expectEnd();
  return statements;
}
