// Tokenizer for the SQL filter and action languages (docs/filters.md, "Lexical rules", SQL filter syntax doc). The
// lexical rules are the awkward part: case-insensitive keywords, Unicode identifier classes, `[..]]..]` and `".."".."`
// identifiers, `''` in strings, Int64-range integer literals.

import { FilterSyntaxError, type SyntaxPosition } from './errors.js';

/** Token kinds: `ident` is a regular identifier (maybe a keyword), `name` a delimited or quoted one. */
export type TokenKind = 'ident' | 'keyword' | 'name' | 'string' | 'integer' | 'decimal' | 'param' | 'op' | 'eof';

/** One token; `value` is the identifier/string content, the upper-cased keyword, or the operator. */
export interface Token {
  readonly kind: TokenKind;
  readonly value: string;
  /** Source text of the token (for error messages). */
  readonly text: string;
  readonly offset: number;
  /** Integer literal value (Int64). */
  readonly int?: bigint;
  /** Decimal/approximate literal value (Double). */
  readonly num?: number;
}

// Reserved words of the filter grammar (SQL filter syntax doc: a regular identifier "can't be a reserved keyword").
const FILTER_KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IS', 'NULL', 'IN', 'LIKE', 'ESCAPE', 'EXISTS', 'TRUE', 'FALSE']);
const ACTION_KEYWORDS = new Set([...FILTER_KEYWORDS, 'SET', 'REMOVE']);

const OPERATORS = ['<>', '!=', '>=', '<=', '=', '>', '<', '+', '-', '*', '/', '%', '(', ')', ',', '.', ';'];

// Regular identifier: [[:IsLetter:]][_[:IsLetter:][:IsDigit:]]* (SQL filter syntax doc); .NET IsDigit is category Nd.
const IDENT_START = /\p{L}/u;
const IDENT_PART = /[\p{L}\p{Nd}_]/u;
const DIGIT = /[0-9]/;
const INT64_MAX = 9223372036854775807n;

/** Line/column (1-based) of an offset in the source, with the token text to report. */
export function positionAt(src: string, offset: number, token: string): SyntaxPosition {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < src.length; i++) {
    if (src[i] === '\n') {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1, token };
}

/** Splits an expression into tokens, ending with an `eof` token; throws FilterSyntaxError. */
export function tokenize(src: string, kind: 'filter' | 'action'): Token[] {
  const keywords = kind === 'action' ? ACTION_KEYWORDS : FILTER_KEYWORDS;
  const tokens: Token[] = [];
  function fail(offset: number, token: string, details: string): never {
    throw new FilterSyntaxError(details, positionAt(src, offset, token), kind);
  }
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      i++;
      continue;
    }
    const start = i;
    if (c === "'" || c === '[' || c === '"') {
      // String constant, delimited identifier, quoted identifier: a doubled closer stands for itself.
      const close = c === '[' ? ']' : c;
      let value = '';
      i++;
      for (;;) {
        if (i >= src.length) fail(start, src.slice(start, start + 20), `Unterminated ${c === "'" ? 'string' : 'identifier'}.`);
        if (src[i] === close) {
          if (src[i + 1] === close) {
            value += close;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += src[i];
        i++;
      }
      if (c !== "'" && value.length === 0) fail(start, src.slice(start, i), 'Empty identifier.');
      tokens.push({ kind: c === "'" ? 'string' : 'name', value, text: src.slice(start, i), offset: start });
      continue;
    }
    if (DIGIT.test(c) || (c === '.' && DIGIT.test(src[i + 1] ?? ''))) {
      const m = /^(\d*)(\.\d*)?([eE][+-]?\d+)?/.exec(src.slice(i))!;
      const text = m[0];
      i += text.length;
      if (IDENT_PART.test(src[i] ?? '') || src[i] === '.') fail(start, src.slice(start, i + 1), 'Invalid number.');
      if (m[2] === undefined && m[3] === undefined) {
        const int = BigInt(text);
        // Integer constants are Int64 (SQL filter syntax doc); outside its range there is no value to store.
        if (int > INT64_MAX) fail(start, text, 'Integer constant is outside the range of Int64.');
        tokens.push({ kind: 'integer', value: text, text, offset: start, int });
      } else {
        tokens.push({ kind: 'decimal', value: text, text, offset: start, num: Number(text) });
      }
      continue;
    }
    if (IDENT_START.test(c) || (c === '@' && IDENT_START.test(src[i + 1] ?? ''))) {
      i++;
      while (i < src.length && IDENT_PART.test(src[i]!)) i++;
      const text = src.slice(start, i);
      if (c === '@') {
        tokens.push({ kind: 'param', value: text.slice(1), text, offset: start });
      } else {
        const upper = text.toUpperCase();
        const k: TokenKind = keywords.has(upper) ? 'keyword' : 'ident';
        tokens.push({ kind: k, value: k === 'keyword' ? upper : text, text, offset: start });
      }
      continue;
    }
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (op === undefined) fail(start, c, `Unrecognized character. '${c}'`);
    i += op.length;
    tokens.push({ kind: 'op', value: op === '!=' ? '<>' : op, text: op, offset: start });
  }
  tokens.push({ kind: 'eof', value: '', text: '', offset: src.length });
  return tokens;
}
