// Process-wide patches to rhea 3.x. Each is installed once (the AMQP server calls them all at start-up) and each fixes
// one place where rhea trusts the peer: lost message bytes, link keys, and counts taken from the wire that drive loops
// or allocations (decode and disposition bombs found by the frame fuzzer, test/fault/fuzz-frames.test.ts).

import { format } from 'node:util';
import rhea, { rheaInternalModule } from './rhea.js';
import { DISCARD, OVERSIZED, linkKey } from './rhea-types.js';
import { captureRawMessages } from './raw-transfers.js';

/** A hostile or malformed value rhea would otherwise act on; the connection is closed with amqp:decode-error. */
export class AmqpDecodeError extends TypeError {
  readonly condition = 'amqp:decode-error';
  override readonly name = 'AmqpDecodeError';
}

/** What rhea would have written on the console, said through the broker's logger (pino) with the connection's id. */
export type RheaLog = (level: 'warn' | 'error', fields: Record<string, unknown>, msg: string) => void;
/** Property of a rhea connection: where the patches below report what rhea itself would print (console.error). */
export const RHEA_LOG = Symbol('peeklock.rheaLog');

/** Reports through the connection's RHEA_LOG, if the broker gave it one (a bare rhea connection in a test has none). */
function report(connection: unknown, level: 'warn' | 'error', fields: Record<string, unknown>, msg: string): void {
  (connection as { [RHEA_LOG]?: RheaLog } | undefined)?.[RHEA_LOG]?.(level, fields, msg);
}

let linksKeyed = false;

/**
 * rhea keys a session's links by name alone, but AMQP link names are unique per direction: Qpid Proton names
 * a sender and a receiver on one address identically, and rhea then throws "Attach already received" and
 * drops the connection (docs/architecture.md, "Living with rhea"). Re-key them by (role, name), once per process.
 */
export function keyLinksByRoleAndName(): void {
  if (linksKeyed) return;
  linksKeyed = true;
  const Session = rheaInternalModule<{ prototype: Record<string, unknown> }>('session');
  type Link = { name: string; is_sender(): boolean; local: { handle: number }; remote: { handle: number; attach?: unknown }; on_attach(f: unknown): void };
  type Sess = {
    links: Record<string, Link>;
    local: { handles: Record<number, Link | undefined> };
    remote: { handles: Record<number, Link | undefined> };
    create_sender(name: string): Link;
    create_receiver(name: string): Link;
  };
  const key = (sender: boolean, name: string): string => (sender ? 'S:' : 'R:') + name;
  Session.prototype.create_link = function (this: Sess, name: string, ctor: new (...a: unknown[]) => Link, opts: unknown) {
    let i = 0;
    while (this.local.handles[i]) i++;
    const l = new ctor(this, name, i, opts);
    this.links[key(l.is_sender(), name)] = l;
    this.local.handles[i] = l;
    return l;
  };
  Session.prototype.remove_link = function (this: Sess, link: Link) {
    delete this.remote.handles[link.remote.handle];
    delete this.local.handles[link.local.handle];
    delete this.links[key(link.is_sender(), link.name)];
  };
  Session.prototype.on_attach = function (this: Sess, frame: { performative: { name: string; role: boolean; handle: number } }) {
    const { name, role } = frame.performative;
    // role true: the peer receives, so our end is the sender.
    const link = this.links[key(role, name)] ?? (role ? this.create_sender(name) : this.create_receiver(name));
    this.remote.handles[frame.performative.handle] = link;
    link.on_attach(frame);
    link.remote.attach = frame.performative;
  };
}

/** Most zero-width AMQP array elements (nulls, booleans, uint0…) one frame or message may declare in all. */
const MAX_ZERO_WIDTH_ELEMENTS = 65_536;
/** Zero-width elements a reader (one frame or one message) has decoded so far. */
const ZERO_WIDTH_USED = Symbol('peeklock.zeroWidthUsed');

let arraysBounded = false;

