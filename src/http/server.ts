// The HTTP listener on its own port (default 5300, as the emulator's): GET /health, GET /metrics
// (Prometheus), the admin JSON API under /api, the explorer page at /, and the Service Bus management plane
// (Atom; any request with an `api-version` query parameter or a `$` first segment, see atom-api.ts). It is started after the broker
// and closed before it, so the admin API never reaches a stopped broker.

import http from 'node:http';
import type net from 'node:net';
import type { HttpPort } from '../broker/ports.js';
import { SystemClock } from '../broker/runtime/clock.js';
import type { PeeklockConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { handleAtom, isAtomRequest, type AtomContext } from './atom-api.js';
import { brokerFailure, handleAdmin, type AdminContext, type MessageReader } from './admin-api.js';
import { DeadLetterAlerter } from './alerts.js';
import { handleExplorer, isExplorerRoute } from './explorer-api.js';
import { handleMessageAction, isMessageActionRoute, type MessageAction } from './message-actions-api.js';
import { loadExplorer, type ExplorerAssets } from './explorer-assets.js';
import { History } from './history.js';
import { handleTesting, isTestingRoute, type TestingHooks } from './testing-api.js';
import { handleNamespaces, isNamespaceRoute, type NamespaceHooks } from './namespaces-api.js';
import { HttpError, sendError, sendJson } from './http-util.js';
import { Metrics, type OutboundReader } from './metrics.js';
import { RequestGuard } from './request-guard.js';
import { securityHeaders } from './security-headers.js';

/** What the HTTP server needs. */
export interface HttpServerOptions {
  host: string;
  port: number;
  broker: HttpPort;
  config: PeeklockConfig;
  log: Logger;
  /** Reads stored messages for browse and redrive (the AMQP layer's reader). */
  messages: MessageReader;
  /** Dead-letter depth re-check period (tests shorten it). */
  alertCheckMs?: number;
  /**
   * Takes every HTTP upgrade request (AMQP over WebSockets, given by the composition root); the socket is
   * then no longer the HTTP server's. Without it an upgrade is refused with 404.
   */
  upgrade?: (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => void;
  /** The manual clock and fault injection routes, when the broker has them (testing-api.ts). */
  testing?: TestingHooks;
  /** The AMQP layer's outgoing buffering, for the metrics. */
  outbound?: OutboundReader;
  /** The broker's namespaces (namespaces-api.ts); absent = `broker` is the only one. */
  namespaces?: NamespaceHooks;
  /** How many AMQP connections are open: they share Broker.MaxConnections with the HTTP sockets. */
  otherConnections?: () => number;
}

/** Longest wait in `close()` for requests in progress before their sockets are cut. */
const CLOSE_GRACE_MS = 2000;
/** `Broker.HttpRequestTimeout` when unset: a request's headers and body must have arrived within this. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Health, metrics, the admin API and the explorer page. */
export class HttpServer {
  readonly alerter: DeadLetterAlerter;
  readonly metrics: Metrics;
  /** The last hour of depths and rates the explorer charts. */
  readonly history: History;
  private readonly server: http.Server;
  private readonly admin: AdminContext;
  private readonly atom: AtomContext;
  /** Admin contexts of the other namespaces, made on first use. */
  private readonly nsAdmin = new WeakMap<HttpPort, AdminContext>();
  private closing = false;
  private readonly guard: RequestGuard;
  /** The built explorer page and its script and stylesheet (explorer-assets.ts). */
  private readonly explorer: ExplorerAssets;
  /** Open sockets and how many requests each has in progress. */
  private readonly sockets = new Map<net.Socket, number>();
  /** Sockets accepted over Broker.MaxConnections: their requests get 503 (an upgrade goes on to the AMQP cap). */
  private readonly overCap = new WeakSet<net.Socket>();

  constructor(private readonly opts: HttpServerOptions) {
    const { broker, config, log } = opts;
    this.alerter = new DeadLetterAlerter(broker, config.broker.deadLetterAlerts, log);
    this.metrics = new Metrics(broker, this.alerter, opts.outbound);
    this.history = new History({ counts: () => broker.listEntities(), events: broker.events }, new SystemClock());
    this.admin = {
      broker,
      messages: opts.messages,
      policies: config.broker.policies,
      metrics: this.metrics,
      alerter: this.alerter,
      log,
      redrives: new Set(),
    };
    this.atom = { broker, policies: config.broker.policies, namespace: config.namespace, startedAt: Date.now(), log };
    this.guard = new RequestGuard(config.broker);
    this.explorer = loadExplorer();
    if (!this.explorer.page) log.warn('the explorer page is not built (npm run build makes dist/explorer): / answers 503');
    // Headers are checked against headersTimeout once a second (Node's default is every 30 s).
    this.server = http.createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => {
      const socket = req.socket;
      if (this.overCap.has(socket)) return refuseOverCap(res, config.broker.limits.maxConnections);
      this.sockets.set(socket, (this.sockets.get(socket) ?? 0) + 1);
      res.once('close', () => this.sockets.has(socket) && this.sockets.set(socket, this.sockets.get(socket)! - 1));
      void this.handle(req, res);
    });
    this.server.on('connection', (socket: net.Socket) => {
      this.sockets.set(socket, 0);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      this.sockets.delete(socket);
      socket.on('error', () => undefined);
      try {
        this.guard.check(req, true);
      } catch (err) {
        log.info({ host: req.headers.host, origin: req.headers.origin, remote: socket.remoteAddress }, 'websocket upgrade refused: host or origin');
        const body = `${(err as Error).message}\n`;
        return void socket.end(`HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      }
      if (opts.upgrade && !this.closing) return opts.upgrade(req, socket, head);
      socket.end(`HTTP/1.1 ${this.closing ? '503 Service Unavailable' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    });
    // Slow or idle clients must not hold a socket (or the shutdown) for long.
    // An upgrade to AMQP over WebSockets that never completes gets no longer than an AMQP connection gets to
    // authenticate (Broker.AuthTimeout).
    // requestTimeout bounds the arrival of a request (headers and body), not its answer: a streamed redrive's
    // response may still run for minutes. Past it Node answers 408 and closes the socket.
    const requestTimeout = config.broker.httpRequestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.server.requestTimeout = requestTimeout;
    this.server.headersTimeout = Math.min(10_000, config.broker.limits.authTimeoutMs, requestTimeout);
    this.server.keepAliveTimeout = 5_000;
  }

  /** Open HTTP sockets (keep-alive ones included, upgraded ones not): they count against Broker.MaxConnections. */
  get served(): number {
    return this.sockets.size;
  }

  /** Starts listening on its own port; resolves with the bound address (port 0 picks a free port). */
  listen(): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port, this.opts.host, () => {
        this.server.off('error', reject);
        this.alerter.start(this.opts.alertCheckMs);
        this.history.start();
        const a = this.server.address() as net.AddressInfo;
        resolve({ host: a.address, port: a.port });
      });
    });
  }

  /** Starts the alerter and the history without binding a port (sockets then come through `accept`). */
  start(): void {
    // Node checks headersTimeout on a timer it starts on 'listening'; a server fed by `accept` never binds,
    // so start that timer the same way (close() stops it), or a stalled request would hold its socket.
    if (!this.server.listening) this.server.emit('listening');
    this.alerter.start(this.opts.alertCheckMs);
    this.history.start();
  }

  /**
   * Serves HTTP on a socket accepted elsewhere (the broker's connection dispatcher: plain, or decrypted TLS for
   * HTTPS); bytes already read and pushed back are parsed first.
   */
  accept(socket: net.Socket): void {
    if (this.closing) return void socket.destroy();
    // Counted until it closes, keep-alive included: an HTTP socket holds memory like an AMQP connection does.
    if (this.sockets.size + (this.opts.otherConnections?.() ?? 0) >= this.opts.config.broker.limits.maxConnections) this.overCap.add(socket);
    this.server.emit('connection', socket);
    socket.resume();
  }

  /** Reports unhealthy, stops redrives between two moves, stops accepting and closes connections. */
  async close(): Promise<void> {
    this.closing = true;
    for (const abort of this.admin.redrives) abort();
    this.alerter.stop();
    this.metrics.close();
    this.history.stop();
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    // Sockets without a request in progress (keep-alive, or opened ahead by a browser) go at once;
    // Node's closeIdleConnections() leaves the ones that never sent a request.
    for (const [socket, active] of this.sockets) if (active === 0) socket.destroy();
    const cut = setTimeout(() => {
      this.server.closeAllConnections();
      for (const socket of this.sockets.keys()) socket.destroy();
    }, CLOSE_GRACE_MS);
    await closed;
    // Sockets handed in by `accept` are not counted by the server's close: wait for them too.
    while (this.sockets.size) await new Promise((r) => setTimeout(r, 20));
    clearTimeout(cut);
  }

  /** 200 once every configured queue exists in the broker and it is not shutting down; else 503. */
  health(): { status: number; body: Record<string, unknown> } {
    if (this.closing) return { status: 503, body: { status: 'unavailable', reason: 'shutting down' } };
    const have = new Set(this.opts.broker.listEntities().map((e) => e.path.toLowerCase()));
    // A configured queue deleted through the management plane is gone on purpose, not "not created yet".
    const missing = this.opts.config.queues
      .filter((q) => !have.has(q.name.toLowerCase()) && !this.opts.broker.wasDeleted(q.name))
      .map((q) => q.name);
    if (missing.length)
      return { status: 503, body: { status: 'unavailable', reason: 'entities not created yet', missing } };
    return { status: 200, body: { status: 'ok', entities: have.size } };
  }

  // The management plane of the namespace the request is for (namespaces-api.ts: by Host, else by key name), so
  // each namespace's admin client sees its own entities only.
  private async atomFor(req: http.IncomingMessage): Promise<AtomContext> {
    const ns = this.opts.namespaces ? await this.opts.namespaces.forRequest(req.headers.host, req.headers.authorization) : null;
    return ns ? { ...this.atom, broker: ns.broker, policies: ns.policies, namespace: ns.name } : this.atom;
  }

  // The admin JSON API of the namespace the Host header names (its own keys), else the default one's. The
  // explorer page, its history and /metrics stay the default namespace's.
  private async adminFor(req: http.IncomingMessage): Promise<AdminContext> {
    const ns = this.opts.namespaces ? await this.opts.namespaces.forRequest(req.headers.host, undefined) : null;
    if (!ns || ns.broker === this.opts.broker) return this.admin;
    let ctx = this.nsAdmin.get(ns.broker);
    if (!ctx) {
      const alerter = new DeadLetterAlerter(ns.broker, this.opts.config.broker.deadLetterAlerts, this.opts.log.child({ namespace: ns.name }));
      this.nsAdmin.set(ns.broker, (ctx = { ...this.admin, broker: ns.broker, policies: ns.policies, alerter }));
    }
    return ctx;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let url: URL;
    let parts: string[];
    for (const [name, value] of Object.entries(securityHeaders(req.url ?? '/'))) res.setHeader(name, value);
    try {
      this.guard.check(req, false);
      url = new URL(req.url ?? '/', 'http://localhost');
      if (isAtomRequest(url)) return await handleAtom(req, res, url, await this.atomFor(req));
      parts = url.pathname
        .split('/')
        .filter(Boolean)
        .map((p) => decodeSegment(p));
    } catch (err) {
      return sendError(
        res,
        err instanceof HttpError ? err : new HttpError(400, 'BadRequest', 'The request URL is malformed.'),
      );
    }
    try {
      if (parts[0] === 'api' && isExplorerRoute(parts.slice(1)))
        return handleExplorer(req, res, url, parts.slice(1), this.admin, {
          history: this.history,
          namespace: this.opts.config.namespace,
        });
      if (parts[0] === 'api' && isMessageActionRoute(parts.slice(1)))
        return await handleMessageAction(req, res, parts[2]!, parts[3] as MessageAction, await this.adminFor(req));
      if (parts[0] === 'api' && isNamespaceRoute(parts.slice(1)))
        return await handleNamespaces(req, res, parts.slice(1), this.admin.policies, this.opts.namespaces);
      if (parts[0] === 'api' && isTestingRoute(parts.slice(1)))
        return await handleTesting(req, res, parts.slice(1), this.admin.policies, this.opts.testing ?? {});
      if (parts[0] === 'api') return await handleAdmin(req, res, url, parts.slice(1), await this.adminFor(req));
      if (req.method !== 'GET' && req.method !== 'HEAD')
        throw new HttpError(405, 'MethodNotAllowed', `${url.pathname} takes GET.`);
      if (url.pathname === '/health') {
        const h = this.health();
        return sendJson(res, h.status, h.body);
      }
      if (url.pathname === '/metrics') {
        const text = await this.metrics.render();
        res.writeHead(200, { 'content-type': this.metrics.contentType, 'cache-control': 'no-store' });
        return void res.end(text);
      }
      if (url.pathname === '/' || url.pathname === '/index.html') {
        const page = this.explorer.page;
        if (!page) throw new HttpError(503, 'ServiceUnavailable', 'The explorer page is not built: run npm run build.');
        res.writeHead(200, page.headers);
        return void res.end(page.body);
      }
      const asset = this.explorer.assets.get(url.pathname);
      if (asset) {
        res.writeHead(200, asset.headers);
        return void res.end(asset.body);
      }
      throw new HttpError(404, 'NotFound', `Nothing at ${url.pathname}; try /health, /metrics, /api/entities or /.`);
    } catch (err) {
      const e = err instanceof HttpError ? err : brokerFailure(err);
      if (!e) this.opts.log.error({ err, method: req.method, path: url.pathname }, 'http request failed');
      if (res.headersSent) return void res.end();
      sendError(res, e ?? new HttpError(500, 'Internal', 'Internal error; see the broker log.'));
    }
  }
}

// One over the cap is told why, as an AMQP client is (resource-limit-exceeded), and its socket closed.
function refuseOverCap(res: http.ServerResponse, max: number): void {
  res.shouldKeepAlive = false;
  sendError(res, new HttpError(503, 'ServerBusy', `The broker serves at most ${max} connections (Broker.MaxConnections); try again later.`));
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpError(400, 'BadRequest', `The path segment '${s}' is not correctly URL-encoded.`);
  }
}
