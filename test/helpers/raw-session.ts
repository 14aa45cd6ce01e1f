// A hand-written AMQP session on top of raw-amqp.ts for admission tests: SASL ANONYMOUS or PLAIN (with a SASL
// hostname), an open naming a host, `$cbs` put-token and `$management` requests as raw transfers, with the
// session's delivery ids counted so that frames can be pipelined in one socket write.

import { createRequire } from 'node:module';
import { RawConn, frame, frames, header, type Seen } from './raw-amqp.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const require = createRequire(import.meta.url);
/** The client-side rhea (message encoding); stock rhea, never the broker's copy. */
const rhea = require('rhea') as Any;
const terminus = require('rhea/lib/terminus.js') as Any;

/** How a raw session logs in: SASL ANONYMOUS, or SASL PLAIN with a policy name, key and optional SASL hostname. */
export type Login = { anonymous: true } | { user: string; password: string; saslHost?: string };

/** The SASL header and init frame of `login`. */
export function saslLogin(login: Login): Buffer {
  const init =
    'anonymous' in login
      ? frames.sasl_init({ mechanism: 'ANONYMOUS', initial_response: Buffer.from('anonymous') })
      : frames.sasl_init({
          mechanism: 'PLAIN',
          initial_response: Buffer.from(`\0${login.user}\0${login.password}`),
          ...(login.saslHost ? { hostname: login.saslHost } : {}),
        });
  return Buffer.concat([header(3), frames.write_frame(frames.sasl_frame(init))]);
}

/** An AMQP message encoded by stock rhea. */
export function encode(msg: Record<string, unknown>): Buffer {
  return rhea.message.encode(msg) as Buffer;
}

/** A raw connection with one session on channel 0 and a counter of its delivery ids. */
export class RawSession {
  readonly conn: RawConn;
  private nextDelivery = 0;

  constructor(port: number) {
    this.conn = new RawConn(port);
  }

  /** The frames that log in, open (naming `host`) and begin the session. */
  start(login: Login, host = 'localhost'): Buffer {
    return Buffer.concat([
      saslLogin(login),
      header(0),
      frame(0, 'open', { container_id: 'raw-session', hostname: host, max_frame_size: 262_144 }),
      frame(0, 'begin', { next_outgoing_id: 0, incoming_window: 65_535, outgoing_window: 65_535 }),
    ]);
  }

  /** Attach of a client sender on `handle` to `target` (a terminus built by the caller, or an address). */
  attachSender(handle: number, target: string | Any, name = `s${handle}`): Buffer {
    return frame(0, 'attach', {
      name,
      handle,
      role: false,
      snd_settle_mode: 0,
      rcv_settle_mode: 0,
      source: terminus.source({ address: name }).described(),
      target: typeof target === 'string' ? terminus.target({ address: target }).described() : target,
      initial_delivery_count: 0,
    });
  }

  /** Attach of a client receiver on `handle` from `source`, with `target` as its address (a reply-to). */
  attachReceiver(handle: number, source: string, target: string, name = `r${handle}`): Buffer {
    return frame(0, 'attach', {
      name,
      handle,
      role: true,
      snd_settle_mode: 0,
      rcv_settle_mode: 0,
      source: terminus.source({ address: source }).described(),
      target: terminus.target({ address: target }).described(),
    });
  }

  /** A detach (closed) of `handle`. */
  detach(handle: number): Buffer {
    return frame(0, 'detach', { handle, closed: true });
  }

  /** Credit for a client receiver on `handle`. */
  flow(handle: number, credit: number): Buffer {
    return frame(0, 'flow', { next_incoming_id: 0, incoming_window: 65_535, next_outgoing_id: this.nextDelivery, outgoing_window: 65_535, handle, delivery_count: 0, link_credit: credit });
  }

