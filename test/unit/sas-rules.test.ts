// Entity SAS rules in isolation: which entity's rules a token's path is checked against, how a create or update
// settles them (generated keys, kept times, Azure's limits), and the one token check using them.

import { describe, expect, it } from 'vitest';
import { namespaceKeys, verifyPlainLogin, verifySas } from '../../src/auth/sas.js';
import { signSas } from '../../src/auth/sas-token.js';
import { rulesGuarding, rulesNamed, settleRules, type AuthorizationRule, type RuleHolders } from '../../src/broker/catalog/sas-rules.js';

const T0 = Date.UTC(2026, 0, 1);
const rule = (keyName: string, rights: AuthorizationRule['rights'], key = `${keyName}-key`): AuthorizationRule => ({
  keyName,
  primaryKey: key,
  secondaryKey: `${key}-2`,
  rights,
  createdAt: T0,
  modifiedAt: T0,
});

/** Queues `orders` (rule `send`) and `orders/new` (none), topic `events` (rule `listen`). */
function holders(): RuleHolders {
  const queues = new Map([
    ['orders', { q: { path: 'orders' }, description: { authorizationRules: [rule('send', ['Send'])] } }],
    ['orders/new', { q: { path: 'orders/new' }, description: {} }],
  ]);
  const topics = new Map([['events', { t: { path: 'events' }, description: { authorizationRules: [rule('listen', ['Listen'])] } }]]);
  return {
    queueEntry: (n) => queues.get(n.toLowerCase()),
    topicEntry: (n) => topics.get(n.toLowerCase()),
    queueEntriesSorted: () => [...queues.values()],
    topicEntriesSorted: () => [...topics.values()],
  };
}

describe('rulesGuarding', () => {
  it("finds an entity's rules for the entity and its own nodes, and no other entity's", () => {
    const h = holders();
    for (const p of ['orders', 'ORDERS', 'orders/$deadletterqueue', 'orders/$Transfer/$DeadLetterQueue', 'orders/$management']) {
      expect(rulesGuarding(h, p)?.scope, p).toBe('orders');
    }
    for (const p of ['events', 'events/subscriptions/audit', 'events/Subscriptions/audit/$DeadLetterQueue']) expect(rulesGuarding(h, p)?.scope, p).toBe('events');
    // A queue named under `orders` is its own entity; a path under a queue that is no node of it finds nothing.
    for (const p of ['orders/new', 'orders/other', 'orders/subscriptions/x', 'billing', '']) expect(rulesGuarding(h, p), p).toBeNull();
  });

  it('lists every rule of a key name with its entity', () => {
    expect(rulesNamed(holders(), 'listen').map((r) => r.scope)).toEqual(['events']);
    expect(rulesNamed(holders(), 'nobody')).toEqual([]);
  });
});

describe('settleRules', () => {
  it('generates missing keys, orders the rights, and keeps the times of an unchanged rule', () => {
    const [fresh] = settleRules([{ keyName: 'k', primaryKey: null, secondaryKey: null, rights: ['Listen', 'Manage', 'Send'] }], [], T0);
    expect(fresh).toMatchObject({ keyName: 'k', rights: ['Manage', 'Send', 'Listen'], createdAt: T0, modifiedAt: T0 });
    expect(fresh!.primaryKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const again = settleRules([{ ...fresh!, primaryKey: fresh!.primaryKey, secondaryKey: fresh!.secondaryKey }], [fresh!], T0 + 5);
    expect(again[0]).toEqual(fresh);
    const rotated = settleRules([{ ...fresh!, primaryKey: 'new' }], [fresh!], T0 + 5);
    expect(rotated[0]).toMatchObject({ primaryKey: 'new', createdAt: T0, modifiedAt: T0 + 5 });
  });

  it("refuses what Azure refuses: more than 12 rules, a repeated key name, no rights, a bad key name", () => {
    const r = (keyName: string, rights: AuthorizationRule['rights'] = ['Send']) => ({ keyName, primaryKey: null, secondaryKey: null, rights });
    expect(() => settleRules(Array.from({ length: 13 }, (_, i) => r(`k${i}`)), [], T0)).toThrow(/at most 12/);
    expect(() => settleRules([r('a'), r('A')], [], T0)).toThrow(/another rule/);
    expect(() => settleRules([r('a', [])], [], T0)).toThrow(/Rights/);
    expect(() => settleRules([r('a b')], [], T0)).toThrow(/KeyName/);
  });
});

describe('verifySas and verifyPlainLogin with entity rules', () => {
  const keys = (): ReturnType<typeof namespaceKeys> => {
    const h = holders();
    return namespaceKeys([{ name: 'Root', key: 'root-key', rights: ['Manage', 'Send', 'Listen'] }], {
      rulesGuarding: (p) => rulesGuarding(h, p),
      rulesNamed: (k) => rulesNamed(h, k),
    });
  };

  it("accepts a rule's either key for its entity, with the rule's rights and the token's path as audience", () => {
    expect(verifySas(signSas('sb://h/orders', 'send', 'send-key'), keys(), Date.now())).toMatchObject({ policy: 'send', rights: ['Send'], audience: 'orders' });
    expect(verifySas(signSas('sb://h/orders/$DeadLetterQueue', 'send', 'send-key-2'), keys(), Date.now()).audience).toBe('orders/$deadletterqueue');
    expect(verifySas(signSas('https://h/events/subscriptions/audit?api-version=2021-05', 'listen', 'listen-key'), keys(), Date.now()).audience).toBe(
      'events/subscriptions/audit',
    );
  });

  it("refuses a rule's key for another entity, for the namespace, and a wrong key; the namespace key still works", () => {
    expect(() => verifySas(signSas('sb://h/events', 'send', 'send-key'), keys(), Date.now())).toThrow(/Unknown shared access policy/);
    expect(() => verifySas(signSas('sb://h/', 'send', 'send-key'), keys(), Date.now())).toThrow(/Unknown shared access policy/);
    expect(() => verifySas(signSas('sb://h/orders/new', 'send', 'send-key'), keys(), Date.now())).toThrow(/Unknown shared access policy/);
    expect(() => verifySas(signSas('sb://h/orders', 'send', 'listen-key'), keys(), Date.now())).toThrow(/signature/);
    expect(verifySas(signSas('sb://h/', 'Root', 'root-key'), keys(), Date.now()).audience).toBe('');
  });

  it('grants a PLAIN login with a rule name and key its entity only, and the namespace to a policy', () => {
    expect(verifyPlainLogin('send', 'send-key', keys())).toMatchObject([{ policy: 'send', audience: 'orders', rights: ['Send'] }]);
    expect(verifyPlainLogin('send', 'wrong', keys())).toEqual([]);
    expect(verifyPlainLogin('Root', 'root-key', keys())).toMatchObject([{ policy: 'Root', audience: '' }]);
  });
});
