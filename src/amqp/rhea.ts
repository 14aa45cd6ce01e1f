// The broker's rhea, and every place the broker reaches past rhea's public API, behind named functions.
//
// The broker loads its own copy of rhea (the npm alias `broker-rhea`, pinned to one version). Its patches
// (rhea-patches.ts) change prototypes, and a copy shared with clients in the same process would hand those
// changes to them: the SDK in our protocol tests, or an application that embeds the broker beside its own
// Service Bus client. With a copy of its own, a client in the same process runs on stock rhea.
//
// Every access to rhea internals goes through a function here, so that a new rhea version is reviewed in one
// file; test/unit/rhea-internals.test.ts fails, naming the function, when one of them changes shape.

import { createRequire } from 'node:module';
import rhea from 'broker-rhea';

/** The broker's rhea module (a copy of its own, never shared with clients in the process). */
export default rhea;

const require = createRequire(import.meta.url);

/** Loads one of rhea's own modules (lib/session.js, lib/util.js) from the broker's copy, for a patch. */
export function rheaInternalModule<T>(file: 'session' | 'util' | 'link' | 'connection' | 'terminus' | 'log'): T {
  return require(`broker-rhea/lib/${file}.js`) as T;
}

/** The rhea connection fields this file reads or calls. */
interface ConnectionInternals {
  _register(): void;
  _process(): void;
  sasl_transport?: { transports?: Record<number, SaslServerTransport | undefined> };
  remote_channel_map?: Record<number, { remote?: { handles?: Record<number, { close(e: unknown): void } | undefined> } } | undefined>;
}

/** rhea's SASL server state for a connection: the mechanism chosen, its outcome and the PLAIN username. */
export interface SaslServerTransport {
  outcome?: number;
  username?: string;
  mechanism?: { callback?: unknown };
  transport?: { read_complete?: boolean };
}

/** The SASL server transport's slot: rhea keeps the SASL layer as transports[3] of the connection's SASL transport. */
const SASL_LAYER = 3;

const internals = (connection: unknown): ConnectionInternals => connection as ConnectionInternals;

/** Asks rhea to process the connection on its next pass (a flow or attach reply it holds is then written). */
export function scheduleProcessing(connection: unknown): void {
  internals(connection)._register?.();
}

/** Makes rhea write whatever it has pending now, instead of on its next tick. */
export function processNow(connection: unknown): void {
  internals(connection)._process();
}

/** Where a PLAIN login's result is kept: on rhea's PLAIN mechanism of the connection (one per connection). */
const PLAIN_LOGIN = Symbol('peeklock.plainLogin');

/**
 * Offers SASL PLAIN, checked by `check` (user, password, SASL hostname): a login is accepted when it returns a
 * value, which {@link plainLoginOf} then gives back for the connection. rhea calls the callback as a method of
 * the connection's own PLAIN mechanism, so the value is kept there.
 */
export function onPlainLogin<T extends object>(mechanisms: unknown, check: (user: string, password: string, host: string | undefined) => T | null): void {
  (mechanisms as { enable_plain(cb: (this: Record<symbol, unknown>, u: string, p: string, h?: string) => boolean): void }).enable_plain(
    function (this: Record<symbol, unknown>, user, password, host) {
      const login = check(user, password, host);
      if (login !== null) this[PLAIN_LOGIN] = login;
      return login !== null;
    },
  );
}

/** What the PLAIN check returned for a connection's completed login, or undefined without one. */
export function plainLoginOf<T>(connection: unknown): T | undefined {
  const server = saslServerState(connection);
  if (server?.outcome !== 0) return undefined;
  return (server.mechanism as Record<symbol, unknown> | undefined)?.[PLAIN_LOGIN] as T | undefined;
}

/** The SASL server state of a connection, or undefined before SASL began (or without SASL). */
export function saslServerState(connection: unknown): SaslServerTransport | undefined {
  return internals(connection).sasl_transport?.transports?.[SASL_LAYER];
}

/** True once the SASL exchange of a connection has completed (its outcome was read). */
export function saslComplete(connection: unknown): boolean {
  return saslServerState(connection)?.transport?.read_complete === true;
}

/** The link the peer attached on `channel` with `handle`, if any. */
export function remoteLink(connection: unknown, channel: number, handle: number): { close(e: unknown): void } | undefined {
  return internals(connection).remote_channel_map?.[channel]?.remote?.handles?.[handle];
}

/** The sender fields rhea uses to decide a drain and to hold an attach reply. */
interface SenderInternals {
  _get_drain(): boolean;
  _draining?: boolean;
  _drained?: boolean;
  credit: number;
  delivery_count: number;
  state: { open_requests: number };
  connection: unknown;
}

/**
 * Makes a sender answer a drain even when its credit is used up: rhea answers only while credit remains, and
 * the SDK detaches a link whose drain goes unanswered (docs/wire-contract.md, "Receiver links and credit").
 */
