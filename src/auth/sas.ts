// Shared Access Signature tokens, checked the way Service Bus checks them: HMAC-SHA256 with the policy key
// (the key string's UTF-8 bytes, not base64-decoded) over the URL-encoded resource URI as it appears in the
// token, a newline and the expiry; a timing-safe comparison; expiry in the future; and the audience (`sr`)
// covering the entity (docs/wire-contract.md, "Claims-based security ($cbs)"; Service Bus SAS docs).
//
// The keys a token may be signed with are the namespace's policies and, as Service Bus scopes them, the SAS rules
// of the entity the token's `sr` names (a queue's rules for the queue and its subqueues, a topic's for the topic
// and its subscriptions): `NamespaceKeys` finds them, so this one check serves $cbs, SASL PLAIN and HTTP alike.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AccessRight, SharedAccessPolicy } from '../config/types.js';

/** Why a token was refused; the text goes back to the client, never the key or signature. */
export class AuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthError';
  }
}

/** A validated token: who signed it, for what audience path, until when. */
export interface Claim {
  policy: string;
  rights: readonly AccessRight[];
  /** Entity path the token covers ('' = the whole namespace), lower case. */
  audience: string;
  /** Expiry, epoch ms. */
  expiresAt: number;
}

/** One entity's SAS rules and the entity path (lower case) they are scoped to. */
export interface ScopedRules {
  scope: string;
  rules: readonly { keyName: string; primaryKey: string; secondaryKey: string; rights: readonly AccessRight[] }[];
}

/** The keys of one namespace: its policies, and the SAS rules of its queues and topics. */
export interface NamespaceKeys {
  readonly policies: readonly SharedAccessPolicy[];
  /** The rules of the queue or topic `path` is or lies under, or null. */
  rulesGuarding(path: string): ScopedRules | null;
  /** Every entity rule named `keyName`, with its entity (a SASL PLAIN login names no entity). */
  rulesNamed(keyName: string): readonly ScopedRules[];
}

/** A namespace's policies alone, or its policies and entity rules. */
export type Keys = readonly SharedAccessPolicy[] | NamespaceKeys;

// A key that may have signed: its name, its keys (a rule has two, either may sign) and the rights it grants.
interface Signer {
  name: string;
  keys: string[];
  rights: readonly AccessRight[];
}

function policiesOf(keys: Keys): readonly SharedAccessPolicy[] {
  return Array.isArray(keys) ? (keys as readonly SharedAccessPolicy[]) : (keys as NamespaceKeys).policies;
}

// The namespace policies named `name`, then the rules of that name guarding `audience` (none for the whole namespace).
function signers(keys: Keys, name: string, audience: string): Signer[] {
  const out: Signer[] = policiesOf(keys)
    .filter((p) => p.name === name)
    .map((p) => ({ name: p.name, keys: [p.key], rights: p.rights }));
  const guarded = Array.isArray(keys) || audience === '' ? null : (keys as NamespaceKeys).rulesGuarding(audience);
  for (const r of guarded?.rules ?? []) {
    if (r.keyName === name) out.push({ name: r.keyName, keys: [r.primaryKey, r.secondaryKey], rights: r.rights });
  }
  return out;
}

/** The fields of `SharedAccessSignature sr=…&sig=…&se=…&skn=…` (any order). */
function fields(token: string): Map<string, string> {
  const prefix = 'SharedAccessSignature ';
  if (!token.startsWith(prefix)) throw new AuthError('The token is not a SharedAccessSignature.');
  const out = new Map<string, string>();
  for (const part of token.slice(prefix.length).trim().split('&')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i), part.slice(i + 1));
  }
  return out;
}

/** The key name (`skn`) a SharedAccessSignature token was signed with, or null when it has none. */
export function tokenKeyName(token: string): string | null {
  try {
    const skn = fields(token).get('skn');
    return skn ? decodeURIComponent(skn) : null;
  } catch {
    return null;
  }
}

