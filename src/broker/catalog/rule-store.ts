// Subscription rules are durable: rules added or removed at runtime (add-rule / remove-rule) are stored and
// restored at start-up — unless the config file's rules for that subscription changed since, in which case
// the config wins (it is what the operator edited last).

import { RuleSet, type RuleDescription } from '../../filters/index.js';
import type { Store, StoreOp } from '../../store/store.js';
import type { Plan } from '../runtime/journal.js';
import type { QueueState } from '../indexes/queue-state.js';
import { rulesFor, type CompiledRules } from '../messaging/subscription-rules.js';

/** The store key of a subscription's rules. */
const RULES_KEY = 'rules';

interface StoredRules {
  configHash: string;
  rules: RuleDescription[];
}

/** Replaces a subscription's configured rules with its stored ones when the config is unchanged. */
export function restoreRules(store: Store, sub: QueueState): void {
  const stored = store.loadMeta(sub.id, RULES_KEY) as StoredRules | undefined;
  if (!stored || stored.configHash !== sub.ruleConfigHash) return;
  sub.rules = rulesFor(new RuleSet(stored.rules, sub.path));
}

/** The store op that records a subscription's current rules. */
export function rulesOp(sub: QueueState): StoreOp {
  const value: StoredRules = { configHash: sub.ruleConfigHash, rules: ruleSetOf(sub).list().map((r) => r.description) };
  return { op: 'meta', qid: sub.id, key: RULES_KEY, value };
}

// A subscription's rule set was changed in memory (the claim: a second add of the name fails at once); the plan
// stores it, and `undo` takes the change back if that is not durable (unless the rule changed again meanwhile),
// so after a failed write memory routes by the rules the store holds.
/** The plan that stores a subscription's rules after a change in memory, which `undo` takes back if it fails. */
export function rulesPlan(sub: QueueState, undo: () => unknown): Plan {
  return { ops: [rulesOp(sub)], undo: () => void undo() };
}

/** The rule set of a subscription. */
export function ruleSetOf(sub: QueueState): RuleSet {
  return (sub.rules as CompiledRules).set;
}