/**
 * rhea's decoder trusts declared element counts. An array's elements share one constructor, so elements of
 * a zero-width type (null, true, uint0, …) take no bytes, and fixed-width types rhea reads by slicing
 * (uuid, decimals) do not fail past the end of the frame: a 10-byte frame can declare 4 billion of them and
 * hold the event loop — every connection stalls — while rhea builds them (found by the frame fuzzer).
 * Refuse counts the frame's remaining bytes cannot hold. Zero-width elements are budgeted per reader (one
 * per frame or message), not per array: 10 bytes per array32 of 65,536 nulls made a 1 KB frame of 100 such
 * arrays cost 5 s and 400 MB, 10 KB cost 38 s and 3.4 GB. Once per process.
 */
export function boundArrayDecoding(): void {
  if (arraysBounded) return;
  arraysBounded = true;
  type Reader = { remaining(): number; [ZERO_WIDTH_USED]?: number };
  const proto = (rhea.types as unknown as { Reader: { prototype: Record<string, unknown> } }).Reader.prototype;
  const items = proto.read_array_items as (this: Reader, n: number, type: { width?: number }) => unknown[];
  proto.read_array_items = function (this: Reader, n: number, type: { width?: number }) {
    const width = type.width ?? 0;
    if (width === 0) {
      const used = (this[ZERO_WIDTH_USED] ?? 0) + n;
      if (used > MAX_ZERO_WIDTH_ELEMENTS) {
        throw new AmqpDecodeError(`AMQP arrays declaring ${used} zero-width elements in one frame were refused`);
      }
      this[ZERO_WIDTH_USED] = used;
    } else if (n * width > this.remaining()) {
      throw new AmqpDecodeError(`an AMQP array declaring ${n} elements was refused: the frame cannot hold them`);
    }
    return items.call(this, n, type);
  };
  // List and map items carry a constructor byte each, so a count beyond the remaining bytes is a lie too.
  const readN = proto.read_n as (this: Reader, n: number) => unknown[];
  proto.read_n = function (this: Reader, n: number) {
    if (n > this.remaining()) throw new AmqpDecodeError(`an AMQP list or map declaring ${n} items was refused`);
    return readN.call(this, n);
  };
}

/** Widest delivery-id range one disposition may name: more than any session can have unsettled. */
const MAX_DISPOSITION_RANGE = 65_536;

const isUint = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffff_ffff;

let dispositionsBounded = false;

/**
 * rhea walks a disposition's delivery ids with `for (i = first; i <= (last || first); i++)`, taking the
 * fields as decoded — any AMQP type — and JavaScript coerces them. `first = 0, last = 4 billion` held the
 * event loop for seconds (found by the frame fuzzer, from the broker's CPU profile), so the range is clamped:
 * no session has that many deliveries outstanding. A null first counts from 0 (fuzzer seed 541995: 16 s of
 * CPU in rhea's Outgoing.on_disposition), and a timestamp or string `last` coerces past any uint, so both
 * must be uints (a null last means first) or the frame is refused with amqp:decode-error. The frame guard
 * refuses these at the byte level with an AMQP close; this catches encodings it does not parse (a symbolic
 * descriptor). Once per process.
 */
export function boundDispositionRanges(): void {
  if (dispositionsBounded) return;
  dispositionsBounded = true;
  const Session = rheaInternalModule<{ prototype: Record<string, unknown> }>('session');
  type Frame = { performative: { first?: unknown; last?: unknown } };
  const original = Session.prototype.on_disposition as (this: unknown, f: Frame) => void;
  Session.prototype.on_disposition = function (this: unknown, frame: Frame) {
    const p = frame.performative;
    if (!isUint(p.first) || (p.last != null && !isUint(p.last))) {
      throw new AmqpDecodeError('A disposition needs a uint first and a null or uint last.');
    }
    if (isUint(p.last) && p.last - p.first > MAX_DISPOSITION_RANGE) p.last = p.first + MAX_DISPOSITION_RANGE;
    return original.call(this, frame);
  };
}

let payloadsReleased = false;
const RELEASED = Symbol('peeklock.releasedUpTo');
/** What a delivery's payload becomes once every transfer frame of it is written. */
const SENT: Buffer[] = [];

