// Parser refusals (docs/filters.md, "Lexical rules", "Grammar and precedence", "Limits", "Actions"): each must fail at
// add-rule with `com.microsoft:argument-error` (or `argument-out-of-range` for limits) and a message naming the
// position.

import { describe, it, expect } from 'vitest';
import { compileSqlAction, compileSqlFilter, FilterSyntaxError } from '../../../src/filters/index.js';
import { MAX_IN_ITEMS, parseFilter } from '../../../src/filters/parser.js';
import { msg, refusal } from './helpers.js';

/** Compiles a filter, expects a FilterSyntaxError, returns it. */
function syntaxError(expression: string, kind: 'filter' | 'action' = 'filter'): FilterSyntaxError {
  const err = refusal(() => (kind === 'filter' ? compileSqlFilter(expression) : compileSqlAction(expression)));
  expect(err).toBeInstanceOf(FilterSyntaxError);
  return err as FilterSyntaxError;
}

// [expression, line, column, token, details fragment]
const FILTER_ERRORS: readonly (readonly [string, number, number, string, string])[] = [
  ["color == 'red'", 1, 8, '=', "Unexpected token '='"],
  ['_x = 1', 1, 1, '_', "Unrecognized character. '_'"],
  ["color = 'red' AND", 1, 18, '<EOF>', 'end of expression'],
  ["color = 'red", 1, 9, "'red", 'Unterminated string'],
  ['[my prop = 1', 1, 1, '[my prop = 1', 'Unterminated identifier'],
  ['"abc = 1', 1, 1, '"abc = 1', 'Unterminated identifier'],
  ['(a = 1', 1, 7, '<EOF>', "Expected ')'"],
  ['a.b = 1', 1, 1, 'a', "Unknown scope 'a'"],
  ['flag', 1, 1, 'flag', 'not a condition'],
  ['TRUE', 1, 1, 'TRUE', 'not a condition'],
  ['a = 1 b', 1, 7, 'b', "Unexpected token 'b'"],
  ['a = 1\n  AND b === 2', 2, 10, '=', "Unexpected token '='"],
  ['(a + 1) IS NULL', 1, 1, '(', 'IS NULL can only be applied to a property'],
  ['EXISTS(a + 1)', 1, 10, '+', "Expected ')'"],
  ['sys.NoSuchProperty = 1', 1, 5, 'NoSuchProperty', "'sys.NoSuchProperty' is not a system property"],
  ['9223372036854775808 = 1', 1, 1, '9223372036854775808', 'outside the range of Int64'],
  ['@p = 1', 1, 1, '@p', "Parameter '@p' has no value"],
  ["name LIKE 'a%' ESCAPE 'xy'", 1, 23, "'xy'", 'exactly one character'],
  ["name LIKE 'a%' ESCAPE ''", 1, 23, "''", 'exactly one character'],
  ['name LIKE 1 ESCAPE 5', 1, 20, '5', 'exactly one character'],
  ['(a = 1) + 2 = 3', 1, 1, '(', 'condition cannot be used as a value'],
  ['a = 1 = 1', 1, 7, '=', "Unexpected token '='"],
  ['a || b', 1, 3, '|', "Unrecognized character. '|'"],
  ['1x = 1', 1, 1, '1x', 'Invalid number'],
  ['1.2.3 = 1', 1, 1, '1.2.', 'Invalid number'],
  ['[] = 1', 1, 1, '[]', 'Empty identifier'],
  ['user.and = 1', 1, 6, 'and', "Unexpected token 'and'"],
  ['AND = 1', 1, 1, 'AND', "Unexpected token 'AND'"],
  ['a NOT = 1', 1, 7, '=', "Unexpected token '='"],
  ['a IS 1', 1, 6, '1', "Unexpected token '1'"],
  ['a IN 1', 1, 6, '1', "Expected '('"],
  ['a IN ()', 1, 7, ')', "Unexpected token ')'"],
  ['newid() IS NULL', 1, 1, 'newid', 'IS NULL can only be applied to a property'],
];

