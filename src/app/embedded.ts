// The embedded API: a broker started inside a test process (or any Node program) with one call. Everything
// defaults to what a test suite wants: ephemeral ports (AMQP and HTTP on port 0, TLS off, so nothing fixed is ever
// bound), a temporary data directory removed by `stop()`, no log output. The broker is the same one the CLI starts
// (LMDB, durable), so what a test sees is what production does.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ManualClock } from '../broker/runtime/clock.js';
import type { QueuePatch, QueueView } from '../broker/broker.js';
import type { MessageHistoryView } from '../broker/ports.js';
import type { SendFailure } from '../broker/runtime/faults.js';
import { loadConfig, parseConfig } from '../config/load.js';
import type { BrokerSettings, PeeklockConfig } from '../config/types.js';
import { createLogger } from '../log/logger.js';
import { startPeeklock } from './app.js';

/** Options of {@link startBroker}; every one is optional. */
export interface StartBrokerOptions {
  /**
   * The entities and settings: a path to a config file, or the same JSON as an object (the emulator's
   * `{ UserConfig: { Namespaces: [...] }, Broker: {...} }`). Default: one namespace with no entities. The ports,
   * host and data directory below win over the file's.
   */
  config?: string | Record<string, unknown>;
  /** Where the store lives; default a fresh temporary directory, removed by `stop()`. Given, it is kept. */
  dataDir?: string;
  /** AMQP port; default 0 (a free port). */
  port?: number;
  /** HTTP port (admin API, Atom management, explorer, WebSockets); default 0 (a free port). */
  httpPort?: number;
  /** amqps port; default -1 (off). 0 picks a free port (the first start creates a local CA, about a second). */
  tlsPort?: number;
  /** Address to listen on; default 127.0.0.1. */
  host?: string;
  /** "manual": broker time moves only through `advance()`; default the config's `Broker.Clock`, else "system". */
  clock?: 'system' | 'manual';
  /** true turns on fault injection (`faults`); default the config's `Broker.Faults`, else off. */
  faults?: boolean;
  /** Log level (pino); default "silent". Logs go to stderr. */
  logLevel?: BrokerSettings['logLevel'];
}

/** Fault injection on an embedded broker (see docs/testing.md, "Testing your code with peeklock"). */
export interface EmbeddedFaults {
  /** Fails the next `count` sends (to `entity`, or any) with ServerBusy or QuotaExceeded. */
  failSends(fail: SendFailure, opts?: { count?: number; entity?: string }): void;
  /** Holds the next `count` sends (to `entity`, or any) for `delayMs` real milliseconds each. */
  delaySends(delayMs: number, opts?: { count?: number; entity?: string }): void;
  /** Ends the lock of a received message now (its `lockToken`); its next complete fails with MessageLockLost. */
  expireLock(lockToken: string): void;
  /** Closes every AMQP connection with a link to `entity` (or under it); resolves with how many, once closed. */
  dropConnections(entity: string): Promise<number>;
  /** Makes every `$management` request (renew lock, peek, schedule ...) wait `delayMs` real ms; 0 turns it off. */
  slowManagement(delayMs: number): void;
  /** Disarms every fault still pending. */
  clear(): void;
}

/** The entities and keys of a namespace created at run time; Config.json's shapes. */
export interface NamespaceOptions {
  /** Queues: a name, or a Config.json queue (`{ Name, Properties }`). */
  queues?: (string | Record<string, unknown>)[];
  /** Topics as in Config.json (`{ Name, Properties?, Subscriptions: [{ Name, Rules? }] }`). */
  topics?: Record<string, unknown>[];
  /** Its keys (`{ Name, Key, Rights }`); default one Manage key named after the namespace, with a random key. */
  policies?: { Name: string; Key: string; Rights: ('Manage' | 'Send' | 'Listen')[] }[];
}

/** A namespace created by {@link EmbeddedBroker.createNamespace}. */
export interface CreatedNamespace {
  readonly name: string;
  /**
   * A connection string for it: the broker's address and the namespace's key, whose name picks the namespace (no
   * DNS needed). A host `<name>.localhost` (with the SDK's `customEndpointAddress`) picks it too.
   */
  readonly connectionString: string;
}

