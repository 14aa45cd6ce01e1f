// The AMQP server: owns one rhea container per broker (sockets come from the app's connection dispatcher) (not rhea's
// process-wide singleton) and the life of each connection — accept, state, open, drop, close — and routes every
// attach, by one table, to the endpoint of the node it addresses (endpoint.ts): the coordinator, `$cbs`, an
// entity's `$management` node, or the entity itself. The endpoint that took a link serves its transfers and its
// detach. The SDK opens one AMQP session per link and puts all of them on one connection (docs/wire-contract.md,
// "Connection and SASL" to "Attach errors").

import type { Duplex } from 'node:stream';
import rhea, { offerMssbcbs, onPlainLogin, plainLoginOf } from './rhea.js';
import { messageTooLarge, BrokerError } from '../broker/errors.js';
import type { Logger } from '../log/logger.js';
import { toAmqpError } from './conditions.js';
import { ConnectionAuth } from './auth.js';
import type { ConnectionLimits } from '../config/types.js';
import { bindPlain, cbsEndpoint, plainLogin, type PlainLogin } from './cbs.js';
import { tenantForHost, type ConnState } from './connection-state.js';
import { Admission } from './admission.js';
import { SystemClock, type Clock } from '../broker/runtime/clock.js';
import { tenantKeys, type TenantDirectory } from './tenant.js';
import type { Faults } from '../broker/runtime/faults.js';
import { DEFAULT_BROKER } from '../config/defaults.js';
import { channelMaxFor, installFrameGuard } from './guard-socket.js';
import { forceClose, linksTo } from './force-close.js';
import { batchWrites, OutboundGate, setGate, type OutboundStats } from './output.js';
import { entityAddress } from './address.js';
import { peekLinkState } from './link-state.js';
import { patchRhea, RHEA_LOG, type RheaLog } from './rhea-patches.js';
import { installTransactionTypes, TRANSACTIONAL_EVENT } from './transaction-types.js';
import { coordinatorEndpoint, rollbackConnection } from './coordinator.js';
import { managementEndpoint } from './management-link.js';
import { entitySenderEndpoint } from './entity-sender.js';
import { entityReceiverEndpoint, onTransactionalOutcome } from './entity-receiver.js';
import { refuseAttach, type ClientLink, type Endpoint, type EndpointEnv } from './endpoint.js';
import { OVERSIZED, amqpMessage, type RheaConnection, type RheaContext, type RheaLink } from './rhea-types.js';

/** Connections past the cap that are refused politely at once; beyond these, sockets are dropped. */
export const REFUSALS_IN_FLIGHT = 64;

/** What the AMQP server serves with. */
export interface AmqpServerOptions {
  /** The namespaces served (tenant.ts): each connection works in one, with its broker and keys. */
  tenants: TenantDirectory;
  log: Logger;
  /** Connection, link, frame and buffering limits (default: the config defaults). */
  limits?: ConnectionLimits;
  /** Injected faults (`Broker.Faults`), asked before each send and `$management` request; absent = none. */
  faults?: Faults;
  /** The broker clock, which SAS token expiry is read against (default: the system clock). */
  clock?: Clock;
  /**
   * Sockets served by the rest of the broker (the HTTP server's), counted with this server's against
   * Broker.MaxConnections: HTTP and AMQP share one cap (default: none).
   */
  otherConnections?: () => number;
}

/**
 * The nodes a client attaches to, in the order an attach is matched: the first endpoint that matches serves the link.
 * The coordinator is told by its terminus, `$cbs` and `$management` by their addresses; every other sender or
 * receiver is an entity's.
 */
const ENDPOINTS: readonly Endpoint[] = [coordinatorEndpoint, cbsEndpoint, managementEndpoint, entitySenderEndpoint, entityReceiverEndpoint];

/** The AMQP 1.0 endpoint of the broker. */
export class AmqpServer {
  private readonly container = rhea.create_container({ id: 'peeklock' });
  private readonly conns = new Map<RheaConnection, ConnState>();
  private readonly sockets = new Set<Duplex>();
  /** The socket under each connection (to end it after a dropped connection's close frame). */
  private readonly socketOf = new WeakMap<RheaConnection, Duplex>();
  /** Each connection's outgoing budget (output.ts), and the largest any one has held. */
  private readonly gates = new Set<OutboundGate>();
  private readonly outbound = { peakConnectionBytes: 0 };
  private nextConn = 0;
  private readonly limits: ConnectionLimits;
  /** The endpoint that took each link (it serves the link's transfers and its detach). */
  private readonly endpointOf = new WeakMap<RheaLink, Endpoint>();
  /** What every endpoint is lent. */
  private readonly env: EndpointEnv;
  private readonly clock: Clock;

