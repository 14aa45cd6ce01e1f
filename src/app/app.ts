// The composition root: store → broker → AMQP and HTTP servers → the ports (one connection dispatcher for all,
// dispatcher.ts), and the order they stop in (the ports first, so no admin request reaches a stopping broker). Everything a test or the CLI needs to run
// a broker in-process goes through `startPeeklock`.

import path from 'node:path';
import { Broker } from '../broker/broker.js';
import { ManualClock, SystemClock, type Clock } from '../broker/runtime/clock.js';
import { Faults } from '../broker/runtime/faults.js';
import { effectiveHttpPort, effectiveTlsPort } from '../config/load.js';
import type { PeeklockConfig } from '../config/types.js';
import { HttpServer } from '../http/server.js';
import { createLogger, type Logger } from '../log/logger.js';
import { AmqpServer } from '../amqp/server.js';
import { AmqpWebSocketEndpoint } from '../amqp/websocket.js';
import { filterFields, messageDetail, messageView, storedAppProperties } from '../amqp/message-view.js';
import { composeMessage, reparseStored } from '../amqp/compose.js';
import { ConnectionDispatcher } from './connection-dispatcher.js';
import { Namespaces, type Namespace } from './namespaces.js';
import { asListenError } from './errors.js';
import { tlsCredentials, type TlsCredentials } from './tls.js';
import { defaultKeyWarning } from './exposure.js';
import type { Store } from '../store/store.js';

/** Options for starting a broker; the store defaults to LMDB in `config.broker.dataDir`. */
export interface StartOptions {
  config: PeeklockConfig;
  store?: Store;
  clock?: Clock;
  log?: Logger;
  /** Called when the store fails for good; the CLI exits so a supervisor can restart it. */
  onFatal?: (err: Error) => void;
}

/** A running broker. */
export interface RunningBroker {
  host: string;
  port: number;
  /** The bound HTTP port (health, metrics, admin API, explorer). */
  httpPort: number;
  /** The bound amqps port, or null when TLS is off. */
  tlsPort: number | null;
  /** The bound dedicated HTTPS/wss port (`Broker.HttpsPort`), or null when not configured. */
  httpsPort: number | null;
  /** Where the amqps certificate came from (the local CA's files, or the configured ones); null when TLS is off. */
  tls: TlsCredentials | null;
  http: HttpServer;
  broker: Broker;
  store: Store;
  log: Logger;
  /** The broker's clock: a `ManualClock` when `Broker.Clock` is "manual" (or one was passed in). */
  clock: Clock;
  /** Every namespace served; `broker` above is the default (first) one's. */
  namespaces: Namespaces;
  /** The armed faults when `Broker.Faults` is true, else null. */
  faults: Faults | null;
  /** Closes every AMQP connection with a link to `entity` (or under it); resolves with how many once closed. */
  dropConnections(entity: string): Promise<number>;
  /** The per-link records the AMQP connections hold now (reply, `$cbs` and delivery links): a leak shows here. */
  amqpRecords(): ReturnType<AmqpServer['linkRecords']>;
  /**
   * Reads the TLS certificate again (a renewed `Broker.Tls.CertFile`, or a local CA certificate near expiry)
   * for new connections; on failure the old one stays and the reason is logged. The CLI calls it on SIGHUP.
   */
  reloadTls(): void;
  /** Graceful stop: stop accepting, close connections, let in-flight commits finish, close the store. */
  close(): Promise<void>;
}

