// Several isolated namespaces in one broker process. Each namespace is a `Broker` of its own over a store of its
// own, so entities, messages, locks and sequence numbers of one can never reach another; what they share is the
// process, the ports, the clock and the faults. The first namespace of the config is the default one and keeps the
// data directory itself (a single-namespace broker is exactly what it was); every other one lives in
// `<dataDir>/namespaces/<name>`. A namespace created at run time (embedded API, `PUT /api/namespaces/{name}`, or an
// unknown key name in test mode) also writes its definition there, `namespace.json`, so a restart reopens it.

import fs from 'node:fs';
import path from 'node:path';
import { Broker } from '../broker/broker.js';
import type { Clock } from '../broker/runtime/clock.js';
import { BrokerError } from '../broker/errors.js';
import { tokenKeyName, verifySas } from '../auth/sas.js';
import { ConfigError, parseNamespace } from '../config/load.js';
import { NAMESPACE_NAME_PATTERN } from '../config/schema.js';
import type { NamespaceConfig, PeeklockConfig, SharedAccessPolicy } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { makeDirDurable, PRIVATE_FILE_MODE, removeDirDurably, TOMBSTONE_PREFIX, writeFileDurably } from '../fs/durable.js';
import { MemoryStore } from '../store/memory-store.js';
import type { Store } from '../store/store.js';
import { hostLabel, type Tenant, type TenantDirectory } from '../amqp/tenant.js';


/** Most namespaces one broker serves (a bound for auto namespaces, which any unknown key name creates). */
export const MAX_NAMESPACES = 1000;
/** The file that records a namespace created at run time. */
const DEFINITION = 'namespace.json';

/** One running namespace. */
export interface Namespace extends Tenant {
  /** The whole broker (the AMQP server sees it only as its messaging port). */
  readonly broker: Broker;
  readonly store: Store;
  /** Where its store lives; null for an in-memory store. */
  readonly dir: string | null;
}

/** What the registry is built from. */
export interface NamespacesOptions {
  config: PeeklockConfig;
  clock: Clock;
  log: Logger;
  /** The default namespace's store (already open and started by the caller). */
  fallback: { broker: Broker; store: Store };
  /** Opens a store in a directory; absent = every other namespace gets a `MemoryStore` (in-memory runs). */
  openStore?: (dir: string) => Promise<Store>;
  onFatal?: (err: Error) => void;
}

/** The namespaces of one broker process, by name (case-insensitive, as host labels are). */
export class Namespaces implements TenantDirectory {
  readonly fallback: Namespace;
  private readonly byName = new Map<string, Namespace>();
  private readonly pending = new Map<string, Promise<Namespace>>();
  /** Called with a namespace's name before it is deleted (the AMQP server closes its connections). */
  onDelete: (name: string) => Promise<unknown> = async () => undefined;
  private readonly root: string;
  private readonly auto: boolean;

  constructor(private readonly opts: NamespacesOptions) {
    const { config } = opts;
    this.fallback = { name: config.namespace, broker: opts.fallback.broker, policies: config.broker.policies, store: opts.fallback.store, dir: null };
    this.byName.set(config.namespace.toLowerCase(), this.fallback);
    this.root = path.join(path.resolve(config.broker.dataDir), 'namespaces');
    // An unknown key name creating a namespace is for test suites only: on with the manual clock or when asked for.
    this.auto = config.broker.autoNamespaces === true || config.broker.clock === 'manual';
  }

  /** Opens the config's other namespaces, then those created at run time before a restart. */
  async start(): Promise<void> {
    for (const ns of (this.opts.config.namespaces ?? []).slice(1)) await this.open(ns, false);
    if (!this.opts.openStore || !fs.existsSync(this.root)) return;
    for (const entry of fs.readdirSync(this.root)) {
      if (entry.startsWith(TOMBSTONE_PREFIX)) {
        fs.rmSync(path.join(this.root, entry), { recursive: true, force: true }); // a delete a crash interrupted
        continue;
      }
      const file = path.join(this.root, entry, DEFINITION);
      if (!fs.existsSync(file)) continue;
      try {
        const ns = parseNamespace(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>, file);
        if (!this.byName.has(ns.name.toLowerCase())) await this.open(ns, false);
      } catch (err) {
        // One unreadable definition must not keep the broker (and every other namespace) down.
        this.opts.log.error({ file, reason: (err as Error).message }, 'namespace not reopened');
      }
    }
  }