  constructor(private readonly opts: AmqpServerOptions) {
    this.limits = opts.limits ?? DEFAULT_BROKER.limits;
    this.clock = opts.clock ?? new SystemClock();
    this.env = { log: opts.log, faults: opts.faults, tenants: opts.tenants };
    patchRhea();
    // Before any frame is read: a coordinator attach or a transactional disposition must decode as such.
    installTransactionTypes();
    // The SDK uses SASL ANONYMOUS and then a token on $cbs (docs/wire-contract.md, "Connection and SASL"); JMS and
    // Proton clients log in with SASL PLAIN, user name = policy name, password = key, as Service Bus allows.
    this.container.sasl_server_mechanisms.enable_anonymous();
    offerMssbcbs(this.container.sasl_server_mechanisms);
    // The login is checked in one namespace and the connection is then bound to it (onOpen).
    onPlainLogin(this.container.sasl_server_mechanisms, (user, password, hostname) => plainLogin(opts.tenants, user, password, hostname));
    this.wire();
  }

  /** How many connections are being served now (the dispatcher counts them against the cap). */
  get served(): number {
    return this.sockets.size;
  }

  /** Closes every connection with `amqp:connection:forced` and waits for the sockets. */
  async close(): Promise<void> {
    for (const conn of this.conns.keys()) {
      try {
        conn.close({ condition: 'amqp:connection:forced', description: 'The broker is shutting down.' });
      } catch {
        /* already closing */
      }
    }
    const deadline = Date.now() + 2000;
    while (this.sockets.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const s of this.sockets) s.destroy();
  }

  /** Bytes of outgoing deliveries the connections hold now, and the most one has held (for the metrics). */
  outboundStats(): OutboundStats {
    let bufferedBytes = 0;
    for (const g of this.gates) bufferedBytes += g.buffered();
    return { bufferedBytes, peakConnectionBytes: this.outbound.peakConnectionBytes };
  }

  /**
   * Closes, with `amqp:connection:forced`, every connection that has a link to `entity` or to a path under it (its
   * dead-letter queue, a topic's subscriptions): fault injection, as a gateway restart does it to clients. Resolves
   * with how many, once their sockets are closed.
   */
  async dropEntityConnections(entity: string): Promise<number> {
    return this.dropWhere('The connection was dropped (injected fault).', (conn) => linksTo(conn, entity));
  }

  /** Closes, with `amqp:connection:forced`, every connection working in namespace `name` (it is being deleted). */
  async dropNamespaceConnections(name: string): Promise<number> {
    const n = name.toLowerCase();
    return this.dropWhere(`The namespace '${name}' was deleted.`, (_, st) => st.tenant.name.toLowerCase() === n);
  }

  private async dropWhere(description: string, pick: (conn: RheaConnection, st: ConnState) => boolean): Promise<number> {
    const closed: Promise<void>[] = [];
    for (const [conn, st] of this.conns) {
      if (pick(conn, st)) closed.push(forceClose(conn, this.socketOf.get(conn), description));
    }
    await Promise.all(closed);
    return closed.length;
  }

  /**
   * Serves an AMQP connection over any byte stream (a TCP or TLS socket from the dispatcher, an upgraded
   * WebSocket from websocket.ts) the same way: frame guard, connection cap, authentication deadline and limits included.
   */
  acceptStream(stream: Duplex): void {
    this.accept(stream);
  }

