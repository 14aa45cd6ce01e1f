// The slice of rhea's runtime objects this layer touches. rhea's bundled typings omit several fields the
// server side needs (local/remote attach frames, delivery ids, flow accounting), so they are declared here.

import { createRequire } from 'node:module';
import rhea from 'rhea';

/** A decoded AMQP message as rhea represents it. */
export interface RheaMessage {
  message_id?: unknown;
  correlation_id?: unknown;
  reply_to?: string;
  to?: string;
  application_properties?: Record<string, unknown>;
  body?: unknown;
  [k: string]: unknown;
}

/** A terminus (source or target) as rhea unwraps it. */
export interface Terminus {
  address?: string;
  filter?: Record<string, unknown>;
  [k: string]: unknown;
}

/** An attach performative. */
export interface AttachFrame {
  name: string;
  source?: Terminus | null;
  target?: Terminus | null;
  snd_settle_mode?: number;
  rcv_settle_mode?: number;
  max_message_size?: number;
  properties?: Record<string, unknown>;
  initial_delivery_count?: number;
}

/** A delivery, incoming or outgoing. */
export interface RheaDelivery {
  id: number;
  tag: Buffer;
  format?: number;
  settled: boolean;
  remote_settled: boolean;
  remote_state?: Record<string, unknown> & { constructor?: { composite_type?: string } };
  update(settled: boolean, state?: unknown): void;
  accept?(): void;
}

/** What senders and receivers share. */
export interface RheaLink {
  name: string;
  options: Record<string, unknown>;
  local: { attach: AttachFrame };
  remote: { attach: AttachFrame };
  session: RheaSession;
  connection: RheaConnection;
  set_source(t: unknown): void;
  set_target(t: unknown): void;
  is_open(): boolean;
  close(error?: { condition: string; description: string }): void;
  is_sender(): boolean;
}

/** Our end of a link on which the broker sends. */
export interface RheaSender extends RheaLink {
  credit: number;
  delivery_count: number;
  _draining: boolean;
  _drained: boolean;
  issue_flow: boolean;
  send(msg: unknown, tag?: Buffer, format?: number): RheaDelivery;
  set_drained(d: boolean): void;
  _get_drain(): boolean;
}

/** Our end of a link on which the broker receives. */
export type RheaReceiver = RheaLink;

/** An AMQP session. */
export interface RheaSession {
  outgoing: { deliveries: { available(): number } };
}

/** An AMQP connection. */
export interface RheaConnection {
  options: { id?: string };
  socket?: { remoteAddress?: string; remotePort?: number };
  close(error?: { condition: string; description: string }): void;
  is_open(): boolean;
}

/** The callback context rhea passes to event handlers. */
export interface RheaContext {
  connection: RheaConnection;
  sender?: RheaSender;
  receiver?: RheaReceiver;
  delivery?: RheaDelivery;
  message?: RheaMessage | Buffer;
  format?: number;
  error?: unknown;
}

/** rhea's message module (outcome constructors and the codec). */
export const amqpMessage = rhea.message as unknown as {
  encode(m: unknown): Buffer;
  decode(b: Buffer): RheaMessage;
  accepted(): { described(): unknown };
  rejected(o: unknown): { described(): unknown };
  modified(o: unknown): { described(): unknown };
};

/** rhea's type wrappers used to give response values their exact AMQP types. */
export const amqpTypes = rhea.types as unknown as {
  wrap_array(l: unknown[], code: number, descriptors?: unknown): unknown;
  wrap_timestamp(n: number): unknown;
  wrap_long(n: number): unknown;
  wrap_map(m: Record<string, unknown>): unknown;
  wrap_list(l: unknown[]): unknown;
  wrap_uuid(b: Buffer): unknown;
  wrap_binary(b: Buffer): unknown;
  wrap_string(s: string): unknown;
  wrap_int(n: number): unknown;
};

/** The raw bytes of a format-0 message, captured by `captureRawMessages`. */
export const RAW = Symbol('peeklock.raw');

let captured = false;

/**
 * rhea decodes format-0 transfers inside its session code and drops the bytes. Storing a re-encoded copy
 * would change AMQP types (ulong → uint, symbol → string), so the decoder is wrapped once per process to
 * keep the original bytes beside the decoded message (non-enumerable, so nothing else sees it).
 */
