// The AMQP server: owns one rhea container per broker (sockets come from the app's connection dispatcher) (not rhea's process-wide
// singleton), and routes every attach to the node it addresses: an entity, its `$management` node, or
// `$cbs`. The SDK opens one AMQP session per link and puts all of them on one connection
// (docs/wire-contract.md, "Connection and SASL" to "Attach errors").

import type { Duplex } from 'node:stream';
import rhea, { echoRequestSettleMode, offerMssbcbs, onPlainLogin, plainLoginOf, refuseTermini } from './rhea.js';
import type { Broker } from '../broker/broker.js';
import { messageTooLarge, requiresSessions, BrokerError } from '../broker/errors.js';
import type { Logger } from '../log/logger.js';
import { toAmqpError } from './conditions.js';
import { DeliveryLink } from './delivery-link.js';
import { receiveSend } from './send.js';
import { serveManagement } from './management-link.js';
import { attachSessionReceiver, unsupportedFilter, wantsSession } from './session-attach.js';
import { coordinatorAttached, entityLinkAttached } from './transaction-group.js';
import { ConnectionAuth } from './auth.js';
import type { ConnectionLimits } from '../config/types.js';
import { bindPlain, handleCbs, plainLogin, tenantForHost, type ConnState, type PlainLogin } from './cbs.js';
import { Admission } from './admission.js';
import { SystemClock, type Clock } from '../broker/runtime/clock.js';
import { tenantKeys, type TenantDirectory } from './tenant.js';
import type { Faults } from '../broker/runtime/faults.js';
import { DEFAULT_BROKER } from '../config/defaults.js';
import { channelMaxFor, installFrameGuard } from './guard-socket.js';
import { forceClose, linksTo } from './force-close.js';
import { batchWrites, OutboundGate, setGate, type OutboundStats } from './output.js';
import { entityAddress } from './address.js';
import { linkState, peekLinkState } from './link-state.js';
import { patchRhea } from './rhea-patches.js';
import { CoordinatorEndpoint, installTransactionTypes, isCoordinator, TRANSACTIONAL_EVENT, TRANSFER_DESTINATION, badDestination, type TransactionalState } from './coordinator.js';
import {
  OVERSIZED,
  amqpMessage,
  type RheaConnection,
  type RheaContext,
  type RheaLink,
  type RheaMessage,
  type RheaReceiver,
  type RheaSender,
} from './rhea-types.js';

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
}