/**
 * rhea keeps each outgoing delivery until the peer settles it, and with it the encoded message it will never
 * send again (only Outgoing.process reads `data`, and only for deliveries not yet fully sent). A peek-lock
 * receiver can hold thousands of messages for minutes, so each session drops the payloads of the deliveries
 * it has finished sending: with 100,000 outstanding 1 KiB locks that is over 100 MB the broker kept for nothing.
 */
export function releaseSentPayloads(): void {
  if (payloadsReleased) return;
  payloadsReleased = true;
  type Delivery = { data: Buffer[] };
  type Sess = {
    outgoing: { next_pending_delivery: number; deliveries: { by_id(id: number): Delivery | undefined } };
    [RELEASED]?: number;
  };
  const Session = rheaInternalModule<{ prototype: { _process(this: Sess): void } }>('session');
  const original = Session.prototype._process;
  Session.prototype._process = function (this: Sess) {
    original.call(this);
    const out = this.outgoing;
    let id = this[RELEASED] ?? out.next_pending_delivery;
    for (; id < out.next_pending_delivery; id++) {
      const d = out.deliveries.by_id(id);
      if (d) d.data = SENT;
    }
    this[RELEASED] = id;
  };
}

let sessionFlowsNotified = false;
/** Property of a rhea session: a callback run after each flow the session receives (its window may have moved). */
export const ON_SESSION_FLOW = Symbol('peeklock.onSessionFlow');

/**
 * A peer reopens its session incoming window with a flow: one that names no link, which rhea tells no link about
 * (Session.on_flow only updates the window), or one for another link of the session, as every flow carries the
 * session's fields (AMQP 1.0 §2.7.4). The delivery links bound their credit figures by that window and push them
 * to the broker, so each needs to hear when it opens again; a session may carry a callback under ON_SESSION_FLOW.
 */
export function notifySessionFlows(): void {
  if (sessionFlowsNotified) return;
  sessionFlowsNotified = true;
  type Sess = { [ON_SESSION_FLOW]?: () => void };
  const Session = rheaInternalModule<{ prototype: { on_flow(this: Sess, frame: { performative: { handle?: unknown } }): void } }>('session');
  const original = Session.prototype.on_flow;
  Session.prototype.on_flow = function (this: Sess, frame) {
    original.call(this, frame);
    this[ON_SESSION_FLOW]?.();
  };
}

/**
 * Lets rhea allocate its buffers without zero-filling: its encoder zero-filled every frame and section buffer
 * (1 KiB or more) it then overwrote, 2.4 s of 116 s in the 100,000-lock benchmark run, mostly inside
 * event-loop stalls. Safe because every user overwrites what it exposes:
 * types.Writer hands out only `buffer.slice(0, position)`, and its placeholders (frame size, compound size and
 * count) are backfilled before that; the protocol header, uuid4 and SASL responses write every byte.
 */
export function unzeroedRheaBuffers(): void {
  const util = rheaInternalModule<{ allocate_buffer: (size: number) => Buffer }>('util');
  util.allocate_buffer = (size: number): Buffer => Buffer.allocUnsafe(size);
}

let oversizedDiscarded = false;
const NO_PAYLOAD = Buffer.alloc(0);
/** Property of a rhea receiver link: a callback run when one of its deliveries ended aborted (its credit is spent). */
export const ON_ABORTED = Symbol('peeklock.onAborted');

/**
 * Service Bus refuses a message over its size limit with amqp:link:message-size-exceeded and the link stays
 * usable. rhea keeps every frame of a multi-frame delivery until its last one, so once the frame guard finds
 * a delivery larger than the broker takes (it marks the link in the connection's DISCARD map), its frames
 * are counted and dropped here: the session's transfer count (next-incoming-id, the window the peer sees)
 * and the link's credit and delivery-count advance as if it had been kept, the frames rhea already held are
 * let go, and the last frame hands the broker an empty message marked OVERSIZED, which it rejects.
 *
 * rhea also ignores `aborted` (AMQP 1.0 §2.7.5): it decoded the first frame of a delivery aborted there (a
 * decode error that closed the connection), kept waiting after an abort that also said `more` (the next
 * delivery was a frame sequence error), and handed on an aborted last frame as a whole message, stored. Here an
 * aborted transfer, of any delivery, ends its delivery with no message and no outcome: its payload is ignored,
 * it is settled by the abort, it spent one credit, and the link's ON_ABORTED callback gives the credit back.
 * Once per process.
 */