export function captureRawMessages(): void {
  if (captured) return;
  captured = true;
  const m = rhea.message as unknown as { decode(b: Buffer): object };
  const original = m.decode.bind(m);
  m.decode = (b: Buffer) => {
    const msg = original(b);
    Object.defineProperty(msg, RAW, { value: b, enumerable: false });
    return msg;
  };
}

let linksKeyed = false;

/**
 * rhea keys a session's links by name alone, but AMQP link names are unique per direction: Qpid Proton names
 * a sender and a receiver on one address identically, and rhea then throws "Attach already received" and
 * drops the connection (rhea-and-peers.md). Re-key them by (role, name), once per process.
 */
export function keyLinksByRoleAndName(): void {
  if (linksKeyed) return;
  linksKeyed = true;
  const require = createRequire(import.meta.url);
  const Session = require('rhea/lib/session.js') as { prototype: Record<string, unknown> };
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

/** Most elements a zero-width AMQP array (nulls, booleans, uint0…) may declare before it is refused. */
const MAX_ZERO_WIDTH_ARRAY = 65_536;

let arraysBounded = false;

/**
 * rhea's decoder trusts declared element counts. An array's elements share one constructor, so elements of
 * a zero-width type (null, true, uint0, …) take no bytes, and fixed-width types rhea reads by slicing
 * (uuid, decimals) do not fail past the end of the frame: a 10-byte frame can declare 4 billion of them and
 * hold the event loop — every connection stalls — while rhea builds them (found by the frame fuzzer, T11).
 * Refuse counts the frame's remaining bytes cannot hold, and zero-width arrays past a sane size; once per
 * process.
 */
export function boundArrayDecoding(): void {
  if (arraysBounded) return;
  arraysBounded = true;
  type Reader = { remaining(): number };
  const proto = (rhea.types as unknown as { Reader: { prototype: Record<string, unknown> } }).Reader.prototype;
  const items = proto.read_array_items as (this: Reader, n: number, type: { width?: number }) => unknown[];
  proto.read_array_items = function (this: Reader, n: number, type: { width?: number }) {
    const width = type.width ?? 0;
    if (width === 0 ? n > MAX_ZERO_WIDTH_ARRAY : n * width > this.remaining()) {
      throw new TypeError(`an AMQP array declaring ${n} elements was refused: the frame cannot hold them`);
    }
    return items.call(this, n, type);
  };
  // List and map items carry a constructor byte each, so a count beyond the remaining bytes is a lie too.
  const readN = proto.read_n as (this: Reader, n: number) => unknown[];
  proto.read_n = function (this: Reader, n: number) {
    if (n > this.remaining()) throw new TypeError(`an AMQP list or map declaring ${n} items was refused`);
    return readN.call(this, n);
  };
}

/** Widest delivery-id range one disposition may name: more than any session can have unsettled. */
const MAX_DISPOSITION_RANGE = 65_536;

let dispositionsBounded = false;

/**
 * rhea walks a disposition's delivery-id range one id at a time, so `first = 0, last = 4 billion` in a single
 * frame held the event loop for seconds and stalled every connection (found by the T11 fuzzer, from the
 * broker's CPU profile). No session has that many deliveries outstanding, so the range is clamped; ids
 * outside it could not name a delivery anyway. Once per process.
 */
export function boundDispositionRanges(): void {
  if (dispositionsBounded) return;
  dispositionsBounded = true;
  const require = createRequire(import.meta.url);
  const Session = require('rhea/lib/session.js') as { prototype: Record<string, unknown> };
  type Frame = { performative: { first: number; last?: number | null } };
  const original = Session.prototype.on_disposition as (this: unknown, f: Frame) => void;
  Session.prototype.on_disposition = function (this: unknown, frame: Frame) {
    const p = frame.performative;
    if (typeof p.last === 'number' && typeof p.first === 'number' && p.last - p.first > MAX_DISPOSITION_RANGE) {
      p.last = p.first + MAX_DISPOSITION_RANGE;
    }
    return original.call(this, frame);
  };
}
