// The stateful protocol fuzzer's vocabulary (test/fault/protocol-fuzz.test.ts, docs/testing.md, "The protocol
// fuzzer"): the namespaces and keys it runs against, the actions a hostile or careless client can take (fast-check
// arbitraries, so a failing batch shrinks), how each prints as a line of frames, and the oracle that says which
// right is in force at each point of a sequence. The rights follow Service Bus: Manage implies Send and Listen; a
// token's audience covers its path and everything under it; a SASL PLAIN login is a claim on the namespace its
// password was checked in.

import fc from 'fast-check';

/** The namespaces a connection can name: two declared ones by host, and the default one (host 127.0.0.1). */
export const NAMESPACES = ['nsa', 'nsb', 'default'] as const;
/** A namespace of the fuzzer. */
export type Ns = (typeof NAMESPACES)[number];
/** The broker's name for each namespace (the default one is the emulator's). */
export const NS_NAME: Record<Ns, string> = { nsa: 'nsa', nsb: 'nsb', default: 'sbemulatorns' };
/** The AMQP open hostname (and HTTP Host) that picks each namespace. */
export const NS_HOST: Record<Ns, string> = { nsa: 'nsa.localhost', nsb: 'nsb.localhost', default: '127.0.0.1' };

/** The policies every namespace has, under the same names (so a key name alone never picks a namespace). */
export const POLICIES = { RootManageSharedAccessKey: ['Manage', 'Send', 'Listen'], SendOnly: ['Send'], ListenOnly: ['Listen'] } as const;
/** A policy name. */
export type Policy = keyof typeof POLICIES;

/** Each namespace's key of each policy: distinct everywhere, so one namespace's key opens nothing in another. */
export function keyOf(ns: Ns, policy: Policy): string {
  return Buffer.from(`fuzz-key:${ns}:${policy}`).toString('base64');
}

/** The entities of every namespace: two queues the fuzzer sends to, and a name that exists nowhere. */
export const ENTITIES = ['orders', 'audit', 'missing'] as const;
/** An entity address. */
export type Entity = (typeof ENTITIES)[number];
/** The queues that exist (checked after every batch). */
export const QUEUES: Entity[] = ['orders', 'audit'];

/** How a connection logs in: SASL ANONYMOUS (then tokens on `$cbs`, as the SDKs do) or PLAIN (as JMS clients do). */
export type Login =
  | { mech: 'ANONYMOUS' }
  /**
   * user = policy name, password = that policy's key in the connection's namespace, in another one, or no one's;
   * the SASL hostname names the connection's namespace, another one, or none.
   */
  | { mech: 'PLAIN'; user: Policy; key: 'own' | 'otherNs' | 'wrong'; saslHost: 'own' | 'otherNs' | 'none' };

/** One connection of a sequence: the namespace its open names, its login, and a first token put with the open. */
export interface ConnSpec {
  ns: Ns;
  login: Login;
  auth: TokenSpec | null;
}

/** A `$cbs` put-token: who signs it, with which key, for what audience, until when. */
export interface TokenSpec {
  policy: Policy | 'UnknownPolicy';
  /** good: the connection namespace's key; otherNs: another namespace's key; wrong: no namespace's key. */
  key: 'good' | 'otherNs' | 'wrong';
  /** expired: already past; short: lapses at the batch's expiry point; long: outlives the run. */
  life: 'long' | 'short' | 'expired';
  /** The audience path: the whole namespace, or one entity. */
  audience: '' | Entity;
}

/** A client action; `pipe` = written in the same socket write as the next one, before reading any answer. */
export type Action = { c: number; pipe: boolean } & (
  | { k: 'attach'; h: number; role: 'sender' | 'receiver'; entity: Entity; receiveAndDelete: boolean; credit: number }
  /** h = -1: on the connection's newest sender link (attaching one to 'orders' on handle 0 if it never had one). */
  | { k: 'transfer'; h: number; frames: 1 | 2 | 3; settled: boolean }
  /** h = -1: on the connection's newest receiver link. */
  | { k: 'flow'; h: number; credit: number }
  | { k: 'disposition'; pick: number; outcome: 'accepted' | 'rejected' | 'released' | 'modified' }
  | { k: 'token'; token: TokenSpec }
  | { k: 'peek'; entity: Entity }
  | { k: 'schedule'; entity: Entity }
  | { k: 'detach'; h: number }
  | { k: 'close'; how: 'frame' | 'socket' }
  | { k: 'expire' }
);