  /**
   * A connection string for namespace `ns` on `host:port`: its first Manage key (else its first), whose name selects
   * the namespace when the host does not (no DNS needed). `UseDevelopmentEmulator=true`: plain AMQP.
   */
  connectionString(ns: Namespace, host: string, port: number): string {
    const p = ns.policies.find((x) => x.rights.includes('Manage')) ?? ns.policies[0]!;
    return `Endpoint=sb://${host}:${port};SharedAccessKeyName=${p.name};SharedAccessKey=${p.key};UseDevelopmentEmulator=true`;
  }

  /** Every running namespace, the default first. */
  list(): Namespace[] {
    return [...this.byName.values()];
  }

  /** The namespace called `name` (any case), if running. */
  get(name: string): Namespace | undefined {
    return this.byName.get(name.toLowerCase());
  }

  /**
   * The namespace an HTTP request is for: the one its Host header's first label names, else the one its SAS token's
   * key name selects (`byKeyName`); null = the default namespace.
   */
  async forRequest(host: string | undefined, authorization: string | undefined): Promise<Namespace | null> {
    const named = host ? this.byHost(host) : null;
    if (named) return named;
    const keyName = authorization ? tokenKeyName(authorization) : null;
    return keyName === null ? null : await this.byKeyName(keyName, authorization);
  }

  /** The namespace the first DNS label of `host` names. */
  byHost(host: string): Namespace | null {
    const label = hostLabel(host);
    return label ? (this.byName.get(label) ?? null) : null;
  }

  /**
   * See `TenantDirectory.byKeyName`: null (the default) if the default namespace has the key; else the namespace of
   * that name, else the one namespace with a key of that name; else, in test mode, a new namespace of that name —
   * only when `token` verifies against the key it would have, so a forged token creates and writes nothing.
   */
  byKeyName(keyName: string, token?: string): Namespace | null | Promise<Namespace | null> {
    // A key name of one of the default namespace's entity SAS rules keeps the default (no namespace is made of it).
    if (this.fallback.policies.some((p) => p.name === keyName) || this.fallback.broker.rulesNamed(keyName).length) return null;
    const found = this.get(keyName);
    if (found) return found;
    const holders = this.list().filter((ns) => ns.policies.some((p) => p.name === keyName));
    if (holders.length === 1) return holders[0]!;
    if (!this.auto || !new RegExp(NAMESPACE_NAME_PATTERN).test(keyName)) return null;
    // Test mode: the key name names a fresh namespace whose one key is that name with the default namespace's key,
    // so a suite changes only SharedAccessKeyName in the usual connection string to get a namespace of its own.
    const key = (this.fallback.policies.find((p) => p.rights.includes('Manage')) ?? this.fallback.policies[0])!.key;
    const policies: SharedAccessPolicy[] = [{ name: keyName, key, rights: ['Manage', 'Send', 'Listen'] }];
    if (token === undefined || !signedWith(token, policies)) return null;
    return this.create({ name: keyName, queues: [], topics: [], policies }, { Name: keyName, SharedAccessPolicies: [{ Name: keyName, Key: key, Rights: ['Manage', 'Send', 'Listen'] }] }).then(
      (ns) => ns,
      (err: unknown) => {
        this.opts.log.warn({ namespace: keyName, reason: (err as Error).message }, 'auto namespace not created');
        return null;
      },
    );
  }

  /**
   * Creates a namespace from a Config.json `Namespaces[]` item (`{ Name, Queues?, Topics?, SharedAccessPolicies? }`)
   * and records it so a restart reopens it. Without policies it gets one Manage key of its own: a fresh random key
   * named after the namespace, so a connection string to 127.0.0.1 with that key name reaches it without DNS.
   */
  async createFrom(item: Record<string, unknown>): Promise<Namespace> {
    let ns: NamespaceConfig;
    try {
      ns = parseNamespace(item, 'namespace');
    } catch (err) {
      if (err instanceof ConfigError) throw new BrokerError('InvalidOperation', err.message.replace(/^namespace: /, ''));
      throw err;
    }
    const raw = { ...item };
    if (!ns.policies) {
      const key = randomKey();
      ns.policies = [{ name: ns.name, key, rights: ['Manage', 'Send', 'Listen'] }];
      raw.SharedAccessPolicies = [{ Name: ns.name, Key: key, Rights: ['Manage', 'Send', 'Listen'] }];
    }
    return this.create(ns, raw);
  }