/** A broker running in this process. */
export interface EmbeddedBroker {
  /** A connection string for the Azure SDKs (`UseDevelopmentEmulator=true`: plain AMQP on `amqpPort`). */
  readonly connectionString: string;
  /** The bound AMQP port. */
  readonly amqpPort: number;
  /** The bound HTTP port (admin API, Atom management plane, explorer, AMQP over WebSockets). */
  readonly httpPort: number;
  /** The bound amqps port, or null when TLS is off. */
  readonly tlsPort: number | null;
  /** The address listened on. */
  readonly host: string;
  /** The data directory in use. */
  readonly dataDir: string;
  /** Broker time (what `x-opt-enqueued-time` and `x-opt-locked-until` are measured in). */
  now(): Date;
  /**
   * Moves broker time forward by `ms` (manual clock only) and resolves once every deadline on the way — lock and
   * session lock expiry, TTL, scheduled messages, duplicate-detection windows — has taken effect, in order.
   */
  advance(ms: number): Promise<Date>;
  /**
   * A message's delivery history (issue 39): every attempt (who locked it, renewals, how it ended), its events and
   * overlaps. `entity` may be a dead-letter queue (`q/$DeadLetterQueue`); null when the message has none.
   */
  messageHistory(entity: string, seq: number | bigint | { toNumber(): number }): MessageHistoryView | null;
  /** Fault injection; throws unless started with `faults: true`. */
  readonly faults: EmbeddedFaults;
  /** Creates a queue (Service Bus defaults for what `props` leaves out). */
  createQueue(name: string, props?: QueuePatch): Promise<QueueView>;
  /** Deletes a queue and its messages. */
  deleteQueue(name: string): Promise<void>;
  /** Creates an isolated namespace with its entities and keys (EntityAlreadyExists if the name is taken). */
  createNamespace(name: string, opts?: NamespaceOptions): Promise<CreatedNamespace>;
  /** Deletes a namespace: its connections are closed (connection:forced) and its data removed. */
  deleteNamespace(name: string): Promise<void>;
  /** Stops listening, closes connections, closes the store and removes the temporary data directory. */
  stop(): Promise<void>;
}

const SOURCE = 'startBroker config';

/** Starts a broker in this process; resolves once it accepts connections. */
export async function startBroker(opts: StartBrokerOptions = {}): Promise<EmbeddedBroker> {
  const config = readConfig(opts.config);
  const tempDir = opts.dataDir === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-')) : null;
  const b = config.broker;
  b.host = opts.host ?? '127.0.0.1';
  b.port = opts.port ?? 0;
  b.httpPort = opts.httpPort ?? 0;
  b.tlsPort = opts.tlsPort ?? -1;
  b.dataDir = opts.dataDir ?? tempDir!;
  b.logLevel = opts.logLevel ?? 'silent';
  if (opts.clock !== undefined) b.clock = opts.clock;
  if (opts.faults !== undefined) b.faults = opts.faults;
  const log = createLogger(b.logLevel, process.stderr);
  let running;
  try {
    running = await startPeeklock({ config, log });
  } catch (err) {
    if (tempDir) fs.rmSync(tempDir, { recursive: true, force: true });
    throw err;
  }
  const r = running;
  const policy = b.policies.find((p) => p.rights.includes('Manage')) ?? b.policies[0]!;
  const clock = r.clock;
  const faults = (): NonNullable<typeof r.faults> => {
    if (!r.faults) throw new Error('Fault injection is off; start the broker with startBroker({ faults: true }).');
    return r.faults;
  };
  let stopping: Promise<void> | null = null;
  return {
    connectionString: `Endpoint=sb://${r.host}:${r.port};SharedAccessKeyName=${policy.name};SharedAccessKey=${policy.key};UseDevelopmentEmulator=true`,
    amqpPort: r.port,
    httpPort: r.httpPort,
    tlsPort: r.tlsPort,
    host: r.host,
    dataDir: b.dataDir,
    now: () => new Date(clock.now()),
    messageHistory: (entity, seq) => r.broker.messageHistory(entity, typeof seq === 'object' ? seq.toNumber() : Number(seq)),
    advance: async (ms) => {
      if (!(clock instanceof ManualClock)) {
        throw new Error('The broker clock is not manual; start the broker with startBroker({ clock: "manual" }).');
      }
      return new Date(await clock.advance(ms));
    },
    faults: {
      failSends: (fail, o = {}) => faults().addSendFault({ count: o.count ?? 1, fail, ...(o.entity ? { entity: o.entity } : {}) }),
      delaySends: (delayMs, o = {}) => faults().addSendFault({ count: o.count ?? 1, delayMs, ...(o.entity ? { entity: o.entity } : {}) }),
      expireLock: (token) => {
        faults();
        r.namespaces.expireLock(token);
      },
      dropConnections: async (entity) => {
        faults();
        return r.dropConnections(entity);
      },
      slowManagement: (ms) => faults().setManagementDelay(ms),
      clear: () => faults().clear(),
    },
    createQueue: (name, props = {}) => r.broker.createQueue(name, props),
    deleteQueue: (name) => r.broker.deleteQueue(name),
    createNamespace: async (name, o = {}) => {
      const item: Record<string, unknown> = {
        Name: name,
        Queues: (o.queues ?? []).map((q) => (typeof q === 'string' ? { Name: q } : q)),
        Topics: o.topics ?? [],
        ...(o.policies ? { SharedAccessPolicies: o.policies } : {}),
      };
      const ns = await r.namespaces.createFrom(item);
      return { name: ns.name, connectionString: r.namespaces.connectionString(ns, r.host, r.port) };
    },
    deleteNamespace: (name) => r.namespaces.delete(name),
    stop: () =>
      (stopping ??= (async () => {
        await r.close();
        if (tempDir) fs.rmSync(tempDir, { recursive: true, force: true });
      })()),
  };
}

function readConfig(c: StartBrokerOptions['config']): PeeklockConfig {
  if (typeof c === 'string') return loadConfig(c);
  const raw = c ?? { UserConfig: { Namespaces: [{ Name: 'sbemulatorns', Queues: [], Topics: [] }], Logging: { Type: 'Console' } } };
  return parseConfig(JSON.stringify(raw), SOURCE);
}