  // Every socket gets a frame guard in front of rhea (frame-guard.ts). Over the connection cap a client is
  // told why (open, then close with amqp:resource-limit-exceeded); far over it, the socket is just dropped.
  private accept(socket: Duplex): void {
    socket.on('error', () => undefined);
    // One count for the whole broker: AMQP sockets (refusals in flight included) plus the HTTP server's.
    const total = this.sockets.size + (this.opts.otherConnections?.() ?? 0);
    const overCap = total >= this.limits.maxConnections;
    if (overCap && total >= this.limits.maxConnections + REFUSALS_IN_FLIGHT) return void socket.destroy();
    this.sockets.add(socket);
    const conn = this.container.create_connection({
      // The broker settles sends only after they are durable, and must see abandon (modified) apart from
      // release (docs/architecture.md, "Living with rhea": autoaccept, treat_modified_as_released).
      autoaccept: false,
      treat_modified_as_released: false,
      container_id: 'peeklock',
      id: `c${++this.nextConn}`,
      max_frame_size: this.limits.maxFrameSizeBytes,
      channel_max: channelMaxFor(this.limits),
      // No credit from rhea as transfers arrive: the admission rule grants it as sends are settled (admission.ts).
      credit_window: 0,
    } as never) as unknown as RheaConnection & { accept(s: Duplex): void };
    // What the broker's rhea would print on the console (a peer's protocol slip, or a slip of ours) goes to pino.
    const id = conn.options.id ?? '?';
    (conn as unknown as { [RHEA_LOG]: RheaLog })[RHEA_LOG] = (level, fields, msg) => this.opts.log[level]({ conn: id, ...fields }, msg);
    const gate = new OutboundGate(socket, this.outbound);
    batchWrites(socket, gate);
    setGate(conn, gate);
    this.gates.add(gate);
    this.socketOf.set(conn, socket);
    conn.accept(socket);
    installFrameGuard(socket, conn, {
      limits: this.limits,
      maxMessageSize: this.opts.tenants.fallback.broker.maxMessageSize,
      overCap,
      authenticated: () => this.conns.get(conn)?.auth.authenticated ?? false,
      usesCbs: () => (this.conns.get(conn)?.cbsLinks.length ?? 0) > 0,
      log: this.opts.log,
      id,
    });
    // rhea hears only 'end' and 'error'; a socket the guard destroyed must still release its links.
    socket.once('close', () => {
      this.sockets.delete(socket);
      this.gates.delete(gate);
      setImmediate(() => this.dropConnection(conn));
    });
  }

  // Links per connection are capped (Broker.MaxLinksPerConnection); rhea's sessions list the links.
  private admitLink(ctx: RheaContext, link: RheaLink): boolean {
    let n = 0;
    (ctx.connection as unknown as { each_link(f: () => void): void }).each_link(() => n++);
    if (n <= this.limits.maxLinksPerConnection) return true;
    const max = this.limits.maxLinksPerConnection;
    refuseAttach(link, this.state(link.connection), new BrokerError('QuotaExceeded', `The connection already has ${max} links, the most allowed.`));
    return false;
  }

  private state(conn: RheaConnection): ConnState {
    let s = this.conns.get(conn);
    if (!s) {
      const host = (conn as unknown as { remote?: { open?: { hostname?: string } } }).remote?.open?.hostname || 'localhost';
      const st: ConnState = {
        id: conn.options.id ?? '?',
        ...tenantForHost(this.opts.tenants, host),
        deliveryLinks: new Set(),
        replyLinks: new Map(),
        cbsLinks: [],
        auth: new ConnectionAuth(() => tenantKeys(st.tenant), this.clock),
        admission: new Admission(this.limits.maxPendingSendBytes ?? DEFAULT_BROKER.limits.maxPendingSendBytes, () => st.host),
        host,
        endpoint: `sb://${host}/`,
      };
      s = st;
      this.conns.set(conn, s);
    }
    return s;
  }

  private wire(): void {
    const c = this.container as unknown as { on(e: string, f: (ctx: RheaContext) => void): void };
    const log = this.opts.log;
    c.on('connection_open', (ctx) => this.onOpen(ctx.connection));
    c.on('receiver_open', (ctx) => this.guard(ctx, () => this.admitLink(ctx, ctx.receiver!) && this.onAttach(ctx, { role: 'sender', link: ctx.receiver! })));
    c.on('sender_open', (ctx) => this.guard(ctx, () => this.admitLink(ctx, ctx.sender!) && this.onAttach(ctx, { role: 'receiver', link: ctx.sender! })));
    // Every transfer, flow and disposition passes the admission rule first (admission.ts): nothing reaches a node
    // on a link that was not admitted, or whose right is no longer in force.
    const admitted = (ctx: RheaContext, link: RheaLink | undefined): boolean => this.state(ctx.connection).admission.allows(link);
    c.on('message', (ctx) => this.guard(ctx, () => this.state(ctx.connection).admission.transfer(ctx) && this.onMessage(ctx)));
    for (const kind of ['accepted', 'rejected', 'modified', 'released'] as const) {
      c.on(kind, (ctx) => this.guard(ctx, () => admitted(ctx, ctx.sender) && peekLinkState(ctx.sender)?.delivery?.onOutcome(ctx.delivery!, kind)));
    }
    c.on('sender_flow', (ctx) => this.guard(ctx, () => admitted(ctx, ctx.sender) && peekLinkState(ctx.sender)?.delivery?.onFlow()));
    c.on('sender_close', (ctx) => this.detached({ role: 'receiver', link: ctx.sender! }, this.conns.get(ctx.connection)));
    // A disposition carrying transactional-state is staged in its transaction (coordinator.ts).
    c.on(TRANSACTIONAL_EVENT, (ctx) => this.guard(ctx, () => admitted(ctx, ctx.sender) && onTransactionalOutcome(ctx, this.state(ctx.connection))));
    c.on('receiver_close', (ctx) => this.detached({ role: 'sender', link: ctx.receiver! }, this.state(ctx.connection)));
    // A close can arrive while rhea still holds dispositions of the same read; release a tick later
    // (docs/architecture.md, "Living with rhea").
    const gone = (ctx: RheaContext): void => void setImmediate(() => this.dropConnection(ctx.connection));
    c.on('connection_close', gone);
    c.on('disconnected', gone);
    c.on('error', (ctx) => log.debug({ err: String(ctx?.error ?? ctx) }, 'amqp error'));
    c.on('protocol_error', (err) => log.warn({ err: String(err) }, 'amqp protocol error'));
  }