export function discardOversizedDeliveries(): void {
  if (oversizedDiscarded) return;
  oversizedDiscarded = true;
  type Delivery = { id: number; frames?: Buffer[]; format?: number; settled: boolean; remote_settled: boolean; [OVERSIZED]?: number };
  type Receiver = {
    _incomplete?: Delivery;
    credit: number;
    delivery_count: number;
    is_remote_open(): boolean;
    dispatch(event: string, ctx: unknown): void;
    _context(c: unknown): unknown;
    [ON_ABORTED]?: () => void;
  };
  type Frame = { channel: number; payload?: Buffer; performative: { handle: number; delivery_id?: number | null; more?: boolean; aborted?: boolean } };
  type Sess = {
    connection: { [DISCARD]?: Map<number, number>; _register(): void };
    incoming: { next_transfer_id: number };
    _get_link(f: Frame): Receiver;
  };
  const Session = rheaInternalModule<{ prototype: { on_transfer(this: Sess, f: Frame): void } }>('session');
  const original = Session.prototype.on_transfer;
  // The delivery's last frame came: rhea forgets it, counts the credit it spent, and an abort settles it.
  const end = (sess: Sess, receiver: Receiver, current: Delivery, aborted: boolean): void => {
    receiver._incomplete = undefined;
    delete current.frames;
    if (receiver.credit > 0) receiver.credit--;
    receiver.delivery_count++;
    if (!aborted) return;
    current.settled = true;
    current.remote_settled = true;
    // Settled deliveries leave the session's buffer (and widen the window) when the session next runs.
    sess.connection._register();
    receiver[ON_ABORTED]?.();
  };
  const patched = function (this: Sess, frame: Frame): void {
    const marked = this.connection[DISCARD];
    const key = linkKey(frame.channel, frame.performative.handle);
    const { more, aborted } = frame.performative;
    if (!marked?.has(key)) {
      if (!aborted) return original.call(this, frame);
      // An abort: rhea opens the delivery (its first frame) or adds to it as for a frame with more to come,
      // checking the delivery id and the link and counting the transfer, but keeps none of the payload.
      frame.payload = undefined;
      frame.performative.more = true;
      frame.performative.aborted = false;
      original.call(this, frame);
      const receiver = this._get_link(frame);
      return end(this, receiver, receiver._incomplete!, true);
    }
    const receiver = this._get_link(frame);
    const current = receiver._incomplete;
    if (!current || !receiver.is_remote_open()) {
      // The marked delivery is gone (its link was detached): this transfer is someone else's.
      marked.delete(key);
      return patched.call(this, frame);
    }
    const id = frame.performative.delivery_id;
    if (id !== undefined && id !== null && id !== current.id) {
      // As rhea itself refuses it: a new delivery before the last one ended is a protocol violation.
      throw Error(`frame sequence error: delivery ${current.id} not complete, got ${id}`);
    }
    this.incoming.next_transfer_id++;
    let bytes = current[OVERSIZED] ?? 0;
    for (const f of current.frames ?? []) bytes += f.length;
    current[OVERSIZED] = bytes + (frame.payload?.length ?? 0);
    current.frames = [];
    // The session's incoming window is reopened by Session._process, which a kept frame would not run either,
    // but a discarded delivery can be far longer than the window: let the flow go out as the frames arrive.
    this.connection._register();
    if (more && !aborted) return;
    // Payload bytes the frame guard dropped before rhea saw the frames count toward the size reported.
    current[OVERSIZED] += marked.get(key) ?? 0;
    marked.delete(key);
    end(this, receiver, current, !!aborted);
    if (!aborted) receiver.dispatch('message', receiver._context({ message: NO_PAYLOAD, delivery: current, format: current.format }));
  };
  Session.prototype.on_transfer = patched;
}

let creditMarked = false;
/** True while rhea dispatches a delivery whose last transfer came when its link had no credit left. */
let beyondCredit = false;