  /** Deletes a namespace: its connections are closed (connection:forced), its broker stopped, its data removed. */
  async delete(name: string): Promise<void> {
    const ns = this.get(name);
    if (!ns) throw new BrokerError('EntityNotFound', `The namespace '${name}' does not exist.`);
    if (ns === this.fallback) throw new BrokerError('InvalidOperation', `The default namespace '${ns.name}' cannot be deleted.`);
    this.byName.delete(name.toLowerCase());
    await this.onDelete(ns.name);
    await ns.broker.stop();
    await ns.store.close();
    // One rename decides, so a power cut leaves the namespace whole or gone, never a definition without its store.
    if (ns.dir) removeDirDurably(ns.dir);
    this.opts.log.info({ namespace: ns.name }, 'namespace deleted');
  }

  /** Fault injection: ends the lock `token` in whichever namespace holds it (LockLost from the default if none). */
  expireLock(token: string): void {
    for (const ns of this.list()) {
      if (ns === this.fallback) continue;
      try {
        return ns.broker.expireLock(token);
      } catch {
        /* not this namespace's lock */
      }
    }
    this.fallback.broker.expireLock(token);
  }

  /** Resolves once every namespace's writes and pumps have settled (the manual clock waits on it). */
  async settled(): Promise<void> {
    await Promise.all(this.list().map((ns) => ns.broker.settled()));
  }

  /** Stops every namespace but the default one (its owner stops it). */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.pending.values()]);
    for (const ns of this.list()) {
      if (ns === this.fallback) continue;
      await ns.broker.stop();
      await ns.store.close();
    }
  }

  private create(ns: NamespaceConfig, raw: Record<string, unknown>): Promise<Namespace> {
    const key = ns.name.toLowerCase();
    if (this.byName.has(key) || this.pending.has(key)) {
      return Promise.reject(new BrokerError('EntityAlreadyExists', `The namespace '${ns.name}' already exists.`));
    }
    if (this.byName.size + this.pending.size >= MAX_NAMESPACES) {
      return Promise.reject(new BrokerError('QuotaExceeded', `The broker already has ${MAX_NAMESPACES} namespaces, the most allowed.`));
    }
    const p = this.open(ns, true, raw).finally(() => this.pending.delete(key));
    this.pending.set(key, p);
    return p;
  }

  private async open(ns: NamespaceConfig, created: boolean, raw?: Record<string, unknown>): Promise<Namespace> {
    const { config, clock, log } = this.opts;
    const policies = ns.policies ?? config.broker.policies;
    const dir = this.opts.openStore ? path.join(this.root, ns.name.toLowerCase()) : null;
    if (dir && created) {
      // A directory already there holds someone's data (a namespace dropped from the config keeps its store there,
      // without a definition): never removed implicitly, so the name is refused until its owner moves it away.
      if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
        throw new BrokerError('EntityAlreadyExists', `The namespace '${ns.name}' already exists on disk (${dir}) but is not served; move that directory away to create it again.`);
      }
      // Owner-only: the definition holds the namespace's keys, the store its messages.
      makeDirDurable(dir, 0o700);
      writeFileDurably(path.join(dir, DEFINITION), JSON.stringify(raw ?? { Name: ns.name }), PRIVATE_FILE_MODE);
    }
    const store = dir ? await this.opts.openStore!(dir) : new MemoryStore();
    await store.open();
    const nsConfig: PeeklockConfig = {
      ...config,
      namespace: ns.name,
      queues: ns.queues,
      topics: ns.topics,
      namespaces: [ns],
      broker: { ...config.broker, policies },
    };
    const broker = new Broker({ config: nsConfig, store, clock, log: log.child({ namespace: ns.name }), onFatal: this.opts.onFatal });
    try {
      await broker.start();
    } catch (err) {
      await store.close();
      if (dir && created) fs.rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    const out: Namespace = { name: ns.name, broker, policies, store, dir };
    this.byName.set(ns.name.toLowerCase(), out);
    log.info({ namespace: ns.name, queues: ns.queues.length, topics: ns.topics.length, created }, 'namespace open');
    return out;
  }
}

// True when `token` is a current SAS token signed with one of `policies` (the check a put-token makes next).
function signedWith(token: string, policies: SharedAccessPolicy[]): boolean {
  try {
    verifySas(token, policies, Date.now());
    return true;
  } catch {
    return false;
  }
}

/** A random 256-bit key, base64, like the keys Azure generates for a policy. */
function randomKey(): string {
  return Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(32))).toString('base64');
}