  // Every per-link record goes with its link (its endpoint keeps them): a closed link must not be kept until its
  // connection closes.
  private detached(l: ClientLink, st: ConnState | undefined): void {
    this.endpointOf.get(l.link)?.detached?.(l, st);
  }

  /** The per-link records the connections hold now (a leak shows here): reply, `$cbs` and delivery links. */
  linkRecords(): { connections: number; replyLinks: number; cbsLinks: number; deliveryLinks: number } {
    const n = { connections: this.conns.size, replyLinks: 0, cbsLinks: 0, deliveryLinks: 0 };
    for (const st of this.conns.values()) {
      n.replyLinks += st.replyLinks.size;
      n.cbsLinks += st.cbsLinks.length;
      n.deliveryLinks += st.deliveryLinks.size;
    }
    return n;
  }

  /** Runs a handler; a bug in one never takes the process or other connections down. */
  private guard(ctx: RheaContext, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.opts.log.error({ err, conn: this.state(ctx.connection).id }, 'handler failed; closing connection');
      try {
        ctx.connection.close({ condition: 'amqp:internal-error', description: 'Internal error.' });
      } catch {
        /* ignore */
      }
    }
  }

  // An attach goes to the first endpoint of the table that matches it, which answers it and serves the link after.
  private onAttach(ctx: RheaContext, l: ClientLink): void {
    const terminus = l.role === 'sender' ? l.link.remote.attach.target : l.link.remote.attach.source;
    const address = entityAddress(terminus?.address ?? '');
    const endpoint = ENDPOINTS.find((e) => e.matches(l, address))!;
    this.endpointOf.set(l.link, endpoint);
    endpoint.attach(l, address, this.state(ctx.connection), this.env);
  }

  private onMessage(ctx: RheaContext): void {
    // A delivery far over the size limit arrives with its frames already dropped (frame guard, rhea-patches.ts).
    const oversized = (ctx.delivery as { [OVERSIZED]?: number } | undefined)?.[OVERSIZED];
    if (oversized !== undefined) {
      const max = this.opts.tenants.fallback.broker.maxMessageSize;
      return ctx.delivery!.update(true, amqpMessage.rejected({ error: toAmqpError(messageTooLarge(oversized, max)) }).described());
    }
    const st = this.state(ctx.connection);
    this.endpointOf.get(ctx.receiver!)?.transfer?.(ctx, st, this.env);
  }

  // A SASL PLAIN login binds the connection to the namespace its key was checked in; an open naming another
  // namespace is refused, as a key of one namespace never opens another.
  private onOpen(conn: RheaConnection): void {
    const st = this.state(conn);
    const login = plainLoginOf<PlainLogin>(conn);
    if (login && !bindPlain(st, login)) {
      this.opts.log.info({ conn: st.id, namespace: st.tenant.name, login: login.tenant.name }, 'login refused: its key was checked in another namespace');
      const description = `The login was checked in namespace '${login.tenant.name}'; the connection names '${st.tenant.name}'.`;
      return conn.close({ condition: 'amqp:unauthorized-access', description });
    }
    this.opts.log.debug({ conn: st.id, namespace: st.tenant.name, plain: st.auth.authenticated }, 'connection open');
  }

  private dropConnection(conn: RheaConnection): void {
    const st = this.conns.get(conn);
    if (!st) return;
    this.conns.delete(conn);
    st.auth.dispose();
    st.admission.dispose();
    for (const link of st.deliveryLinks) link.close();
    rollbackConnection(st);
    this.opts.log.debug({ conn: st.id }, 'connection closed');
  }
}