  /** One whole unsettled transfer of `payload` on `handle`; returns the frame and its delivery id. */
  transfer(handle: number, payload: Buffer, extra: Record<string, unknown> = {}): { bytes: Buffer; id: number } {
    const id = this.nextDelivery++;
    const tag = Buffer.alloc(4);
    tag.writeUInt32BE(id);
    return { bytes: frame(0, 'transfer', { handle, delivery_id: id, delivery_tag: tag, message_format: 0, settled: false, ...extra }, payload), id };
  }

  /** `n` transfers of small messages with ids `${prefix}-0…`, concatenated for one write, and their delivery ids. */
  sends(handle: number, n: number, prefix: string, body: unknown = 'x'): { bytes: Buffer; ids: number[] } {
    const parts = Array.from({ length: n }, (_, i) => this.transfer(handle, encode({ message_id: `${prefix}-${i}`, body })));
    return { bytes: Buffer.concat(parts.map((p) => p.bytes)), ids: parts.map((p) => p.id) };
  }

  /** A `$cbs` put-token request on `handle`, replies to `replyTo`. */
  putToken(handle: number, token: string, audience: string, replyTo: string): { bytes: Buffer; id: number } {
    const msg = {
      message_id: `put-${this.nextDelivery}`,
      reply_to: replyTo,
      to: '$cbs',
      application_properties: { operation: 'put-token', type: 'servicebus.windows.net:sastoken', name: audience },
      body: token,
    };
    return this.transfer(handle, encode(msg));
  }

  /** The broker's disposition settling our delivery `id`, if it came. */
  disposition(id: number): Seen | undefined {
    return this.conn.seen.find((s) => s.name.includes('disposition') && s.fields.role === true && s.fields.first <= id && (s.fields.last ?? s.fields.first) >= id);
  }

  /** The broker's handle for the link named `name` (from its attach), if it answered. */
  brokerHandle(name: string): number | undefined {
    return this.conn.seen.find((s) => s.name.includes('attach') && s.fields.name === name)?.fields.handle;
  }

  /** The broker's detach of the link named `name`, if it came. */
  detached(name: string): Seen | undefined {
    const handle = this.brokerHandle(name);
    return handle === undefined ? undefined : this.conn.seen.find((s) => s.name.includes('detach') && s.fields.handle === handle);
  }

  /** The broker's flows for the link named `name`. */
  flows(name: string): Seen[] {
    const handle = this.brokerHandle(name);
    return this.conn.seen.filter((s) => s.name.includes('flow') && handle !== undefined && s.fields.handle === handle);
  }

  /** The broker's close frame, if it came. */
  closed(): Seen | undefined {
    return this.conn.seen.find((s) => s.name.includes('close'));
  }

  /** Application properties of the messages the broker sent on the link named `name` (`$cbs` / `$management` replies). */
  replies(name: string): Record<string, unknown>[] {
    const handle = this.brokerHandle(name);
    return this.conn.seen
      .filter((s) => s.name.includes('transfer') && handle !== undefined && s.fields.handle === handle && s.payload)
      .map((s) => (rhea.message.decode(s.payload) as { application_properties?: Record<string, unknown> }).application_properties ?? {});
  }
}

/** The name of a settled outcome (`accepted`, `rejected`, ...) and its error condition, as a disposition carries it. */
export function outcomeOf(d: Seen | undefined): { outcome: string; condition?: string } | undefined {
  if (!d) return undefined;
  const state = d.fields.state;
  const code = Number(state?.descriptor?.value);
  const names: Record<number, string> = { 0x24: 'accepted', 0x25: 'rejected', 0x26: 'released', 0x27: 'modified', 0x33: 'declared', 0x34: 'transactional-state' };
  const outcome = names[code] ?? String(code);
  const error = outcome === 'rejected' ? state.value?.[0]?.value : undefined;
  const condition = error ? String(error[0]?.value ?? '') : undefined;
  return condition ? { outcome, condition } : { outcome };
}

/** Polls `f` every 10 ms until it is truthy (at most `ms`). */
export async function waitFor<T>(f: () => T | undefined | false, ms = 3_000): Promise<T | undefined> {
  for (let i = 0; i < ms / 10; i++) {
    const v = f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  return undefined;
}
