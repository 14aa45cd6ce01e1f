// The composition root: store → broker → AMQP listener → HTTP listener, and the order they stop in (the
// listeners first, so no admin request reaches a stopping broker). Everything a test or the CLI needs to run
// a broker in-process goes through `startPeeklock`.

import path from 'node:path';
import { Broker } from '../broker/broker.js';
import { SystemClock, type Clock } from '../broker/clock.js';
import { effectiveHttpPort, effectiveTlsPort } from '../config/load.js';
import type { PeeklockConfig } from '../config/types.js';
import { HttpServer } from '../http/server.js';
import { createLogger, type Logger } from '../log/logger.js';
import { AmqpServer } from '../amqp/server.js';
import { AmqpWebSocketEndpoint } from '../amqp/websocket.js';
import { messageDetail, messageView, storedAppProperties } from '../amqp/message-view.js';
import { composeMessage, reparseStored } from '../amqp/compose.js';
import { asListenError } from './errors.js';
import { tlsCredentials, type TlsCredentials } from './tls.js';
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
  /** Where the amqps certificate came from (the local CA's files, or the configured ones); null when TLS is off. */
  tls: TlsCredentials | null;
  http: HttpServer;
  broker: Broker;
  store: Store;
  log: Logger;
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
  const store = opts.store ?? (await openLmdb(path.resolve(config.broker.dataDir)));
  await store.open();
  const broker = new Broker({ config, store, clock: opts.clock ?? new SystemClock(), log, onFatal: opts.onFatal });
  try {
    await broker.start();
  } catch (err) {
    await store.close();
    throw err;
  }
  const amqp = new AmqpServer({
    host: config.broker.host,
    port: config.broker.port,
    broker,
    log,
    policies: config.broker.policies,
    limits: config.broker.limits,
  });
  let bound: { host: string; port: number };
  try {
    bound = await amqp.listen();
  } catch (err) {
    await broker.stop();
    await store.close();
    throw asListenError(err, 'amqp', config.broker.host, config.broker.port);
  }
  const tlsPort = effectiveTlsPort(config.broker);
  let tls: TlsCredentials | null = null;
  let tlsBound: number | null = null;
  if (tlsPort !== -1) {
    try {
      tls = tlsCredentials(config.broker);
      tlsBound = await amqp.listenTls(tlsPort, tls, Math.min(10_000, config.broker.limits.authTimeoutMs));
    } catch (err) {
      await amqp.close();
      await broker.stop();
      await store.close();
      throw asListenError(err, 'amqps', config.broker.host, tlsPort);
    }
    // The CA's path helps whoever must trust it; never the keys.
    log.info({ tlsPort: tlsBound, ca: tls.caCertPath, certFile: tls.certFile, issued: tls.issued }, 'amqps listening');
  }
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
      compose: composeMessage,
      reparse: reparseStored,
    },
    // AMQP over WebSockets rides on the HTTP port, as Service Bus's rides on 443 (src/amqp/websocket.ts).
    upgrade: (req, socket, head) => websocket.handleUpgrade(req, socket, head),
    outbound: () => amqp.outboundStats(),
  });
  let httpBound: { port: number };
  try {
    httpBound = await http.listen();
  } catch (err) {
    await amqp.close();
    await broker.stop();
    await store.close();
    throw asListenError(err, 'http', config.broker.host, httpPort);
  }
  log.info({ host: config.broker.host, httpPort: httpBound.port }, 'http listening');
  let closing: Promise<void> | null = null;
  return {
    ...bound,
    httpPort: httpBound.port,
    tlsPort: tlsBound,
    get tls() {
      return tls;
    },
    reloadTls: () => {
      if (tlsBound === null) return;
      try {
        tls = tlsCredentials(config.broker);
        amqp.setTlsCredentials(tls);
        log.info({ certFile: tls.certFile, ca: tls.caCertPath, issued: tls.issued }, 'tls certificate reloaded');
      } catch (err) {
        log.warn({ reason: (err as Error).message }, 'tls certificate not reloaded; the previous one stays');
      }
    },
    http,
    broker,
    store,
    log,
    close: () =>
      (closing ??= (async () => {
        // Together: the HTTP server's close waits for its upgraded sockets, which amqp.close() ends
        // (connection:forced, as on TCP). The broker still stops only after both.
        await Promise.all([http.close(), amqp.close()]);
        await broker.stop();
        await store.close();
      })()),
  };
}

// Loaded on demand so that in-memory runs (unit and protocol tests) never load the native module.
async function openLmdb(dir: string): Promise<Store> {
  const { LmdbStore } = await import('../store/lmdb/lmdb-store.js');
  return new LmdbStore({ path: dir });
}
