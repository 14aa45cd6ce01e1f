// Control of a broker running elsewhere (another process, or a vitest globalSetup whose tests run in worker
// processes): the manual clock and fault injection over the admin HTTP API, signed with the connection string's
// key. The same operations as the embedded API, so a test reads the same either way.

import { signSas } from '../auth/sas-token.js';
import type { SendFailure } from '../broker/runtime/faults.js';

/** Where the broker is: what the vitest globalSetup provides (`peeklock/vitest`). */
export interface BrokerAddress {
  /** The SDK connection string (its key signs the admin requests). */
  connectionString: string;
  /** The broker's HTTP port. */
  httpPort: number;
  /** The broker's address; default the connection string's host. */
  host?: string;
}

/** The manual clock and faults of a broker, over HTTP. */
export interface RemoteBroker {
  /** Moves broker time forward by `ms` (manual clock only); resolves with the new broker time. */
  advance(ms: number): Promise<Date>;
  /** Fails the next `count` sends (to `entity`, or any) with ServerBusy or QuotaExceeded. */
  failSends(fail: SendFailure, opts?: { count?: number; entity?: string }): Promise<void>;
  /** Holds the next `count` sends for `delayMs` real milliseconds each. */
  delaySends(delayMs: number, opts?: { count?: number; entity?: string }): Promise<void>;
  /** Ends a message lock now. */
  expireLock(lockToken: string): Promise<void>;
  /** Closes every AMQP connection with a link to `entity`; resolves with how many. */
  dropConnections(entity: string): Promise<number>;
  /** Makes `$management` requests wait `delayMs` real milliseconds (0 = off). */
  slowManagement(delayMs: number): Promise<void>;
  /** Disarms every pending fault. */
  clearFaults(): Promise<void>;
  /**
   * Creates a namespace (needs the default namespace's Manage key): `body` is a Config.json namespace item without
   * its Name (`{ Queues?, Topics?, SharedAccessPolicies? }`). Resolves with its connection string.
   */
  createNamespace(name: string, body?: Record<string, unknown>): Promise<{ name: string; connectionString: string }>;
  /** Deletes a namespace: its connections are closed and its data removed. */
  deleteNamespace(name: string): Promise<void>;
}

/** Connects to the admin API of the broker at `address`. */
export function remoteBroker(address: BrokerAddress): RemoteBroker {
  const fields = new Map(
    address.connectionString
      .split(';')
      .filter((p) => p.includes('='))
      .map((p) => [p.slice(0, p.indexOf('=')).trim().toLowerCase(), p.slice(p.indexOf('=') + 1).trim()] as const),
  );
  const keyName = fields.get('sharedaccesskeyname');
  const key = fields.get('sharedaccesskey');
  if (!keyName || !key) throw new Error('remoteBroker: the connection string needs SharedAccessKeyName and SharedAccessKey.');
  const host = address.host ?? new URL((fields.get('endpoint') ?? 'sb://127.0.0.1').replace(/^sb:/, 'http:')).hostname;
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${address.httpPort}`;
  const call = async (method: string, p: string, body?: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${base}${p}`, {
      method,
      headers: { authorization: signSas(`${base}/`, keyName, key, 300), 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(150_000),
    });
    const json = (await res.json()) as Record<string, unknown> & { error?: { message?: string } };
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${json.error?.message ?? ''}`.trim());
    return json;
  };
  return {
    advance: async (ms) => new Date((await call('POST', '/api/clock/advance', { ms })).nowMs as number),
    failSends: async (fail, o = {}) => void (await call('POST', '/api/faults/sends', { fail, count: o.count ?? 1, entity: o.entity })),
    delaySends: async (delayMs, o = {}) => void (await call('POST', '/api/faults/sends', { delayMs, count: o.count ?? 1, entity: o.entity })),
    expireLock: async (lockToken) => void (await call('POST', '/api/faults/expire-lock', { lockToken })),
    dropConnections: async (entity) => (await call('POST', '/api/faults/drop-connections', { entity })).dropped as number,
    slowManagement: async (delayMs) => void (await call('POST', '/api/faults/management', { delayMs })),
    clearFaults: async () => void (await call('DELETE', '/api/faults')),
    createNamespace: async (name, body = {}) =>
      (await call('PUT', `/api/namespaces/${encodeURIComponent(name)}`, body)) as unknown as { name: string; connectionString: string },
    deleteNamespace: async (name) => void (await call('DELETE', `/api/namespaces/${encodeURIComponent(name)}`)),
  };
}