/**
 * rhea takes a transfer whatever the link's credit (it logs "Received transfer when credit was 0" on stderr and
 * hands the message over), so credit would bound nothing a client did not choose to respect. The delivery that
 * completes on a link without credit is marked while rhea dispatches it (`transferBeyondCredit`), for the
 * admission rule (admission.ts) to reject; the credit stays 0, nothing is written to stderr, and the slip is a
 * `warn` through the connection's RHEA_LOG. Once per process.
 */
export function markTransfersBeyondCredit(): void {
  if (creditMarked) return;
  creditMarked = true;
  type Receiver = { credit: number };
  type Frame = { performative: { handle: number; more?: boolean } };
  type Sess = { connection: unknown; remote: { handles: Record<number, Receiver | undefined> } };
  const Session = rheaInternalModule<{ prototype: { on_transfer(this: Sess, f: Frame): void } }>('session');
  const original = Session.prototype.on_transfer;
  Session.prototype.on_transfer = function (this: Sess, frame: Frame) {
    const link = this.remote.handles[frame.performative.handle];
    const over = !!link && !frame.performative.more && !(link.credit > 0);
    // The line rhea writes on stderr here ("Received transfer when credit was 0"): the peer's protocol slip.
    if (over) report(this.connection, 'warn', { handle: frame.performative.handle, credit: link!.credit }, 'transfer beyond the link credit (AMQP 1.0 §2.6.7)');
    const outer = beyondCredit;
    beyondCredit = over;
    // rhea takes one credit for the delivery it completes: lend it one, which it takes back at once.
    if (over) link!.credit = 1;
    try {
      return original.call(this, frame);
    } catch (err) {
      if (over) link!.credit = 0;
      throw err;
    } finally {
      beyondCredit = outer;
    }
  };
}

/** True while rhea dispatches a delivery that came beyond its link's credit (see markTransfersBeyondCredit). */
export function transferBeyondCredit(): boolean {
  return beyondCredit;
}

let unsentGuarded = false;

/** The prototype of rhea's session Outgoing (not exported): a session on a stand-in connection has one. */
function outgoingPrototype(): Record<string, unknown> {
  const Session = rheaInternalModule<new (connection: object, channel: number) => { outgoing: object }>('session');
  return Object.getPrototypeOf(new Session({}, 0).outgoing) as Record<string, unknown>;
}

type OutDelivery = { id: number; next_to_send: number };
type Outgoing = {
  connection: unknown;
  next_pending_delivery: number;
  next_delivery_id: number;
  deliveries: { by_id(id: number): OutDelivery | undefined; get_head(): OutDelivery | undefined };
};

/** Delivery ids of a session below this have had (at least) their first transfer frame written to the peer. */
function firstUnsent(out: Outgoing): number {
  const pending = out.deliveries.by_id(out.next_pending_delivery);
  return out.next_pending_delivery + (pending && pending.next_to_send > 0 ? 1 : 0);
}

/**
 * A receiver settles only deliveries it has (AMQP 1.0 §2.6.12), but rhea applies a peer's disposition to any
 * outgoing delivery in its buffer, written or not: the broker then completed a peek-lock message the client never
 * received, and rhea dropped the settled delivery before sending it, leaving every later delivery of the session
 * behind a gap ("Next pending delivery not found"). A disposition naming deliveries not yet sent is cut to those
 * sent (none: ignored), and the slip is a `warn`.
 *
 * If rhea's send loop still finds its next pending delivery gone (a slip of ours), it would print that line and
 * stop sending on the session forever. Its loss is an `error` through RHEA_LOG instead, and the session moves on to
 * the deliveries it still has. Once per process.
 */