describe('SQL filter syntax errors', () => {
  it.each(FILTER_ERRORS)('%j → line %i column %i token %s', (expression, line, column, token, details) => {
    const err = syntaxError(expression);
    expect(err.position).toEqual({ line, column, token });
    expect(err.details).toContain(details);
    expect(err.message).toBe(
      `There was an error parsing the filter expression. [Token line=${line}, column=${column}, Token in error= ${token}, Additional details= ${err.details}]`,
    );
  });

  it('refuses empty and blank expressions', () => {
    for (const text of ['', '   ', '\n\t']) expect(syntaxError(text).details).toBe('The expression is empty.');
  });

  it('limits nesting depth to 64', () => {
    const nested = (n: number): string => '('.repeat(n) + '1=1' + ')'.repeat(n);
    expect(compileSqlFilter(nested(63)).evaluate(msg())).toBe(true);
    expect(syntaxError(nested(70)).details).toContain('nested more than 64');
    expect(syntaxError('NOT '.repeat(70) + '1=1').details).toContain('nested more than 64');
    expect(syntaxError('a = ' + '-'.repeat(70) + '1').details).toContain('nested more than 64');
  });

  it('limits IN lists to 1,000 items (checked on the parser, the 1,024-character limit comes first)', () => {
    const list = (n: number): string => `a IN (${Array.from({ length: n }, () => '1').join(',')})`;
    expect(() => parseFilter(list(MAX_IN_ITEMS))).not.toThrow();
    expect(() => parseFilter(list(MAX_IN_ITEMS + 1))).toThrow(/at most 1000 items/);
  });
});

describe('SQL action syntax errors', () => {
  const ACTION_ERRORS: readonly (readonly [string, string])[] = [
    ['SET isLarge = total >= 100', "Expected SET or REMOVE but found '>='"],
    ['SET sys.SequenceNumber = 1', 'read-only'],
    ['SET sys.EnqueuedTimeUtc = 1', 'read-only'],
    ['SET sys.DeliveryCount = 1', 'read-only'],
    ['REMOVE sys.MessageId', 'cannot be removed'],
    ['REMOVE sys.TimeToLive', 'cannot be removed'],
    ['SET sys.Nope = 1', "'sys.Nope' is not a system property"],
    ["color = 'red'", 'Expected SET or REMOVE'],
    ['SET a = 1;;', "Expected SET or REMOVE but found ';'"],
    ['SET a', "Expected '='"],
    ['SET = 1', "Unexpected token '='"],
    ['SET a = (b = 1)', 'condition cannot be used as a value'],
    ['SET set = 1', "Unexpected token 'set'"],
  ];
  it.each(ACTION_ERRORS)('%j', (expression, details) => {
    const err = syntaxError(expression, 'action');
    expect(err.details).toContain(details);
    expect(err.message).toMatch(/^There was an error parsing the action expression\./);
  });

  it('refuses more than 32 statements and more than 1,024 characters', () => {
    expect(() => compileSqlAction('SET a = 1;'.repeat(32))).not.toThrow();
    expect(syntaxError('SET a = 1;'.repeat(33), 'action').details).toContain('at most 32 statements');
    const long = `SET a = '${'x'.repeat(1015)}'`;
    expect(long).toHaveLength(1025);
    refusal(() => compileSqlAction(long), 'ArgumentOutOfRange');
    expect(syntaxError('  ', 'action').details).toBe('The expression is empty.');
  });

  it('accepts ; , or whitespace between statements and a trailing ;', () => {
    const a = compileSqlAction('set a = 1, SET b = 2 REMOVE c; Set d = 3;');
    const out = a.apply(msg({ c: 1 }));
    expect([...out.properties.keys()]).toEqual(['a', 'b', 'd']);
  });
});