export function answerDrainsAtZeroCredit(sender: unknown): void {
  const s = sender as SenderInternals;
  s._get_drain = () => {
    if (!s._draining || !s._drained) return false;
    s.delivery_count += s.credit;
    s.credit = 0;
    return true;
  };
}

/**
 * The delivery limit the client granted a sender: its delivery-count plus the link-credit of its last flow (AMQP 1.0
 * §2.6.7). rhea keeps both as fields it updates on each flow (Sender.on_flow) and as it writes transfers.
 */
export function grantedLimit(sender: unknown): number {
  const s = sender as SenderInternals;
  return s.delivery_count + s.credit;
}

/** True when the client's last flow on a sender set drain (rhea's `_draining`, set by Sender.on_flow). */
export function drainRequested(sender: unknown): boolean {
  return (sender as SenderInternals)._draining === true;
}

/** rhea's outgoing side of a session: its delivery buffer and the peer's incoming window. */
interface OutgoingInternals {
  outgoing: {
    deliveries: { available(): number };
    next_delivery_id: number;
    next_pending_delivery: number;
    transfer_window(): number;
  };
}

/**
 * Deliveries a session can still take from its senders. Two bounds: free slots in rhea's outgoing delivery buffer
 * (fixed at 2,048, and rhea breaks when it is overrun: "Next pending delivery not found"), and the transfers the
 * peer's session incoming window still admits (AMQP 1.0 §2.5.6) less those rhea holds unsent. rhea keeps a delivery
 * it may not transfer yet without telling anyone, so a lock taken for it would run down before the client saw it.
 */
export function sessionOutgoingRoom(session: unknown): number {
  const out = (session as OutgoingInternals).outgoing;
  const window = out.transfer_window() - (out.next_delivery_id - out.next_pending_delivery);
  return Math.min(out.deliveries.available(), window);
}

/** Credit our receiving link has granted the client and the client has not used yet (rhea's `credit` field). */
export function receiverCredit(receiver: unknown): number {
  return (receiver as { credit: number }).credit;
}

/** Takes back the attach reply rhea queued when it opened the link, until {@link releaseAttachReply}. */
export function holdAttachReply(sender: unknown): void {
  (sender as SenderInternals).state.open_requests = 0;
}

/** Lets a held attach reply go out, and asks rhea to write it. */
export function releaseAttachReply(sender: unknown): void {
  const s = sender as SenderInternals;
  s.state.open_requests = 1;
  scheduleProcessing(s.connection);
}

/**
 * A number that rhea encodes as an AMQP int (rhea picks uint for a positive number). uamqp, under the Python
 * SDK, reads `status-code`/`statusCode` of `$cbs` and `$management` replies only as an int, as Service Bus sends
 * them; rhea-based clients read either.
 */
export function amqpInt(n: number): unknown {
  return { toRheaTyped: () => rhea.types.wrap_int(n) };
}

/**
 * Offers SASL `MSSBCBS` beside ANONYMOUS: uamqp-based clients (the Python SDK 7.x) ask for it and close the
 * connection when it is missing. On Service Bus it means "anonymous now, a token on `$cbs` next", which is what
 * ANONYMOUS does here, so it is served by the same mechanism. Call after `enable_anonymous()`.
 */
export function offerMssbcbs(mechanisms: unknown): void {
  const m = mechanisms as Record<string, unknown>;
  m['MSSBCBS'] = m['ANONYMOUS'];
}

/**
 * Makes a link's attach reply carry null source and target, as Service Bus refuses an attach (followed by a detach
 * with the error). rhea's set_source(null) writes an empty source instead, which azure-amqp (the .NET SDK) takes for
 * an opened link: the SDK then reads a session filter from it and fails with a NullReferenceException rather than
 * the refusal's error.
 */
export function refuseTermini(link: { local: { attach: { source?: unknown; target?: unknown } } }): void {
  link.local.attach.source = null;
  link.local.attach.target = null;
}

/**
 * The request/response pair of `$cbs` and `$management` (azure-amqp's RequestResponseAmqpLink, under the .NET SDK)
 * asks for `snd-settle-mode = settled` on both links; the attach reply echoes it, as Service Bus's does. Without the
 * echo azure-amqp sends its requests unsettled, tracks them by their (empty) delivery tag, and a second request in
 * flight on the link fails with "An item with the same key has already been added". On the reply link the broker is
 * the sender, and rhea then sends the replies settled.
 */
export function echoRequestSettleMode(link: { local: { attach: { snd_settle_mode?: number } }; remote: { attach: { snd_settle_mode?: number } } }): void {
  const mode = link.remote.attach.snd_settle_mode;
  if (mode === 1) link.local.attach.snd_settle_mode = mode;
}
