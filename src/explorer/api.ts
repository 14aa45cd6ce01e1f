// The page's calls to the broker. Each is signed with a SAS token made here (Web Crypto HMAC-SHA256 over the
// resource URI and expiry, as Service Bus's SharedAccessSignature scheme defines) from the key the user typed,
// which stays in sessionStorage only.

import { $, valueOf } from './dom.js';

let cached: { token: string; until: number } | null = null;

function b64(bytes: ArrayBuffer): string {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s);
}

/** Forgets the token, so the next call signs with the key now typed. */
export function forgetToken(): void {
  cached = null;
}

/** A SAS token for this origin, valid for an hour and renewed a minute before it ends. */
export async function token(): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  if (cached && cached.until - now > 60) return cached.token;
  if (!crypto.subtle) throw new Error('This page needs Web Crypto: open it on 127.0.0.1 / localhost or over HTTPS.');
  const keyName = valueOf('#keyName'), key = $<HTMLInputElement>('#key').value;
  const se = now + 3600;
  const sr = encodeURIComponent(location.origin + '/');
  const k = await crypto.subtle.importKey('raw', new TextEncoder().encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const sig = b64(await crypto.subtle.sign('HMAC', k, new TextEncoder().encode(sr + '\n' + se)));
  const t = 'SharedAccessSignature sr=' + sr + '&sig=' + encodeURIComponent(sig) + '&se=' + se + '&skn=' + encodeURIComponent(keyName);
  cached = { token: t, until: se };
  return t;
}

/** Calls the admin JSON API (`/api/<path>`); rejects with the broker's error message. */
export async function api<T>(path: string, init: { method?: string; body?: string } = {}): Promise<T> {
  const res = await fetch('/api/' + path, { ...init, headers: { authorization: await token(), 'content-type': 'application/json' } });
  const body = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
  if (!res.ok) throw new Error(body.error?.message || 'HTTP ' + res.status);
  return body as T;
}

/** POSTs a JSON body to the admin API. */
export function post<T>(path: string, body: unknown): Promise<T> {
  return api<T>(path, { method: 'POST', body: JSON.stringify(body) });
}

const ATOM_NS = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';
const DESCRIPTIONS = { queue: 'QueueDescription', topic: 'TopicDescription', subscription: 'SubscriptionDescription' } as const;
/** The entity kinds the page creates. */
export type EntityKind = keyof typeof DESCRIPTIONS;

/**
 * Creates (PUT, with `kind`) or deletes an entity through the management API the SDKs' administration clients
 * use (ATOM over HTTPS, api-version 2021-05), with every Service Bus default.
 */
export async function atom(method: 'PUT' | 'DELETE', path: string, kind?: EntityKind): Promise<void> {
  const headers: Record<string, string> = { authorization: await token() };
  let body: string | undefined;
  if (kind) {
    headers['content-type'] = 'application/atom+xml';
    body = '<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><' + DESCRIPTIONS[kind] + ' xmlns="' + ATOM_NS + '"/></content></entry>';
  }
  const res = await fetch('/' + path.split('/').map(encodeURIComponent).join('/') + '?api-version=2021-05', { method, headers, body });
  if (!res.ok) {
    const text = await res.text();
    const detail = /<Detail>([^<]*)<\/Detail>/.exec(text);
    throw new Error(method + ' ' + path + ': HTTP ' + res.status + (detail ? ' — ' + detail[1] : ''));
  }
}
