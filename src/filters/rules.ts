// Rules, a subscription's rule set, and fan-out (docs/filters.md, "Fan-out"). Action-less rules are OR-ed and give one
// copy; each matching rule with an action gives its own modified copy (topic filters doc: five matching rules, two with
// actions → three messages). A new subscription has the `$Default` true rule; no rules → nothing (docs/filters.md, "The
// default rule").

import type { RuleConfig } from '../config/types.js';
import { compileSqlAction, setUserProperty, type SqlAction } from './action.js';
import { compileCorrelationFilter, type CorrelationFields } from './correlation.js';
import { FilterEvaluationError, RuleDefinitionError, type EvaluationFailure } from './errors.js';
import { compileSqlFilter, FALSE_FILTER, TRUE_FILTER, type Filter, type SqlParameters } from './filter.js';
import { foldName, type FilterMessage } from './message.js';
import { Typed } from './values.js';

/** Name of the rule every new subscription gets (.NET SDK `RuleProperties.DefaultRuleName`). */
export const DEFAULT_RULE_NAME = '$Default';

/** Longest rule name: 50 characters (quotas doc). */
export const MAX_RULE_NAME_LENGTH = 50;

/**
 * SQL filters per topic (quotas doc); a topic-wide count (true and false filters are SQL filters), which the broker
 * enforces (src/broker/catalog/quotas.ts) from each rule set's `sqlCount`.
 */
export const MAX_SQL_FILTERS_PER_TOPIC = 2000;

/** Correlation filters per topic (quotas doc); enforced like the SQL count, from each rule set's `correlationCount`. */
export const MAX_CORRELATION_FILTERS_PER_TOPIC = 100_000;

/** Plain-data filter of a rule, as stored and as the config loader's RuleConfig maps onto. */
export type RuleFilterDescription =
  | { readonly type: 'sql'; readonly expression: string; readonly parameters?: SqlParameters }
  | ({ readonly type: 'correlation' } & CorrelationFields)
  | { readonly type: 'true' }
  | { readonly type: 'false' };

/** Plain-data rule: what add-rule receives, enumerate-rules returns and the store persists. */
export interface RuleDescription {
  readonly name: string;
  readonly filter: RuleFilterDescription;
  /** SQL rule action text, or null for none (empty-rule-action). */
  readonly action: string | null;
  /** Values of the action's `@name` parameters (SqlRuleAction.Parameters), when it has any. */
  readonly actionParameters?: SqlParameters;
}

/** A compiled rule. */
export interface Rule {
  readonly name: string;
  readonly description: RuleDescription;
  readonly filter: Filter;
  readonly action: SqlAction | null;
}

/** The `$Default` rule: true filter, no action (topic filters doc). */
export function defaultRuleDescription(): RuleDescription {
  return { name: DEFAULT_RULE_NAME, filter: { type: 'true' }, action: null };
}