const MANAGEMENT_SUFFIX = /\/\$management$/i;
const CBS = '$cbs';
/** Sender attach property: the largest batch transfer (a long), which the .NET SDK sizes ServiceBusMessageBatch by. */
const MAX_BATCH_SIZE = 'com.microsoft:max-message-batch-size';

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
  /** Coordinator links, transactional work and send-via (coordinator.ts), one per namespace's broker. */
  private readonly coordinators = new WeakMap<Broker, CoordinatorEndpoint>();
  private readonly clock: Clock;

  constructor(private readonly opts: AmqpServerOptions) {
    this.limits = opts.limits ?? DEFAULT_BROKER.limits;
    this.clock = opts.clock ?? new SystemClock();
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
    const overCap = this.sockets.size >= this.limits.maxConnections;
    if (overCap && this.sockets.size >= this.limits.maxConnections + REFUSALS_IN_FLIGHT) return void socket.destroy();
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
      id: conn.options.id ?? '?',
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
    this.refuse(link, new BrokerError('QuotaExceeded', `The connection already has ${max} links, the most allowed.`));
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
    c.on('receiver_open', (ctx) => this.guard(ctx, () => this.admitLink(ctx, ctx.receiver!) && this.onClientSender(ctx, ctx.receiver!)));
    c.on('sender_open', (ctx) => this.guard(ctx, () => this.admitLink(ctx, ctx.sender!) && this.onClientReceiver(ctx, ctx.sender!)));
    // Every transfer, flow and disposition passes the admission rule first (admission.ts): nothing reaches a node
    // on a link that was not admitted, or whose right is no longer in force.
    const admitted = (ctx: RheaContext, link: RheaLink | undefined): boolean => this.state(ctx.connection).admission.allows(link);
    c.on('message', (ctx) => this.guard(ctx, () => this.state(ctx.connection).admission.transfer(ctx) && this.onMessage(ctx)));
    for (const kind of ['accepted', 'rejected', 'modified', 'released'] as const) {
      c.on(kind, (ctx) => this.guard(ctx, () => admitted(ctx, ctx.sender) && peekLinkState(ctx.sender)?.delivery?.onOutcome(ctx.delivery!, kind)));
    }
    c.on('sender_flow', (ctx) => this.guard(ctx, () => admitted(ctx, ctx.sender) && peekLinkState(ctx.sender)?.delivery?.onFlow()));
    c.on('sender_close', (ctx) => this.senderClosed(ctx.connection, ctx.sender!));
    // A disposition carrying transactional-state is staged in its transaction (coordinator.ts).
    c.on(TRANSACTIONAL_EVENT, (ctx) => this.guard(ctx, () => admitted(ctx, ctx.sender) && this.onTransactionalOutcome(ctx)));
    c.on('receiver_close', (ctx) => {
      peekLinkState(ctx.receiver)?.unwatch?.();
      const st = this.state(ctx.connection);
      this.coordinator(st).linkClosed(ctx.receiver!, st.id);
    });
    // A close can arrive while rhea still holds dispositions of the same read; release a tick later
    // (docs/architecture.md, "Living with rhea").
    const gone = (ctx: RheaContext): void => void setImmediate(() => this.dropConnection(ctx.connection));
    c.on('connection_close', gone);
    c.on('disconnected', gone);
    c.on('error', (ctx) => log.debug({ err: String(ctx?.error ?? ctx) }, 'amqp error'));
    c.on('protocol_error', (err) => log.warn({ err: String(err) }, 'amqp protocol error'));
  }

  // Every per-link record goes with its link: a connection opening a link per message session (accept-next) kept
  // every link it ever had, about 15 KB each, until the connection closed; `$management` and `$cbs` reply links too.
  private senderClosed(conn: RheaConnection, sender: RheaSender): void {
    const link = peekLinkState(sender)?.delivery;
    link?.close();
    const st = this.conns.get(conn);
    if (link) st?.deliveryLinks.delete(link);
    peekLinkState(sender)?.unwatch?.();
    if (!st) return;
    for (const [key, reply] of st.replyLinks) if (reply === sender) st.replyLinks.delete(key);
    const i = st.cbsLinks.indexOf(sender);
    if (i >= 0) st.cbsLinks.splice(i, 1);
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

  /** The coordinator of a connection's namespace. */
  private coordinator(st: ConnState): CoordinatorEndpoint {
    let c = this.coordinators.get(st.tenant.broker);
    if (!c) this.coordinators.set(st.tenant.broker, (c = new CoordinatorEndpoint(st.tenant.broker, this.opts.log)));
    return c;
  }

  // A client sender: to an entity (sends), to `$cbs` (put-token), or to a `$management` node (requests).
  private onClientSender(ctx: RheaContext, receiver: RheaReceiver): void {
    const attach = receiver.remote.attach;
    const st = this.state(ctx.connection);
    if (isCoordinator(receiver)) {
      // No put-token precedes it (the .NET SDK sends none; Service Bus asks none): the link is admitted as it is, and
      // transactional work is staged only by links admitted with their own right (admission.ts).
      coordinatorAttached(receiver.session);
      st.admission.admit(receiver);
      return this.coordinator(st).attach(receiver, st.id);
    }
    const address = entityAddress(attach.target?.address ?? '');
    if (!this.echoTermini(receiver)) return;
    if (address === CBS || MANAGEMENT_SUFFIX.test(address)) {
      // Each request is authorised by its node. Before its first token a connection may not know its namespace
      // yet, and an entity's existence is shown only to a claim that covers it.
      echoRequestSettleMode(receiver);
      const entity = address.replace(MANAGEMENT_SUFFIX, '');
      if (MANAGEMENT_SUFFIX.test(address) && st.bound && st.auth.covers(entity) && !this.resolveOrRefuse(receiver, st.tenant.broker, entity)) return;
      return st.admission.admit(receiver);
    }
    const broker = st.tenant.broker;
    // Send-via: the link's target is the via entity, the destination an attach property; both need Send
    // (Service Bus protocol guide, "Send-via functionality").
    const via = (attach as { properties?: Record<string, unknown> }).properties?.[TRANSFER_DESTINATION];
    const destination = typeof via === 'string' && via ? entityAddress(via) : undefined;
    const maySend = (): void => {
      st.auth.require(address, 'Send', st.endpoint);
      if (destination !== undefined) st.auth.require(destination, 'Send', st.endpoint);
    };
    try {
      if (via !== undefined && destination === undefined) throw badDestination();
      // Authorised before the entity is looked up: a client without the right learns nothing of what exists.
      maySend();
      // The via entity may be a queue or a subscription (the entity a transaction receives from).
      if (via === undefined) broker.entities.forSend(address);
      else broker.transactions.viaEntity(address);
      if (destination !== undefined) {
        linkState(receiver).via = destination;
        (receiver.local.attach as { properties?: unknown }).properties = { [TRANSFER_DESTINATION]: via };
      }
      entityLinkAttached(receiver.session, address, false);
    } catch (err) {
      return this.refuse(receiver, err);
    }
    st.admission.admit(receiver, maySend);
    // Watched until the link closes, so a closed link is not kept until its connection closes.
    linkState(receiver).unwatch = st.auth.watch(receiver, address, 'Send');
    // Without a positive max-message-size the SDK refuses every array send (docs/wire-contract.md, "Sender links").
    receiver.local.attach.max_message_size = broker.maxMessageSize;
    // The .NET SDK sizes a ServiceBusMessageBatch by this long, as Service Bus announces it.
    // (rhea's attach getter returns a copy: assign the whole map.)
    receiver.local.attach.properties = { ...receiver.local.attach.properties, [MAX_BATCH_SIZE]: rhea.types.wrap_long(broker.maxBatchSize) };
    this.opts.log.debug({ conn: st.id, entity: address, link: receiver.name }, 'sender attached');
  }

  // A client receiver: from an entity (deliveries), or the reply link of `$cbs` / `$management`.
  private onClientReceiver(ctx: RheaContext, sender: RheaSender): void {
    const attach = sender.remote.attach;
    const address = entityAddress(attach.source?.address ?? '');
    const st = this.state(ctx.connection);
    if (!this.echoTermini(sender)) return;
    if (address === CBS || MANAGEMENT_SUFFIX.test(address)) echoRequestSettleMode(sender);
    if (address === CBS) {
      st.cbsLinks.push(sender);
      st.replyLinks.set(sender.name, sender);
      return st.admission.admit(sender);
    }
    if (MANAGEMENT_SUFFIX.test(address)) {
      st.replyLinks.set(sender.name, sender);
      if (attach.target?.address) st.replyLinks.set(attach.target.address, sender);
      return st.admission.admit(sender);
    }
    const mayListen = (): void => st.auth.require(address, 'Listen', st.endpoint);
    try {
      // Authorised before the entity is looked up: a client without the right learns nothing of what exists.
      mayListen();
      const q = st.tenant.broker.entities.forReceive(address);
      const badFilter = unsupportedFilter(sender);
      if (badFilter) throw badFilter;
      if (q.sessionful && !wantsSession(sender)) {
        throw requiresSessions(q.path);
      }
      const outsideGroup = entityLinkAttached(sender.session, address, true);
      if (outsideGroup) throw outsideGroup;
    } catch (err) {
      return this.refuse(sender, err);
    }
    st.admission.admit(sender, mayListen);
    sender.local.attach.snd_settle_mode = attach.snd_settle_mode ?? 0;
    sender.local.attach.rcv_settle_mode = attach.rcv_settle_mode ?? 0;
    const link = new DeliveryLink(sender, st.tenant.broker, address, this.opts.log, `${st.id}/${sender.name}`, () => st.admission.allows(sender));
    linkState(sender).unwatch = st.auth.watch(sender, address, 'Listen', () => link.refresh());
    linkState(sender).delivery = link;
    st.deliveryLinks.add(link);
    if (wantsSession(sender)) return attachSessionReceiver(sender, link, st.tenant.broker, address);
    // rhea writes pending transfers before attach frames; start a tick later so our attach goes first.
    setImmediate(() => link.start());
    this.opts.log.debug({ conn: st.id, entity: address, mode: link.receiveMode, link: sender.name }, 'receiver attached');
  }

  // The attach reply echoes the client's source and target (uamqp detaches otherwise). A terminus rhea cannot
  // re-encode (a malformed attach) refuses the link with amqp:invalid-field instead of failing the connection.
  private echoTermini(link: RheaLink): boolean {
    const attach = link.remote.attach;
    const echo = (source: unknown, target: unknown): boolean => {
      try {
        link.set_source(source);
        link.set_target(target);
        return true;
      } catch {
        return false;
      }
    };
    if (echo(attach.source ?? {}, attach.target ?? {})) return true;
    // Fields rhea cannot re-encode: echo the addresses alone, as a plain client would have sent them.
    if (echo({ address: attach.source?.address }, { address: attach.target?.address })) return true;
    refuseTermini(link);
    const error = { condition: 'amqp:invalid-field', description: 'The attach source or target is malformed.' };
    this.state(link.connection).admission.refused(link, error);
    link.close(error);
    return false;
  }

  private resolveOrRefuse(link: RheaLink, broker: Broker, entity: string): boolean {
    try {
      broker.entities.node(entity);
      return true;
    } catch (err) {
      this.refuse(link, err);
      return false;
    }
  }

  // Attach errors: the reply carries null source and target, then a detach with the error (docs/wire-contract.md,
  // "Attach errors"). A missing entity is named by its full address on the host the client connected to, as
  // Service Bus names it.
  // Its frames after the refusal get the same error and never reach the node (admission.ts).
  private refuse(link: RheaLink, err: unknown): void {
    const st = this.state(link.connection);
    const error = toAmqpError(err, st.host);
    st.admission.refused(link, error);
    refuseTermini(link);
    link.close(error);
  }

  private onMessage(ctx: RheaContext): void {
    const receiver = ctx.receiver!;
    const address = entityAddress(receiver.remote.attach.target?.address ?? '');
    // A delivery far over the size limit arrives with its frames already dropped (frame guard, rhea-patches.ts).
    const oversized = (ctx.delivery as { [OVERSIZED]?: number } | undefined)?.[OVERSIZED];
    if (oversized !== undefined) {
      const max = this.opts.tenants.fallback.broker.maxMessageSize;
      return ctx.delivery!.update(true, amqpMessage.rejected({ error: toAmqpError(messageTooLarge(oversized, max)) }).described());
    }
    const st = this.state(ctx.connection);
    if (isCoordinator(receiver)) return this.coordinator(st).onControl(ctx, st.id);
    if (address === CBS) return handleCbs(ctx.message as RheaMessage, ctx.delivery!, st, this.opts.tenants, this.opts.log);
    if (MANAGEMENT_SUFFIX.test(address)) return serveManagement(ctx, address.replace(MANAGEMENT_SUFFIX, ''), st, this.opts.log, this.opts.faults);
    receiveSend(ctx, address, st, { coordinator: this.coordinator(st), faults: this.opts.faults, log: this.opts.log });
  }

  // A settlement inside a transaction: staged, answered with transactional-state (coordinator.ts).
  private onTransactionalOutcome(ctx: RheaContext): void {
    const state = ctx.delivery?.remote_state as unknown as TransactionalState;
    const st = this.state(ctx.connection);
    const conn = st.id;
    peekLinkState(ctx.sender)?.delivery?.onTransactionalOutcome(ctx.delivery!, state, (token, s, path) =>
      this.coordinator(st).stageSettle(state.txnId.toString('hex'), conn, token, s, path),
    );
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
    this.coordinator(st).connectionClosed(st.id);
    this.opts.log.debug({ conn: st.id }, 'connection closed');
  }
}
