// LIKE pattern matching (docs/filters.md, "LIKE", SQL filter syntax doc): only `%` (any run, possibly empty) and `_`
// (exactly one character) are special, plus the optional ESCAPE character; `[a-c]` and `.` are literal text.
// The match is anchored at both ends and case-sensitive. No regex is built from user input: a two-pointer
// matcher with backtracking to the last `%` is O(n·m) at worst, fine at 1,024-character patterns.

type Piece = { readonly t: 'lit'; readonly c: string } | { readonly t: 'one' } | { readonly t: 'any' };

/**
 * Splits a pattern into pieces; null for a pattern ending in a lone escape (matches nothing, docs/filters.md, "LIKE";
 * our choice).
 */
function compile(pattern: string, escape: string | null): Piece[] | null {
  const out: Piece[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (escape !== null && c === escape) {
      // The character after the escape is literal, whatever it is.
      if (i + 1 >= pattern.length) return null;
      out.push({ t: 'lit', c: pattern[++i]! });
    } else if (c === '%') {
      out.push({ t: 'any' });
    } else if (c === '_') {
      out.push({ t: 'one' });
    } else {
      out.push({ t: 'lit', c });
    }
  }
  return out;
}

/** True when `value` matches the LIKE `pattern` (characters are UTF-16 code units, as .NET chars are). */
export function likeMatch(value: string, pattern: string, escape: string | null): boolean {
  const p = compile(pattern, escape);
  if (p === null) return false;
  let vi = 0;
  let pi = 0;
  let star = -1; // index in p of the last `%` seen
  let starV = 0; // value index that `%` is currently extended to
  while (vi < value.length) {
    const piece = p[pi];
    if (piece !== undefined && (piece.t === 'one' || (piece.t === 'lit' && piece.c === value[vi]))) {
      vi++;
      pi++;
    } else if (piece !== undefined && piece.t === 'any') {
      star = pi++;
      starV = vi;
    } else if (star >= 0) {
      pi = star + 1;
      vi = ++starV;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi]!.t === 'any') pi++;
  return pi === p.length;
}