/** The entity path of a resource URI, without scheme, host, port and query (the JS admin client signs the query), lower case. */
export function audiencePath(resource: string): string {
  return resource
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '')
    .replace(/[?#].*$/, '')
    .replace(/^\/+|\/+$/g, '')
    .toLowerCase();
}

/** True when a token for `audience` covers the node at `path` (same path or a parent, by whole segments). */
export function covers(audience: string, path: string): boolean {
  const p = path.toLowerCase().replace(/^\/+|\/+$/g, '');
  return audience === '' || p === audience || p.startsWith(audience + '/');
}

/** True when `rights` include `need`; Manage implies Send and Listen, as in Service Bus. */
export function hasRight(rights: readonly AccessRight[], need: AccessRight): boolean {
  return rights.includes(need) || rights.includes('Manage');
}

/**
 * Verifies a SAS token against a namespace's keys: its policies, and the rules of the entity the token's `sr` names;
 * throws AuthError with a reason otherwise. The claim's audience is the `sr` path, so an entity rule's claim never
 * reaches past its entity.
 */
export function verifySas(token: string, keys: Keys, nowMs: number): Claim {
  const f = fields(token);
  const sr = f.get('sr');
  const sig = f.get('sig');
  const se = f.get('se');
  const skn = f.get('skn');
  if (!sr || !sig || !se || !skn) throw new AuthError('The token is missing sr, sig, se or skn.');
  const name = safeDecode(skn);
  const audience = audiencePath(safeDecode(sr));
  const candidates = signers(keys, name, audience);
  if (!candidates.length) throw new AuthError(`Unknown shared access policy '${name}'.`);
  const given = Buffer.from(safeDecode(sig), 'base64');
  const signer = candidates.find((c) =>
    c.keys.some((key) => {
      const expected = createHmac('sha256', Buffer.from(key, 'utf8')).update(`${sr}\n${se}`).digest();
      return given.length === expected.length && timingSafeEqual(given, expected);
    }),
  );
  if (!signer) throw new AuthError('The token signature does not match.');
  const expiresAt = Number(se) * 1000;
  if (!Number.isFinite(expiresAt) || expiresAt <= nowMs) throw new AuthError('The token has expired.');
  return { policy: signer.name, rights: signer.rights, audience, expiresAt };
}

/**
 * Checks a SASL PLAIN login (user name = key name, password = key, as Service Bus accepts from JMS): a namespace
 * policy's claim covers the namespace; an entity rule's claim covers its entity. Empty when nothing matches.
 */
export function verifyPlainLogin(user: string, password: string, keys: Keys): Claim[] {
  const claim = (policy: string, rights: readonly AccessRight[], audience: string): Claim => ({ policy, rights, audience, expiresAt: Number.POSITIVE_INFINITY });
  // Exactly one comparison whether or not a policy has this name: an unknown name is compared against a stand-in
  // key, so the answer's timing does not tell which policy names exist (a wrong name costs what a wrong key does).
  const policy = policiesOf(keys).find((p) => p.name === user);
  if (sameSecret(password, policy?.key ?? UNKNOWN_NAME_KEY) && policy) return [claim(policy.name, policy.rights, '')];
  if (Array.isArray(keys)) return [];
  const out: Claim[] = [];
  for (const scoped of (keys as NamespaceKeys).rulesNamed(user)) {
    for (const r of scoped.rules) if (sameSecret(password, r.primaryKey) || sameSecret(password, r.secondaryKey)) out.push(claim(r.keyName, r.rights, scoped.scope));
  }
  return out;
}

/** Checks a SASL PLAIN login against namespace policies: the namespace-wide claim, or null. */
export function verifyPlain(user: string, password: string, policies: readonly SharedAccessPolicy[]): Claim | null {
  return verifyPlainLogin(user, password, policies)[0] ?? null;
}

// Compares secrets in constant time whatever their lengths: digests of a fixed length are compared, so neither the
// password's length nor where it differs shows in the time.
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(plainDigest(a), plainDigest(b));
}

/**
 * What a PLAIN login naming no policy is compared against: a random key of a SAS key's length (32 bytes, base64),
 * drawn per process, which no password can be known to match (and a match would grant nothing: no policy).
 */
const UNKNOWN_NAME_KEY = randomBytes(32).toString('base64');

/** A per-process HMAC key: the digests compared for SASL PLAIN cannot be computed ahead of time. */
const PLAIN_DIGEST_KEY = randomBytes(32);

function plainDigest(secret: string): Buffer {
  return createHmac('sha256', PLAIN_DIGEST_KEY).update(secret, 'utf8').digest();
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new AuthError('The token is not correctly URL-encoded.');
  }
}

/** A namespace's keys from its policies and what holds its entities' rules (the namespace's broker). */
export function namespaceKeys(
  policies: readonly SharedAccessPolicy[],
  holder: { rulesGuarding(path: string): ScopedRules | null; rulesNamed(keyName: string): readonly ScopedRules[] },
): NamespaceKeys {
  return { policies, rulesGuarding: (path) => holder.rulesGuarding(path), rulesNamed: (keyName) => holder.rulesNamed(keyName) };
}
