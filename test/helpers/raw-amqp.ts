// Hand-built AMQP 1.0 byte streams for hostile-input tests: protocol headers and frames encoded with rhea's
// own frame codec, sent on a plain TCP socket, and a reader that decodes what the broker answers.

import net from 'node:net';
import { createRequire } from 'node:module';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const require = createRequire(import.meta.url);
/** rhea's frame codec (not part of its public API, but stable across 3.x). */
export const frames = require('rhea/lib/frames.js') as Any;
/** rhea's terminus codec: sources and targets are described lists, not plain maps. */
const terminus = require('rhea/lib/terminus.js') as Any;

/** An 8-byte protocol header: "AMQP", protocol id, 1.0.0. */
export function header(id: 0 | 3): Buffer {
  return Buffer.from([0x41, 0x4d, 0x51, 0x50, id, 1, 0, 0]);
}

/** SASL PLAIN login with the default root policy. */
export function saslPlain(user = 'RootManageSharedAccessKey', password = 'SAS_KEY_VALUE'): Buffer {
  const init = frames.sasl_init({ mechanism: 'PLAIN', initial_response: Buffer.from(`\0${user}\0${password}`) });
  return frames.write_frame(frames.sasl_frame(init));
}

/** One AMQP frame with a performative built by rhea (`name` is open, begin, attach, transfer, ...). */
export function frame(channel: number, name: string, fields: Record<string, unknown>, payload?: Buffer): Buffer {
  return frames.write_frame(frames.amqp_frame(channel, frames[name](fields), payload));
}

/** Header, SASL PLAIN, header, open and begin on channel 0: the prefix of a logged-in session. */
export function loginPrefix(maxFrame = 262_144): Buffer {
  return Buffer.concat([
    header(3),
    saslPlain(),
    header(0),
    frame(0, 'open', { container_id: 'raw', max_frame_size: maxFrame }),
    frame(0, 'begin', { next_outgoing_id: 0, incoming_window: 2048, outgoing_window: 2048 }),
  ]);
}

/** Attach of a client sender (role false) on handle `handle` to `address`. */
export function attachSender(handle: number, address: string): Buffer {
  return frame(0, 'attach', {
    name: `raw-${handle}`,
    handle,
    role: false,
    snd_settle_mode: 0,
    rcv_settle_mode: 0,
    source: terminus.source({ address: `raw-${handle}` }).described(),
    target: terminus.target({ address }).described(),
    initial_delivery_count: 0,
  });
}

/** Attach of a client receiver (role true) on handle `handle` from `address` (e.g. the `$cbs` reply link). */
export function attachReceiver(handle: number, address: string): Buffer {
  return frame(0, 'attach', {
    name: `raw-r${handle}`,
    handle,
    role: true,
    source: terminus.source({ address }).described(),
    target: terminus.target({}).described(),
  });
}

/** A transfer frame on channel 0. */
export function transfer(handle: number, deliveryId: number, payload: Buffer, more: boolean): Buffer {
  return frame(0, 'transfer', { handle, delivery_id: deliveryId, delivery_tag: Buffer.from([deliveryId & 0xff]), message_format: 0, more }, payload);
}

/** A decoded frame from the broker: performative name and fields. */
export interface Seen {
  name: string;
  fields: Any;
  /** The frame's payload (a transfer's message bytes), if it had one. */
  payload?: Buffer;
}

/** A raw TCP connection that records and decodes the broker's frames. */
export class RawConn {
  readonly socket: net.Socket;
  readonly seen: Seen[] = [];
  closed = false;
  closedAt = 0;
  private inbuf = Buffer.alloc(0);

  constructor(port: number) {
    this.socket = net.connect({ host: '127.0.0.1', port });
    this.socket.on('error', () => undefined);
    this.socket.on('data', (b: Buffer) => this.read(b));
    this.socket.on('close', () => {
      this.closed = true;
      this.closedAt = Date.now();
    });
  }

  /** Resolves once connected (or after `timeoutMs`). */
  ready(timeoutMs = 5_000): Promise<boolean> {
    if (!this.socket.connecting) return Promise.resolve(!this.closed);
    return new Promise((r) => {
      const t = setTimeout(() => r(false), timeoutMs);
      this.socket.once('connect', () => {
        clearTimeout(t);
        r(true);
      });
    });
  }

  /** Writes bytes; resolves when the socket accepted them (respecting back-pressure). */
  write(b: Buffer): Promise<void> {
    return new Promise((r) => {
      if (this.closed || this.socket.destroyed) return r();
      if (this.socket.write(b)) return r();
      // A socket the broker closes never drains: stop waiting on close too.
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        r();
      };
      this.socket.once('drain', done);
      this.socket.once('close', done);
    });
  }

  /** The first frame with this performative name, if seen. */
  find(name: string): Seen | undefined {
    return this.seen.find((s) => s.name === name);
  }

  destroy(): void {
    this.socket.destroy();
  }

  private read(b: Buffer): void {
    // Keep only a bounded window: a broker that floods us must not grow the test process.
    this.inbuf = Buffer.concat([this.inbuf, b]);
    for (let i = 0; i < 1000 && this.inbuf.length >= 8; i++) {
      if (this.inbuf.readUInt32BE(0) === 0x414d5150) {
        this.inbuf = this.inbuf.subarray(8);
        continue;
      }
      const size = this.inbuf.readUInt32BE(0);
      if (size < 8 || this.inbuf.length < size) break;
      try {
        const f = frames.read_frame(this.inbuf.subarray(0, size));
        if (f.performative) {
          const seen: Seen = { name: String(f.performative.constructor).split('#')[0]!, fields: f.performative };
          if (f.payload?.length) seen.payload = Buffer.from(f.payload);
          this.seen.push(seen);
        }
      } catch {
        this.seen.push({ name: 'undecodable', fields: null });
      }
      this.inbuf = this.inbuf.subarray(size);
    }
    if (this.inbuf.length > 1 << 20) this.inbuf = Buffer.alloc(0);
  }
}