export function guardUnsentDeliveries(): void {
  if (unsentGuarded) return;
  unsentGuarded = true;
  type Frame = { performative: { role?: boolean; first: number; last?: number | null } };
  type Sess = { connection: unknown; outgoing: Outgoing };
  const Session = rheaInternalModule<{ prototype: { on_disposition(this: Sess, f: Frame): void } }>('session');
  const onDisposition = Session.prototype.on_disposition;
  Session.prototype.on_disposition = function (this: Sess, frame: Frame) {
    const p = frame.performative;
    // role true: the peer is the receiver, so the disposition is of our outgoing deliveries.
    if (p.role) {
      const unsent = firstUnsent(this.outgoing);
      const last = p.last ?? p.first;
      if (last >= unsent) {
        report(this.connection, 'warn', { first: p.first, last, firstUnsent: unsent }, 'disposition of deliveries not yet sent: ignored for those');
        if (p.first >= unsent) return;
        p.last = unsent - 1;
      }
    }
    return onDisposition.call(this, frame);
  };
  const Outgoing = outgoingPrototype() as { process(this: Outgoing): void };
  const process = Outgoing.process;
  Outgoing.process = function (this: Outgoing) {
    if (this.next_pending_delivery < this.next_delivery_id && !this.deliveries.by_id(this.next_pending_delivery)) {
      const next = this.deliveries.get_head()?.id ?? this.next_delivery_id;
      report(this.connection, 'error', { lost: `${this.next_pending_delivery}…${next - 1}` }, 'outgoing deliveries dropped before they were sent');
      this.next_pending_delivery = next;
    }
    return process.call(this);
  };
}

let consoleRouted = false;

/**
 * rhea writes what it finds wrong with a peer on the console (`console.error` / `console.warn`: a flow with drain
 * set and credit left, an unknown message section or terminus, an unrecognised outcome …), past pino and without
 * saying which connection. While a connection of the broker reads a peer's bytes or writes its own (`input`,
 * `_process`: rhea's two synchronous entry points, in which only rhea and the broker's handlers run), those two
 * console methods report through its RHEA_LOG as a `warn` instead. The patches above report the lines they know
 * with fields of their own; this catches the rest. Once per process.
 */
export function routeRheaConsole(): void {
  if (consoleRouted) return;
  consoleRouted = true;
  type Conn = { [RHEA_LOG]?: RheaLog };
  const Connection = rheaInternalModule<{ prototype: Record<string, (this: Conn, ...a: unknown[]) => unknown> }>('connection');
  for (const name of ['input', '_process']) {
    const original = Connection.prototype[name]!;
    Connection.prototype[name] = function (this: Conn, ...args: unknown[]) {
      const log = this[RHEA_LOG];
      if (!log) return original.apply(this, args);
      /* eslint-disable no-console -- nothing is written here: rhea's console methods are pointed at pino and back */
      const { error, warn } = console;
      // A logger that itself writes to the console (a custom pino destination) gets the real methods back.
      let inside = false;
      console.error = console.warn = (...a: unknown[]): void => {
        if (inside) return error.apply(console, a);
        inside = true;
        try {
          log('warn', {}, `rhea: ${format(...a)}`);
        } finally {
          inside = false;
        }
      };
      try {
        return original.apply(this, args);
      } finally {
        console.error = error;
        console.warn = warn;
      }
      /* eslint-enable no-console */
    };
  }
}

let logsQuieted = false;
const noLog = (): void => undefined;

/**
 * rhea logs through `debug` on every frame it reads or writes and every event it raises. A logger DEBUG has not
 * enabled still costs a call that gathers its arguments into an array and asks whether it is enabled: about
 * 0.5 KB of garbage per message in the paced benchmark, none of it ever printed. In the broker's copy the
 * loggers DEBUG does not enable when the broker starts are replaced by a no-op (DEBUG=rhea:* set before the
 * start still turns them on; `debug.enable()` afterwards does not). Once per process.
 */
export function quietDisabledRheaLogs(): void {
  if (logsQuieted) return;
  logsQuieted = true;
  const log = rheaInternalModule<Record<string, unknown>>('log');
  for (const [name, logger] of Object.entries(log)) {
    if (typeof logger === 'function' && !(logger as { enabled?: boolean }).enabled) log[name] = noLog;
  }
}

/** Installs every rhea patch above, once per process (each is idempotent). */
export function patchRhea(): void {
  captureRawMessages();
  keyLinksByRoleAndName();
  boundArrayDecoding();
  // Inside the range check: a disposition reaches the unsent-delivery guard only once its fields are uints.
  guardUnsentDeliveries();
  boundDispositionRanges();
  unzeroedRheaBuffers();
  releaseSentPayloads();
  notifySessionFlows();
  discardOversizedDeliveries();
  markTransfersBeyondCredit();
  routeRheaConsole();
  quietDisabledRheaLogs();
}
