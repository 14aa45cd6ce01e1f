// The slice of rhea's runtime objects this layer touches. rhea's bundled typings omit several fields the
// server side needs (local/remote attach frames, delivery ids, flow accounting), so they are declared here.

import rhea from './rhea.js';

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

/**
 * Our end of a link on which the broker sends: its public API only. The credit and drain fields rhea keeps on it are
 * read through rhea.ts (`grantedLimit`, `drainRequested`).
 */
export interface RheaSender extends RheaLink {
  send(msg: unknown, tag?: Buffer, format?: number): RheaDelivery;
  set_drained(d: boolean): void;
}

/** Our end of a link on which the broker receives. */
export type RheaReceiver = RheaLink;

/** An AMQP session, opaque here: its outgoing side is read through rhea.ts (`sessionOutgoingRoom`). */
export type RheaSession = object;

/** An AMQP connection. */
export interface RheaConnection {
  options: { id?: string };
  /** The peer's open performative, once received (its container id names the client). */
  remote?: { open?: { container_id?: string } };
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
  released(): { described(): unknown };
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

/** The raw bytes of a format-0 message, captured by `captureRawMessages` (raw-transfers.ts). */
export const RAW = Symbol('peeklock.raw');

/**
 * Property of a rhea connection: the links (keyed by {@link linkKey}) whose current incoming delivery the
 * frame guard found larger than the broker takes, with the payload bytes the guard dropped itself;
 * rhea-patches.ts discards the frames rhea sees instead of buffering them.
 */
export const DISCARD = Symbol('peeklock.discardTransfers');

/** Property of an incoming rhea delivery whose frames were discarded for its size: its payload bytes. */
export const OVERSIZED = Symbol('peeklock.oversized');

/** One number for a link as the peer numbers it: remote channel and remote handle (folded to 16 bits). */
export function linkKey(channel: number, handle: number): number {
  // Handles above 2^16 are legal but never used by sane peers; folding keeps the key a small integer.
  return channel * 65_536 + (handle % 65_536);
}