// Not empty or blank, at most 50 characters (quotas doc), none of `/ \ ? # * @` (the .NET clients'
// CheckValidEntityName; the service-side rule is inferred).
/** Checks a rule name; throws RuleDefinitionError (argument-error, or argument-out-of-range when too long). */
export function validateRuleName(name: string): void {
  if (typeof name !== 'string' || name.trim().length === 0) {
    throw new RuleDefinitionError('InvalidArgument', 'The rule name must not be empty.');
  }
  if (name.length > MAX_RULE_NAME_LENGTH) {
    throw new RuleDefinitionError(
      'ArgumentOutOfRange',
      `The rule name '${name}' is longer than ${MAX_RULE_NAME_LENGTH} characters.`,
    );
  }
  if (/[/\\?#*@]/.test(name)) {
    const text = `The rule name '${name}' contains a character from / \\ ? # * @.`;
    throw new RuleDefinitionError('InvalidArgument', text);
  }
}

function compileFilter(f: RuleFilterDescription): Filter {
  switch (f.type) {
    case 'sql':
      return compileSqlFilter(f.expression, f.parameters);
    case 'correlation':
      return compileCorrelationFilter(f);
    case 'true':
      return TRUE_FILTER;
    case 'false':
      return FALSE_FILTER;
  }
}

/** Validates and compiles a rule (name, filter, action); throws RuleDefinitionError / FilterSyntaxError. */
export function compileRule(description: RuleDescription): Rule {
  validateRuleName(description.name);
  const filter = compileFilter(description.filter);
  // Both SQL and correlation filters may carry an action (the SDKs' rule-manager live tests); true/false are SQL
  // filters.
  const action = description.action === null ? null : compileSqlAction(description.action, description.actionParameters);
  return Object.freeze({ name: description.name, description, filter, action });
}

/** Maps a config-file rule (emulator `Rules[]`, docs/filters.md, "Rules in the config file") onto a RuleDescription. */
export function ruleDescriptionFromConfig(c: RuleConfig): RuleDescription {
  const filter: RuleFilterDescription =
    c.filter.type === 'sql' ? { type: 'sql', expression: c.filter.expression } : { ...c.filter, type: 'correlation' };
  return { name: c.name, filter, action: c.action };
}

/**
 * The rules of a config-file subscription: its `Rules`, or `$Default` when it declares none (docs/filters.md, "Rules in
 * the config file"; inferred).
 */
export function subscriptionRules(rules: readonly RuleConfig[]): RuleDescription[] {
  return rules.length === 0 ? [defaultRuleDescription()] : rules.map(ruleDescriptionFromConfig);
}

/** Ordinal, case-insensitive name order (as .NET OrdinalIgnoreCase: upper-cased code units; `$` before letters). */
export function compareRuleNames(a: string, b: string): number {
  const x = a.toUpperCase();
  const y = b.toUpperCase();
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A subscription's rules, keyed case-insensitively (docs/filters.md, "Rule management"; inferred) and listed in name
 * order (JS rule-manager live test).
 */
export class RuleSet {
  private readonly byName = new Map<string, Rule>();
  private correlations = 0;

  /** `entityPath` (`<topic>/Subscriptions/<sub>`) is used in the error texts the SDK matches. */
  constructor(
    rules: Iterable<Rule | RuleDescription> = [],
    private readonly entityPath = '',
  ) {
    for (const r of rules) this.add(r);
  }

  /** A rule set holding only `$Default`, as a new subscription has. */
  static withDefault(entityPath = ''): RuleSet {
    return new RuleSet([defaultRuleDescription()], entityPath);
  }

  private rulePath(name: string): string {
    return this.entityPath === '' ? name : `${this.entityPath}/Rules/${name}`;
  }

  /** Adds a rule; a duplicate name fails with entity-already-exists (JS rule-manager live test's expected text). */
  add(rule: Rule | RuleDescription): Rule {
    const compiled = 'description' in rule ? rule : compileRule(rule);
    const key = foldName(compiled.name);
    if (this.byName.has(key)) {
      throw new RuleDefinitionError(
        'AlreadyExists',
        `The messaging entity '${this.rulePath(compiled.name)}' already exists.`,
      );
    }
    this.byName.set(key, compiled);
    if (isCorrelation(compiled.description.filter)) this.correlations++;
    return compiled;
  }

  /**
   * Removes a rule (removing `$Default` is ordinary); unknown names fail with amqp:not-found (docs/filters.md, "Rule
   * management").
   */
  remove(name: string): Rule {
    const key = foldName(name);
    const rule = this.byName.get(key);
    if (rule === undefined) {
      throw new RuleDefinitionError('NotFound', `The messaging entity '${this.rulePath(name)}' could not be found.`);
    }
    this.byName.delete(key);
    if (isCorrelation(rule.description.filter)) this.correlations--;
    return rule;
  }

  /** A rule by case-insensitive name. */
  get(name: string): Rule | undefined {
    return this.byName.get(foldName(name));
  }

  /** Number of rules. */
  get size(): number {
    return this.byName.size;
  }

  /** Rules with a correlation filter (counted as rules come and go, for the per-topic quota). */
  get correlationCount(): number {
    return this.correlations;
  }

  /** Rules with a SQL filter, true and false filters included (they are SQL filters: `1=1`, `1=0`). */
  get sqlCount(): number {
    return this.byName.size - this.correlations;
  }

  /** The rules sorted by name, the order of enumerate-rules and of evaluation (docs/filters.md, "Rule order"). */
  list(): Rule[] {
    return [...this.byName.values()].sort((a, b) => compareRuleNames(a.name, b.name));
  }
}

/** True for a correlation filter; every other kind (SQL, true, false) counts as a SQL filter in the quotas. */
export function isCorrelation(f: RuleFilterDescription): boolean {
  return f.type === 'correlation';
}

/** One message a subscription receives: the plain copy (ruleName null) or a rule's action copy. */
export interface FanOutCopy {
  readonly message: FilterMessage;
  readonly ruleName: string | null;
}

/** A filter or action that threw for this message. */
export interface RuleFailure {
  readonly ruleName: string;
  /** Dead-letter reason: the .NET exception type name (2018 dead-letter doc). */
  readonly reason: EvaluationFailure;
  /** Dead-letter description, naming the rule (docs/filters.md, "Evaluation errors"; our choice). */
  readonly description: string;
}

/** What a subscription gets from one topic message. */
export interface FanOutResult {
  readonly copies: readonly FanOutCopy[];
  /**
   * Dead-letter the original message in the subscription with this reason, or null. At most one (docs/filters.md,
   * "Evaluation errors").
   */
  readonly deadLetter: RuleFailure | null;
  /** Every rule that threw, for logging (also when dead-lettering is off). */
  readonly failures: readonly RuleFailure[];
}

/** Fan-out options. */
export interface FanOutOptions {
  /**
   * EnableDeadLetteringOnFilterEvaluationExceptions; defaults to true, as in the .NET admin client (.NET
   * CreateSubscriptionOptions).
   */
  readonly deadLetterOnFilterEvaluationExceptions?: boolean;
}

/**
 * The application property action copies carry, naming their rule (topic filters doc; an application property is our
 * choice; docs/filters.md, "Actions and copies").
 */
export const RULE_NAME_PROPERTY = 'RuleName';

function failure(rule: Rule, err: unknown): RuleFailure {
  // Anything else is a bug in the engine, not a property of the message: let it surface.
  if (!(err instanceof FilterEvaluationError)) throw err;
  return { ruleName: rule.name, reason: err.reason, description: `Rule '${rule.name}': ${err.message}` };
}

// Every rule sees the message as sent, never another rule's copy (topic filters doc: an action's changes are private to
// its copy). The plain copy (the input object itself, which nothing mutates) comes first, then action copies in rule
// name order (docs/filters.md, "Fan-out"; our choice). A rule that throws does not match; with dead-lettering on (the
// default) the first failure is reported in `deadLetter`, and the other rules are still evaluated (docs/filters.md,
// "Evaluation errors"; our choice).
/** Decides the copies one subscription receives for one topic message (docs/filters.md, "Fan-out"). */
export function fanOut(rules: RuleSet | Iterable<Rule>, msg: FilterMessage, options: FanOutOptions = {}): FanOutResult {
  const ordered = rules instanceof RuleSet ? rules.list() : [...rules].sort((a, b) => compareRuleNames(a.name, b.name));
  let plainMatch = false;
  const actionCopies: FanOutCopy[] = [];
  const failures: RuleFailure[] = [];
  for (const rule of ordered) {
    try {
      if (rule.filter.evaluate(msg) !== true) continue;
      if (rule.action === null) {
        plainMatch = true;
        continue;
      }
      const copy = setUserProperty(rule.action.apply(msg), RULE_NAME_PROPERTY, Typed.string(rule.name));
      actionCopies.push({ message: copy, ruleName: rule.name });
    } catch (err) {
      failures.push(failure(rule, err));
    }
  }
  const copies = plainMatch ? [{ message: msg, ruleName: null }, ...actionCopies] : actionCopies;
  const deadLetter = (options.deadLetterOnFilterEvaluationExceptions ?? true) ? (failures[0] ?? null) : null;
  return { copies, deadLetter, failures };
}

