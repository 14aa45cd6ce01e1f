// The admin CLI's HTTP client: signs a SAS token with the given policy key for every request and turns
// every failure — broker not reachable, a refused key, a key without Manage, a broker error — into one
// line for the terminal.

import { signSas } from '../auth/sas-token.js';

/** Where the broker's HTTP port is and which policy signs requests. */
export interface AdminTarget {
  url: string;
  keyName: string;
  key: string;
}

/** A failure to show as one line (`peeklock: …`) with exit code 1. */
export class AdminError extends Error {
  constructor(message: string) {
    super(message.replace(/\s*[\r\n]+\s*/g, ' '));
    this.name = 'AdminError';
  }
}

/** How long a non-streaming request may take. */
const REQUEST_TIMEOUT_MS = 15_000;
/** Lifetime of the token signed for each request. */
const TOKEN_TTL_SEC = 600;

/** The `/api/...` URL for path segments (each URL-encoded, so entity names with "/" survive). */
export function apiUrl(base: string, segments: string[], query: Record<string, string | number | undefined> = {}): URL {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    throw new AdminError(`--url ${JSON.stringify(base)} is not a URL; expected e.g. http://127.0.0.1:5300`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new AdminError(`--url ${base}: must start with http:// or https://`);
  u.pathname = u.pathname.replace(/\/+$/, '') + '/api/' + segments.map(encodeURIComponent).join('/');
  for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
  return u;
}

/** Sends an admin request; resolves with the response once its status is 2xx, else throws AdminError. */
export async function adminFetch(
  t: AdminTarget,
  url: URL,
  init: { method?: string; body?: unknown; stream?: boolean } = {},
): Promise<Response> {
  const headers: Record<string, string> = {
    // A namespace-wide token: its audience is the broker's root, whatever path the API is under.
    authorization: signSas(`${url.protocol}//${url.host}/`, t.keyName, t.key, TOKEN_TTL_SEC),
    accept: init.stream ? 'application/x-ndjson' : 'application/json',
  };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? 'GET',
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.stream ? undefined : AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new AdminError(
      `cannot reach the broker at ${url.origin} (${why}); is it running, and is --url its HTTP port?`,
    );
  }
  if (res.ok) return res;
  const text = await res.text();
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
  } catch {
    /* not a peeklock reply */
  }
  if (!error?.message)
    throw new AdminError(
      `${url.origin} answered HTTP ${res.status} without a peeklock error; is --url the broker's HTTP port?`,
    );
  if (res.status === 401) throw new AdminError(`the broker refused the key '${t.keyName}': ${error.message}`);
  if (res.status === 403) throw new AdminError(`${error.message} Use a policy with Manage (--key-name, --key).`);
  throw new AdminError(`${error.code ?? 'error'}: ${error.message}`);
}

/** Sends a request and parses the JSON reply. */
export async function adminJson<T>(
  t: AdminTarget,
  url: URL,
  init: { method?: string; body?: unknown } = {},
): Promise<T> {
  const res = await adminFetch(t, url, init);
  try {
    return (await res.json()) as T;
  } catch {
    throw new AdminError(`${url.origin} did not answer with JSON; is --url the broker's HTTP port?`);
  }
}

/** Reads an NDJSON reply line by line (bounded by the reply's length). */
export async function* ndjsonLines(res: Response): AsyncGenerator<Record<string, unknown>> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) yield JSON.parse(line) as Record<string, unknown>;
    }
  }
  if (buf.trim()) yield JSON.parse(buf) as Record<string, unknown>;
}

/** Runs an admin subcommand, printing an AdminError as one line with exit code 1 (anything else is a bug). */
export async function run(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    process.stderr.write(`peeklock: ${err.message}\n`);
    process.exitCode = 1;
  }
}
