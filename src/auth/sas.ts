// Shared Access Signature tokens, checked the way Service Bus checks them: HMAC-SHA256 with the policy key
// (the key string's UTF-8 bytes, not base64-decoded) over the URL-encoded resource URI as it appears in the
// token, a newline and the expiry; a timing-safe comparison; expiry in the future; and the audience (`sr`)
// covering the entity (docs/wire-contract.md, "Claims-based security ($cbs)"; Service Bus SAS docs).

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
  rights: AccessRight[];
  /** Entity path the token covers ('' = the whole namespace), lower case. */
  audience: string;
  /** Expiry, epoch ms. */
  expiresAt: number;
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

/** The entity path of a resource URI, without scheme, host and port, lower case. */
export function audiencePath(resource: string): string {
  return resource
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '')
    .replace(/^\/+|\/+$/g, '')
    .toLowerCase();
}

/** True when a token for `audience` covers the node at `path` (same path or a parent, by whole segments). */
export function covers(audience: string, path: string): boolean {
  const p = path.toLowerCase().replace(/^\/+|\/+$/g, '');
  return audience === '' || p === audience || p.startsWith(audience + '/');
}

/** True when `rights` include `need`; Manage implies Send and Listen, as in Service Bus. */
export function hasRight(rights: AccessRight[], need: AccessRight): boolean {
  return rights.includes(need) || rights.includes('Manage');
}

/** Verifies a SAS token against the configured policies; throws AuthError with a reason otherwise. */
export function verifySas(token: string, policies: SharedAccessPolicy[], nowMs: number): Claim {
  const f = fields(token);
  const sr = f.get('sr');
  const sig = f.get('sig');
  const se = f.get('se');
  const skn = f.get('skn');
  if (!sr || !sig || !se || !skn) throw new AuthError('The token is missing sr, sig, se or skn.');
  const name = safeDecode(skn);
  const policy = policies.find((p) => p.name === name);
  if (!policy) throw new AuthError(`Unknown shared access policy '${name}'.`);
  const expected = createHmac('sha256', Buffer.from(policy.key, 'utf8')).update(`${sr}\n${se}`).digest();
  const given = Buffer.from(safeDecode(sig), 'base64');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new AuthError('The token signature does not match.');
  }
  const expiresAt = Number(se) * 1000;
  if (!Number.isFinite(expiresAt) || expiresAt <= nowMs) throw new AuthError('The token has expired.');
  return { policy: policy.name, rights: policy.rights, audience: audiencePath(safeDecode(sr)), expiresAt };
}

/** Checks a SASL PLAIN login: user name = policy name, password = key (as Service Bus accepts from JMS). */
export function verifyPlain(user: string, password: string, policies: SharedAccessPolicy[]): Claim | null {
  const policy = policies.find((p) => p.name === user);
  if (!policy) return null;
  // Digests of a fixed length are compared, so neither the password's length nor where it differs shows in the time.
  if (!timingSafeEqual(plainDigest(password), plainDigest(policy.key))) return null;
  return { policy: policy.name, rights: policy.rights, audience: '', expiresAt: Number.POSITIVE_INFINITY };
}

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