/** Opens the store, recovers state, and starts listening. */
export async function startPeeklock(opts: StartOptions): Promise<RunningBroker> {
  const { config } = opts;
  const log = opts.log ?? createLogger(config.broker.logLevel);
  const openStore = (dir: string): Promise<Store> => openLmdb(dir, config.broker.logMaxBytes);
  const store = opts.store ?? (await openStore(path.resolve(config.broker.dataDir)));
  await store.open();
  // The manual clock is opt-in only (Broker.Clock): a broker's time must never move unless a test asked for it.
  const clock = opts.clock ?? (config.broker.clock === 'manual' ? new ManualClock() : new SystemClock());
  const broker = new Broker({ config, store, clock, log, onFatal: opts.onFatal });
  const faults = config.broker.faults ? new Faults() : null;
  const namespaces = new Namespaces({
    config,
    clock,
    log,
    fallback: { broker, store },
    ...(opts.store ? {} : { openStore }),
    ...(opts.onFatal ? { onFatal: opts.onFatal } : {}),
  });
  // Time moves for every namespace at once; an advance waits until all of them have caught up.
  if (clock instanceof ManualClock) clock.settle = () => namespaces.settled();
  try {
    await broker.start();
  } catch (err) {
    await store.close();
    throw err;
  }
  try {
    await namespaces.start();
  } catch (err) {
    await namespaces.stop();
    await broker.stop();
    await store.close();
    throw err;
  }
  // HTTP and AMQP sockets share one count against Broker.MaxConnections: each server adds the other's when it
  // decides whether a new socket is over the cap (`http` is built below, before any socket arrives).
  const amqp = new AmqpServer({
    tenants: namespaces,
    log,
    limits: config.broker.limits,
    clock,
    otherConnections: (): number => http.served,
    ...(faults ? { faults } : {}),
  });
  namespaces.onDelete = (name) => amqp.dropNamespaceConnections(name);
  // Connection strings handed out by the namespace routes name the bound AMQP port (known once listening).
  let amqpAddress = { host: config.broker.host, port: config.broker.port };
  const connectionString = (ns: Namespace): string => {
    const host = ['0.0.0.0', '::', ''].includes(amqpAddress.host) ? 'localhost' : amqpAddress.host;
    return namespaces.connectionString(ns, host.includes(':') ? `[${host}]` : host, amqpAddress.port);
  };
  const websocket = new AmqpWebSocketEndpoint({ accept: (s) => amqp.acceptStream(s), limits: config.broker.limits, log });
  const httpPort = effectiveHttpPort(config.broker);
  const http = new HttpServer({
    host: config.broker.host,
    port: httpPort,
    broker,
    config,
    log,
    messages: {
      view: messageView,
      detail: messageDetail,
      appProperties: storedAppProperties,
      filterFields,
      compose: composeMessage,
      reparse: reparseStored,
    },
    // AMQP over WebSockets rides on HTTP(S), as Service Bus's rides on 443 (src/amqp/websocket.ts).
    upgrade: (req, socket, head) => websocket.handleUpgrade(req, socket, head),
    namespaces: {
      forRequest: (host, authorization) => namespaces.forRequest(host, authorization),
      list: () => namespaces.list().map((ns) => ({ name: ns.name, connectionString: connectionString(ns) })),
      create: async (item) => {
        const ns = await namespaces.createFrom(item);
        return { name: ns.name, connectionString: connectionString(ns) };
      },
      delete: (name) => namespaces.delete(name),
    },
    testing: {
      ...(clock instanceof ManualClock ? { advance: (ms: number) => clock.advance(ms) } : {}),
      ...(faults
        ? { faults: { faults, expireLock: (t: string) => namespaces.expireLock(t), dropConnections: (e: string) => amqp.dropEntityConnections(e) } }
        : {}),
    },
    outbound: () => amqp.outboundStats(),
    otherConnections: () => amqp.served,
  });
  const tlsPort = effectiveTlsPort(config.broker);
  const httpsPort = config.broker.httpsPort ?? -1;
  let tls: TlsCredentials | null = null;
  // TLS (amqps, HTTPS, wss) is served on every port once it is on: Broker.TlsPort -1 turns it off everywhere.
  if (tlsPort !== -1 || httpsPort !== -1) {
    try {
      tls = tlsCredentials(config.broker);
    } catch (err) {
      await Promise.all([amqp.close(), http.close()]);
      await namespaces.stop();
      await broker.stop();
      await store.close();
      throw err;
    }
  }
  const dispatcher = new ConnectionDispatcher({
    host: config.broker.host,
    limits: config.broker.limits,
    log,
    amqp: (s) => amqp.acceptStream(s),
    http: (s) => http.accept(s),
    served: () => amqp.served + http.served,
    credentials: tls,
    handshakeTimeoutMs: Math.min(10_000, config.broker.limits.authTimeoutMs),
  });
  const failed = async (err: unknown, name: Parameters<typeof asListenError>[1], port: number): Promise<never> => {
    await Promise.all([dispatcher.stop(), amqp.close(), http.close()]);
    await namespaces.stop();
    await broker.stop();
    await store.close();
    throw asListenError(err, name, config.broker.host, port);
  };
  let bound: { host: string; port: number };
  let tlsBound: number | null = null;
  let httpsBound: number | null = null;
  let httpBound: { port: number };
  try {
    bound = await dispatcher.listen(config.broker.port, { name: 'amqp', fallback: 'amqp' });
  } catch (err) {
    return failed(err, 'amqp', config.broker.port);
  }
  amqpAddress = bound;
  if (tlsPort !== -1) {
    try {
      tlsBound = (await dispatcher.listen(tlsPort, { name: 'amqps', tlsOnly: true, fallback: 'amqp' })).port;
    } catch (err) {
      return failed(err, 'amqps', tlsPort);
    }
    // The CA's path helps whoever must trust it; never the keys.
    log.info({ tlsPort: tlsBound, ca: tls!.caCertPath, certFile: tls!.certFile, issued: tls!.issued }, 'amqps listening');
  }
  try {
    httpBound = await dispatcher.listen(httpPort, { name: 'http', fallback: 'http' });
  } catch (err) {
    return failed(err, 'http', httpPort);
  }
  if (httpsPort !== -1) {
    try {
      httpsBound = (await dispatcher.listen(httpsPort, { name: 'https', tlsOnly: true, fallback: 'http' })).port;
    } catch (err) {
      return failed(err, 'https', httpsPort);
    }
  }
  http.start();
  log.info({ host: config.broker.host, httpPort: httpBound.port, httpsPort: httpsBound ?? undefined }, 'http listening');
  const exposed = defaultKeyWarning(config);
  if (exposed) log.warn({ host: config.broker.host }, exposed);
  let closing: Promise<void> | null = null;
  return {
    ...bound,
    httpPort: httpBound.port,
    tlsPort: tlsBound,
    httpsPort: httpsBound,
    get tls() {
      return tls;
    },
    reloadTls: () => {
      if (tls === null) return;
      try {
        tls = tlsCredentials(config.broker);
        dispatcher.setTlsCredentials(tls);
        log.info({ certFile: tls.certFile, ca: tls.caCertPath, issued: tls.issued }, 'tls certificate reloaded');
      } catch (err) {
        log.warn({ reason: (err as Error).message }, 'tls certificate not reloaded; the previous one stays');
      }
    },
    http,
    broker,
    store,
    log,
    clock,
    namespaces,
    faults,
    dropConnections: (entity) => amqp.dropEntityConnections(entity),
    amqpRecords: () => amqp.linkRecords(),
    close: () =>
      (closing ??= (async () => {
        // Together: the ports close once the sockets the HTTP and AMQP servers hold are gone, and the HTTP
        // server's close waits for upgraded sockets, which amqp.close() ends (connection:forced, as on TCP).
        // The broker still stops only after all three.
        await Promise.all([dispatcher.stop(), http.close(), amqp.close()]);
        await namespaces.stop();
        await broker.stop();
        await store.close();
      })()),
  };
}

// Loaded on demand so that in-memory runs (unit and protocol tests) never load the native module. A data directory
// gets the write-ahead log with LMDB behind it (docs/durability.md, "The write-ahead log").
// Broker.LogMaxBytes, when set, bounds the log and sizes its segments (a quarter of the bound each).
async function openLmdb(dir: string, logMaxBytes?: number): Promise<Store> {
  const { LoggedStore } = await import('../store/log/logged-store.js');
  const { logOptions } = await import('../store/log/wal.js');
  return new LoggedStore({ path: dir, ...(logMaxBytes === undefined ? {} : { log: logOptions(logMaxBytes) }) });
}