/** A sequence: up to three connections and the actions on them, in order. */
export interface Sequence {
  conns: ConnSpec[];
  actions: Action[];
}

/**
 * A batch: sequences run concurrently against one broker. With `expiry`, every sequence's actions before its first
 * `expire` run, then short-lived tokens lapse (by the wall clock and the broker clock alike), then the rest run.
 */
export interface Batch {
  expiry: boolean;
  seqs: Sequence[];
}

const ns = fc.constantFrom<Ns>(...NAMESPACES);
const policy = fc.constantFrom<Policy>('RootManageSharedAccessKey', 'SendOnly', 'ListenOnly', 'RootManageSharedAccessKey');
const login: fc.Arbitrary<Login> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Login>({ mech: 'ANONYMOUS' }) },
  {
    weight: 1,
    arbitrary: fc.record({
      mech: fc.constant('PLAIN' as const),
      user: policy,
      key: fc.constantFrom('own' as const, 'own' as const, 'own' as const, 'otherNs' as const, 'wrong' as const),
      saslHost: fc.constantFrom('own' as const, 'own' as const, 'none' as const, 'otherNs' as const),
    }),
  },
);
const token: fc.Arbitrary<TokenSpec> = fc.record({
  policy: fc.oneof({ weight: 8, arbitrary: policy }, { weight: 1, arbitrary: fc.constant('UnknownPolicy' as const) }),
  key: fc.constantFrom('good', 'good', 'good', 'good', 'otherNs', 'wrong'),
  life: fc.constantFrom('long', 'long', 'long', 'short', 'short', 'expired'),
  audience: fc.constantFrom<'' | Entity>('', '', 'orders', 'audit'),
});
const entity = fc.constantFrom<Entity>('orders', 'orders', 'orders', 'audit', 'missing');
const handle = fc.integer({ min: 0, max: 1 });
const onLink = fc.oneof({ weight: 3, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: handle });
const c = fc.integer({ min: 0, max: 2 });
const pipe = fc.boolean();
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ c, pipe, k: fc.constant('attach' as const), h: handle, role: fc.constantFrom('sender' as const, 'sender' as const, 'receiver' as const), entity, receiveAndDelete: fc.boolean(), credit: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 6, arbitrary: fc.record({ c, pipe, k: fc.constant('transfer' as const), h: onLink, frames: fc.constantFrom(1 as const, 1 as const, 2 as const, 3 as const), settled: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ c, pipe, k: fc.constant('flow' as const), h: onLink, credit: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 2, arbitrary: fc.record({ c, pipe, k: fc.constant('disposition' as const), pick: fc.nat(7), outcome: fc.constantFrom('accepted' as const, 'accepted' as const, 'rejected' as const, 'released' as const, 'modified' as const) }) },
  { weight: 4, arbitrary: fc.record({ c, pipe, k: fc.constant('token' as const), token }) },
  { weight: 1, arbitrary: fc.record({ c, pipe, k: fc.constant('peek' as const), entity }) },
  { weight: 1, arbitrary: fc.record({ c, pipe, k: fc.constant('schedule' as const), entity }) },
  { weight: 1, arbitrary: fc.record({ c, pipe, k: fc.constant('detach' as const), h: handle }) },
  { weight: 1, arbitrary: fc.record({ c, pipe, k: fc.constant('close' as const), how: fc.constantFrom('frame' as const, 'socket' as const) }) },
  { weight: 1, arbitrary: fc.record({ c, pipe: fc.constant(false), k: fc.constant('expire' as const) }) },
);
/** A sequence of at most `maxActions` actions on one to three connections. */
export function sequenceArb(maxActions: number): fc.Arbitrary<Sequence> {
  // Mostly one namespace per sequence, so its connections meet on the same queues.
  const conns = ns.chain((home) =>
    fc.array(
      fc.record({
        ns: fc.oneof({ weight: 4, arbitrary: fc.constant(home) }, { weight: 1, arbitrary: ns }),
        login,
        auth: fc.option(token, { nil: null, freq: 3 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  );
  return fc.record({ conns, actions: fc.array(action, { minLength: 1, maxLength: maxActions }) });
}
/** A batch of one to `maxSeqs` sequences; one batch in `1 / expiryOdds` lets short tokens lapse mid-way. */
export function batchArb(maxSeqs: number, maxActions: number, expiryOdds: number): fc.Arbitrary<Batch> {
  return fc.record({
    expiry: fc.oneof({ weight: expiryOdds - 1, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    seqs: fc.array(sequenceArb(maxActions), { minLength: 1, maxLength: maxSeqs, size: 'max' }),
  });
}

/** The connection an action works on (its index modulo the sequence's connections, so shrinking stays valid). */
export function connOf(seq: Sequence, a: Action): number {
  return a.c % seq.conns.length;
}

/** The namespace whose key a PLAIN login's password is (null: none), and the one its SASL hostname names. */
export function plainNamespaces(spec: ConnSpec): { keyNs: Ns | null; saslNs: Ns | null } {
  const l = spec.login;
  if (l.mech !== 'PLAIN') return { keyNs: null, saslNs: null };
  const pick = (w: 'own' | 'otherNs' | 'wrong' | 'none'): Ns | null => (w === 'own' ? spec.ns : w === 'otherNs' ? otherNs(spec.ns) : null);
  return { keyNs: pick(l.key), saslNs: pick(l.saslHost) };
}

function describeLogin(spec: ConnSpec): string {
  const l = spec.login;
  if (l.mech === 'ANONYMOUS') return 'SASL ANONYMOUS';
  const { keyNs, saslNs } = plainNamespaces(spec);
  return `SASL PLAIN ${l.user} with ${keyNs ? `the key of ${keyNs}` : 'a wrong key'}${saslNs ? `, SASL hostname ${NS_HOST[saslNs]}` : ', no SASL hostname'}`;
}

function describeToken(t: TokenSpec): string {
  const key = t.policy === 'UnknownPolicy' ? 'a key no namespace has' : { good: 'its key', otherNs: "another namespace's key", wrong: 'a wrong key' }[t.key];
  const life = { long: 'valid', short: 'short-lived', expired: 'expired' }[t.life];
  return `${life} token of ${t.policy} (${key}) for ${t.audience ? `'${t.audience}'` : 'the namespace'}`;
}

/** One action as a line of frames: "conn1: attach sender 'orders' handle 0 (pipelined)". */
export function describeAction(seq: Sequence, a: Action): string {
  const who = `conn${connOf(seq, a)}`;
  const p = a.pipe ? ' (pipelined)' : '';
  switch (a.k) {
    case 'attach':
      if (a.role === 'sender') return `${who}: attach sender '${a.entity}' handle ${a.h}${p}`;
      return `${who}: attach receiver '${a.entity}' handle ${a.h}${a.receiveAndDelete ? ' receive-and-delete' : ''}${a.credit ? `, flow credit ${a.credit}` : ''}${p}`;
    case 'transfer':
      return `${who}: transfer ${a.h < 0 ? "on the newest sender link (if none yet: attach sender 'orders' handle 0 in the same write)" : `h${a.h}`}${a.frames > 1 ? ` in ${a.frames} frames` : ''}${a.settled ? ' pre-settled' : ''}${p}`;
    case 'flow':
      return `${who}: flow ${a.h < 0 ? 'on the newest receiver link' : `h${a.h}`} credit ${a.credit}${p}`;
    case 'disposition':
      return `${who}: disposition ${a.outcome} of received delivery #${a.pick}${p}`;
    case 'token':
      return `${who}: $cbs put-token, ${describeToken(a.token)}${p}`;
    case 'peek':
      return `${who}: $management peek-message on '${a.entity}'${p}`;
    case 'schedule':
      return `${who}: $management schedule-message to '${a.entity}'${p}`;
    case 'detach':
      return `${who}: detach h${a.h}${p}`;
    case 'close':
      return `${who}: ${a.how === 'frame' ? 'close frame' : 'drop the socket'}${p}`;
    case 'expire':
      return `(short-lived tokens lapse here)`;
  }
}

/** A whole batch as readable lines (what a failing, shrunk batch prints). */
export function describeBatch(b: Batch): string {
  const out: string[] = [`batch of ${b.seqs.length} sequence(s)${b.expiry ? ', short-lived tokens lapse at the first expiry mark' : ''}:`];
  b.seqs.forEach((s, i) => {
    out.push(`  sequence ${i}:`);
    s.conns.forEach((cs, j) => out.push(`    conn${j}: open ${NS_HOST[cs.ns]} (${cs.ns}), ${describeLogin(cs)}${cs.auth ? `, then $cbs put-token, ${describeToken(cs.auth)}` : ''}`));
    for (const a of s.actions) if (a.k !== 'expire' || b.expiry) out.push(`    ${describeAction(s, a)}`);
  });
  return out.join('\n');
}

/** A right a claim carries. */
export type Right = 'Manage' | 'Send' | 'Listen';

/** A claim the oracle grants a connection in one namespace. */
interface Grant {
  ns: Ns;
  rights: readonly string[];
  audience: string;
  short: boolean;
}

/** The namespace whose key an "otherNs" token of a connection in `connNs` is signed with. */
export function otherNs(connNs: Ns): Ns {
  return NAMESPACES[(NAMESPACES.indexOf(connNs) + 1) % NAMESPACES.length]!;
}

/** The namespace whose key signed a token of a connection in `connNs` (null: no namespace's). */
export function signerOf(key: TokenSpec['key'], connNs: Ns): Ns | null {
  return key === 'good' ? connNs : key === 'otherNs' ? otherNs(connNs) : null;
}

/**
 * What one connection may do, by the rules of Service Bus: the namespaces it may end up working in (the one its
 * open names; with a PLAIN login for another SASL hostname, that one too) and the claims it holds in each.
 */
export class ConnRights {
  /** Namespaces the broker may legitimately serve this connection in. */
  readonly candidates: Ns[];
  private readonly grants: Grant[] = [];

  constructor(spec: ConnSpec) {
    const l = spec.login;
    const { keyNs, saslNs } = plainNamespaces(spec);
    const candidates = new Set<Ns>([spec.ns]);
    if (saslNs) candidates.add(saslNs);
    this.candidates = [...candidates];
    // A login is a claim on the namespace its password was checked in: the SASL hostname's, else the open's.
    if (l.mech === 'PLAIN' && keyNs && keyNs === (saslNs ?? spec.ns)) this.grants.push({ ns: keyNs, rights: POLICIES[l.user], audience: '', short: false });
  }

  /** A put-token: a claim in the namespace whose key signed it, if it is a policy there and not expired. */
  putToken(t: TokenSpec, connNs: Ns): void {
    if (t.policy === 'UnknownPolicy' || t.life === 'expired') return;
    // A claim in the namespace whose key signed it, if the connection may be working there.
    const n = signerOf(t.key, connNs);
    if (n && this.candidates.includes(n)) this.grants.push({ ns: n, rights: POLICIES[t.policy], audience: t.audience, short: t.life === 'short' });
  }

  /** Namespaces in which `right` on `path` is in force now (`lapsed`: short-lived tokens are past their expiry). */
  inForce(path: string, right: Right, lapsed: boolean): Set<Ns> {
    const out = new Set<Ns>();
    for (const g of this.grants) {
      if (g.short && lapsed) continue;
      const covers = g.audience === '' || path === g.audience || path.startsWith(g.audience + '/');
      if (covers && (g.rights.includes(right) || g.rights.includes('Manage'))) out.add(g.ns);
    }
    return out;
  }
}
