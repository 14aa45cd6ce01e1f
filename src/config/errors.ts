// Config problems as a person reads them: every problem of a file at once, each one line, and a "did you mean"
// for an unknown key, picked from the names allowed at that place by edit distance (fastest-levenshtein).

import { closest, distance } from 'fastest-levenshtein';

/**
 * The configuration's problems. Each of `problems` is a single line naming the JSON path, the value and what is
 * allowed; `message` is the one problem, or all of them joined with "; ".
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** Every problem found, in file order, each one line. */
  readonly problems: string[];

  /** Creates the error from one or more problems, collapsing any line breaks so that each stays one line. */
  constructor(
    problems: string | string[],
    /** The file (or other source label) being loaded, when known. */
    readonly source?: string,
    /** Warnings found along the way (unknown keys): shown with the problems, since a typo may be their cause. */
    readonly warnings: string[] = [],
  ) {
    const list = (Array.isArray(problems) ? problems : [problems]).map((m) => m.replace(/\s*[\r\n]+\s*/g, ' '));
    super(list.join('; '));
    this.problems = list;
  }
}

/** Options for loading a config. */
export interface LoadOptions {
  /** Unknown keys are errors instead of warnings. */
  strict?: boolean;
}

/**
 * Collects the semantic stage's problems: each check still throws a ConfigError where it finds one (so the code
 * that follows never sees a bad value), and `attempt` records it and carries on with the next entity.
 */
export class Problems {
  readonly list: string[] = [];
  /** Runs `fn`; a ConfigError it throws is recorded and `undefined` returned. */
  attempt<T>(fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      this.list.push(...err.problems);
      return undefined;
    }
  }
}

/** "; did you mean LockDuration?" when one allowed name is close to `key` (case-insensitive edit distance). */
export function suggestKey(key: string, allowed: readonly string[]): string {
  if (allowed.length === 0) return '';
  const lower = allowed.map((a) => a.toLowerCase());
  const best = closest(key.toLowerCase(), lower);
  // Up to a third of the name may differ (at least 2 edits): "LockDurration", "Prot", "maxdeliverycount".
  const limit = Math.max(2, Math.floor(best.length / 3));
  if (distance(key.toLowerCase(), best) > limit) return '';
  return `; did you mean ${allowed[lower.indexOf(best)]}?`;
}
