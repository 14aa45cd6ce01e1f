// The CLI's client of the broker's management plane (Atom XML over HTTP), the same API the SDKs' administration
// clients call: entries and feeds in, descriptions out, signed with a namespace-wide SAS token. Failures become one
// AdminError line, naming what the broker said.

import { XMLParser } from 'fast-xml-parser';
import { signSas } from '../auth/sas-token.js';
import { AdminError, type AdminTarget } from './admin-client.js';

/** The Service Bus namespace of descriptions. */
export const SB_NS = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';
const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
const XSD_NS = 'http://www.w3.org/2001/XMLSchema';
const API_VERSION = '2021-05';
const REQUEST_TIMEOUT_MS = 15_000;
/** Replies larger than this are not read (a page of 100 entries is well under 1 MB). */
const MAX_REPLY_BYTES = 8 * 1024 * 1024;

/** A parsed description: child elements by local name (text, or nested objects). */
export type Description = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: true,
  htmlEntities: false,
  maxNestedTags: 32,
});

/** Escapes text and attribute values. */
export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** `<name>text</name>` for each defined value, in the order given. */
export function elements(fields: [string, string | undefined][]): string {
  return fields
    .filter((f): f is [string, string] => f[1] !== undefined)
    .map(([k, v]) => `<${k}>${esc(v)}</${k}>`)
    .join('');
}

/** A typed `<Value>` as the SDKs send it. */
export function typedValue(v: string | number | boolean): string {
  const type = typeof v === 'number' ? (Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? 'int' : 'double') : typeof v === 'boolean' ? 'boolean' : 'string';
  return `<Value xmlns:d6p1="${XSD_NS}" i:type="d6p1:${type}">${esc(String(v))}</Value>`;
}

/** An Atom entry around one description element (`QueueDescription`, `RuleDescription` …). */
export function entry(kind: string, inner: string): string {
  return (
    `<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">` +
    `<${kind} xmlns="${SB_NS}" xmlns:i="${XSI_NS}">${inner}</${kind}></content></entry>`
  );
}

function url(t: AdminTarget, path: string, query = ''): URL {
  let u: URL;
  try {
    u = new URL(t.url);
  } catch {
    throw new AdminError(`--url ${JSON.stringify(t.url)} is not a URL; expected e.g. http://127.0.0.1:5300`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new AdminError(`--url ${t.url}: must start with http:// or https://`);
  u.pathname = u.pathname.replace(/\/+$/, '') + '/' + path.split('/').map(encodeURIComponent).join('/');
  u.search = `${query}api-version=${API_VERSION}`;
  return u;
}

/** Sends one management request; resolves with the parsed reply body (null when empty). */
export async function atomRequest(
  t: AdminTarget,
  method: 'GET' | 'PUT' | 'DELETE',
  path: string,
  opts: { body?: string; update?: boolean; query?: string } = {},
): Promise<Record<string, unknown> | null> {
  const u = url(t, path, opts.query);
  const headers: Record<string, string> = { authorization: signSas(`${u.protocol}//${u.host}/`, t.keyName, t.key, 600) };
  if (opts.body !== undefined) headers['content-type'] = 'application/atom+xml;type=entry;charset=utf-8';
  if (opts.update) headers['if-match'] = '*';
  let res: Response;
  try {
    res = await fetch(u, { method, headers, body: opts.body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new AdminError(`cannot reach the broker at ${u.origin} (${cause?.code ?? cause?.message ?? (err as Error).message}); is it running, and is --url its HTTP port?`);
  }
  const length = Number(res.headers.get('content-length') ?? 0);
  if (length > MAX_REPLY_BYTES) throw new AdminError(`${u.origin} answered with ${length} bytes; is --url the broker's HTTP port?`);
  const text = (await res.text()).trim();
  let doc: Record<string, unknown> | null = null;
  if (text) {
    try {
      doc = parser.parse(text) as Record<string, unknown>;
    } catch {
      doc = null;
    }
  }
  if (res.ok) return doc;
  const error = doc?.['Error'] as { Detail?: string } | undefined;
  const detail = typeof error?.Detail === 'string' ? error.Detail.replace(/^SubCode=\d+\.\s*/, '') : undefined;
  if (!detail) throw new AdminError(`${u.origin} answered HTTP ${res.status} without a management error; is --url the broker's HTTP port?`);
  if (res.status === 401) throw new AdminError(`the broker refused the key '${t.keyName}': ${detail} Use a policy with Manage (--key-name, --key).`);
  throw new AdminError(detail);
}

/** The description inside an entry reply (`content/QueueDescription` …), or undefined when the reply is not an entry. */
export function descriptionOf(doc: Record<string, unknown> | null): Description | undefined {
  const content = (doc?.['entry'] as Record<string, unknown> | undefined)?.['content'] as Record<string, unknown> | undefined;
  if (!content) return undefined;
  const kind = Object.keys(content).find((k) => !k.startsWith('@_') && k !== '#text');
  const d = kind ? content[kind] : undefined;
  return d && typeof d === 'object' ? (d as Description) : {};
}

/** Every entry of a feed (title and description), reading page after page. */
export async function listAll(t: AdminTarget, path: string): Promise<{ name: string; d: Description }[]> {
  const out: { name: string; d: Description }[] = [];
  // Bounded: at most 1,000 pages of 100.
  for (let page = 0; page < 1000; page++) {
    const doc = await atomRequest(t, 'GET', path, { query: `%24skip=${page * 100}&%24top=100&` });
    const feed = doc?.['feed'] as Record<string, unknown> | undefined;
    if (!feed) throw new AdminError(`the broker did not answer ${path} with a feed`);
    const raw = feed['entry'];
    const entries = (raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]) as Record<string, unknown>[];
    for (const e of entries) {
      const title = e['title'];
      const name = typeof title === 'object' && title !== null ? String((title as Record<string, unknown>)['#text'] ?? '') : String(title ?? '');
      out.push({ name, d: descriptionOf({ entry: e }) ?? {} });
    }
    if (entries.length < 100) break;
  }
  return out;
}
