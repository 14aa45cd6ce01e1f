// Connects a subscription's RuleSet (the rule engine in src/filters) to the router: the engine decides which copies a
// message makes (docs/filters.md, "Fan-out", "Actions and copies"); this turns each action copy into the property
// changes the broker stores beside the unchanged body, as typed values the codec writes back exactly.

import type { RuleConfig } from '../../config/types.js';
import {
  RuleSet,
  fanOut,
  filterMessage,
  subscriptionRules,
  type FilterMessage,
  type FilterValue,
} from '../../filters/index.js';
import type { CopyPlan, RulePlan, SubscriptionRules } from './rule-plan.js';

/** A subscription's rules: the engine's RuleSet plus the router's view of it. */
export interface CompiledRules extends SubscriptionRules {
  readonly set: RuleSet;
}

const EMPTY = filterMessage();

/** Wraps a RuleSet for the router. */
export function rulesFor(set: RuleSet): CompiledRules {
  return {
    set,
    plan(view: unknown): RulePlan {
      const msg = (view as FilterMessage | null) ?? EMPTY;
      const r = fanOut(set, msg);
      const plan: RulePlan = { copies: r.copies.map((c) => (c.ruleName ? diff(msg, c.message, c.ruleName) : {})) };
      if (r.deadLetter) plan.error = { reason: r.deadLetter.reason, description: r.deadLetter.description };
      return plan;
    },
  };
}

/** Compiles configured rules (none means `$Default`); an invalid expression throws RuleDefinitionError. */
export function compileSubscriptionRules(rules: RuleConfig[], entityPath = ''): CompiledRules {
  return rulesFor(new RuleSet(subscriptionRules(rules), entityPath));
}

// What an action changed, as stored property changes: typed values (64-bit integers as text so they stay
// exact through msgpack), removals, and system properties by Service Bus name.
function diff(before: FilterMessage, after: FilterMessage, ruleName: string): CopyPlan {
  const props: Record<string, unknown> = {};
  for (const [k, v] of after.properties) {
    const old = before.properties.get(k);
    if (!old || !sameValue(old, v)) props[k] = patchOf(v);
  }
  for (const k of before.properties.keys()) if (!after.properties.has(k)) props[k] = { $remove: true };
  const sys: Record<string, unknown> = {};
  const a = after.system as Record<string, unknown>;
  const b = before.system as Record<string, unknown>;
  for (const k of Object.keys(a)) if (a[k] !== b[k]) sys[k] = a[k];
  const plan: CopyPlan = { ruleName, props };
  if (Object.keys(sys).length) plan.sys = sys;
  return plan;
}

function sameValue(x: FilterValue, y: FilterValue): boolean {
  if (x.type !== y.type) return false;
  if (x.value instanceof Uint8Array && y.value instanceof Uint8Array) return Buffer.compare(x.value, y.value) === 0;
  return x.value === y.value;
}

/** A typed value as a stored property change: `{ $type, value }` (see codec.ts patchValue), so its AMQP type survives. */
export function patchOf(v: FilterValue): unknown {
  switch (v.type) {
    case 'null':
      return null;
    case 'binary':
      return { $type: 'binary', value: Buffer.from(v.value).toString('base64') };
    case 'duration':
      return { $type: 'long', value: String(v.value) };
    case 'other':
      return v.value;
    default:
      return { $type: v.type, value: typeof v.value === 'bigint' ? v.value.toString() : v.value };
  }
}
