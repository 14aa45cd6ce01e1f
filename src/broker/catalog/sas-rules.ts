// Entity-level SAS rules: the `AuthorizationRules` of a queue or topic (Service Bus "Shared Access Authorization
// Rules" on an entity). A rule is a key name, two keys (a token signed with either is valid) and the rights it
// grants, scoped to its entity: a queue's rule covers the queue and its subqueues, a topic's rule the topic and
// its subscriptions (Service Bus SAS docs, "Shared Access Authorization Policies"). Keys a request leaves empty are
// generated as Azure generates them (32 random bytes, base64); at most 12 rules per entity (Service Bus quotas).

import { randomBytes } from 'node:crypto';
import type { AccessRight, AuthorizationRuleConfig } from '../../config/types.js';
import { BrokerError } from '../errors.js';

/** A stored entity SAS rule. */
export interface AuthorizationRule {
  keyName: string;
  primaryKey: string;
  secondaryKey: string;
  rights: AccessRight[];
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms of the last change of its keys or rights. */
  modifiedAt: number;
}

/** A rule as a create or update gives it: keys may be left out (generated). */
export type AuthorizationRuleInput = AuthorizationRuleConfig;

/** Most SAS rules one entity may have (Service Bus quota: 12 per namespace, queue or topic). */
export const MAX_AUTHORIZATION_RULES = 12;
/** Longest key name and key Service Bus accepts. */
const MAX_KEY_LENGTH = 256;
const RIGHTS: readonly AccessRight[] = ['Manage', 'Send', 'Listen'];

/** A fresh SAS key: 32 random bytes, base64 (44 characters), as the service generates them. */
export function generateSasKey(): string {
  return randomBytes(32).toString('base64');
}

/**
 * Checks the rules a create or update gives and completes them: missing keys generated, times kept for a rule whose
 * name, keys and rights are unchanged. Throws InvalidOperation / ArgumentOutOfRange naming the rule.
 */
export function settleRules(input: readonly AuthorizationRuleInput[], previous: readonly AuthorizationRule[], now: number): AuthorizationRule[] {
  if (input.length > MAX_AUTHORIZATION_RULES) {
    throw new BrokerError('ArgumentOutOfRange', `AuthorizationRules holds ${input.length} rules; an entity may have at most ${MAX_AUTHORIZATION_RULES}.`);
  }
  const seen = new Set<string>();
  return input.map((r) => {
    const bad = (why: string): BrokerError => new BrokerError('InvalidOperation', `The authorization rule '${r.keyName.slice(0, 100)}' is not valid: ${why}.`);
    if (!/^[A-Za-z0-9._-]{1,256}$/.test(r.keyName)) throw bad('KeyName must be 1 to 256 letters, digits, periods, hyphens or underscores');
    if (seen.has(r.keyName.toLowerCase())) throw bad('another rule of the entity has that KeyName');
    seen.add(r.keyName.toLowerCase());
    if (r.rights.length === 0 || r.rights.some((x) => !RIGHTS.includes(x))) throw bad('Rights must be one or more of Manage, Send and Listen');
    for (const k of [r.primaryKey, r.secondaryKey]) if (k && k.length > MAX_KEY_LENGTH) throw bad(`a key is longer than ${MAX_KEY_LENGTH} characters`);
    const rule = {
      keyName: r.keyName,
      primaryKey: r.primaryKey || generateSasKey(),
      secondaryKey: r.secondaryKey || generateSasKey(),
      rights: RIGHTS.filter((x) => r.rights.includes(x)),
    };
    const before = previous.find((p) => p.keyName === rule.keyName);
    const same =
      before !== undefined && before.primaryKey === rule.primaryKey && before.secondaryKey === rule.secondaryKey && before.rights.join() === rule.rights.join();
    return { ...rule, createdAt: before?.createdAt ?? now, modifiedAt: same ? before.modifiedAt : now };
  });
}

/** The rules of one entity, with the entity's path (lower case): what a token for a path under it is checked against. */
export interface EntityRules {
  scope: string;
  rules: readonly AuthorizationRule[];
}

/** What the rule lookups read: the queues' and topics' descriptions by name. */
export interface RuleHolders {
  queueEntry(name: string): { description: { authorizationRules?: AuthorizationRule[] } } | undefined;
  topicEntry(name: string): { description: { authorizationRules?: AuthorizationRule[] } } | undefined;
  queueEntriesSorted(): { q: { path: string }; description: { authorizationRules?: AuthorizationRule[] } }[];
  topicEntriesSorted(): { t: { path: string }; description: { authorizationRules?: AuthorizationRule[] } }[];
}

/**
 * The rules guarding `path` (an entity address such as `orders`, `orders/$deadletterqueue`,
 * `events/subscriptions/audit`): those of the longest queue or topic name it is or lies under, by whole segments,
 * when what follows that name is one of the entity's own nodes (a `$` subqueue or `$management`, a topic's
 * `subscriptions`). A queue named `orders/new` is not `orders`'s: its path finds no rule of `orders`.
 */
export function rulesGuarding(holders: RuleHolders, path: string): EntityRules | null {
  const segments = path.toLowerCase().replace(/^\/+|\/+$/g, '').split('/');
  for (let n = segments.length; n > 0; n--) {
    const name = segments.slice(0, n).join('/');
    const queue = holders.queueEntry(name);
    const e = queue ?? holders.topicEntry(name);
    if (!e) continue;
    const next = segments[n];
    const own = next === undefined || next.startsWith('$') || (!queue && next === 'subscriptions');
    return own && e.description.authorizationRules?.length ? { scope: name, rules: e.description.authorizationRules } : null;
  }
  return null;
}

/** Every entity rule named `keyName`, each with its entity (a SASL PLAIN login names a key, not an entity). */
export function rulesNamed(holders: RuleHolders, keyName: string): EntityRules[] {
  const out: EntityRules[] = [];
  for (const [path, d] of [
    ...holders.queueEntriesSorted().map((e) => [e.q.path, e.description] as const),
    ...holders.topicEntriesSorted().map((e) => [e.t.path, e.description] as const),
  ]) {
    const rules = d.authorizationRules?.filter((r) => r.keyName === keyName) ?? [];
    if (rules.length) out.push({ scope: path.toLowerCase(), rules });
  }
  return out;
}
