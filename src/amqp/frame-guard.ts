// A byte-level guard in front of rhea. rhea trusts the frame size a peer declares and buffers multi-frame
// transfers without limit (docs/architecture.md, "Living with rhea"), so every byte a client sends passes through here
// first: the protocol header is checked, frames are cut at their declared size (refused above the
// configured maximum instead of buffered), a delivery that grows past the message size limit is read and
// dropped to its end and then refused (the link stays up), unfinished multi-frame transfers are capped per
// connection, performatives rhea would act on in ways the guard cannot follow are refused (frame-fields.ts),
// and only whole frames reach rhea. Violations end the connection with an AMQP error where the AMQP layer is
// up, with our protocol header or a TCP close where it is not — never an exception. Errors rhea itself hits
// while reading (decode bombs refused by rhea-patches.ts, among others) get an AMQP close too.

import { listEnd, listFields, performative, wrongType } from './frame-fields.js';
import { linkKey as key } from './rhea-types.js';

/** Protocol id 3 (SASL) header: what we send back to a client that spoke something else (AMQP 1.0 §2.2). */
export const SASL_HEADER = Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0]);
const AMQP = 0x414d5150; // "AMQP" read as a big-endian uint32

// Performative descriptor codes (AMQP 1.0 §2.7).
const OPEN = 0x10;
const ATTACH = 0x12;
const TRANSFER = 0x14;
const DISPOSITION = 0x15;
const DETACH = 0x16;
const END = 0x17;
const CLOSE = 0x18;

/** What the guard reports to its owner. */
export interface FrameGuardHooks {
  /** Hands whole frames (or protocol headers) to rhea. */
  forward(bytes: Buffer): void;
  /** Ends the connection with an AMQP close carrying this error; false if the AMQP layer is not up yet. */
  closeWithError(condition: string, description: string): boolean;
  /** Detaches one link with this error (unfinished transfers on the connection grew past the cap). */
  detachLink(channel: number, handle: number, condition: string, description: string): boolean;
  /**
   * The link's current delivery is larger than the broker takes: from this frame on rhea counts and drops its
   * frames, and refuses it with amqp:link:message-size-exceeded after its last one (rhea-patches.ts). Called
   * again with the payload bytes of each of its frames the guard dropped itself (forwarding only the header).
   */
  discardTransfer(channel: number, handle: number, droppedBytes: number): void;
  /** Whether rhea's SASL layer has sent its outcome and now reads AMQP frames. */
  saslDone(): boolean;
}

/** How long bytes after the AMQP header wait for rhea's SASL outcome (it is decided a microtask later). */
const SASL_WAIT_MS = 2_000;

/** The part of the limits the byte parser needs, plus the per-link transfer cap derived from them. */
export interface FrameGuardLimits {
  maxFrameSize: number;
  /** Bytes one delivery may reach before it is discarded and refused (the message size limit plus a frame). */
  maxLinkTransferBytes: number;
  /** Bytes all unfinished deliveries of the connection may hold together. */
  maxConnTransferBytes: number;
  channelMax: number;
  /** Pass only open and close performatives (a connection over the connection cap being refused). */
  openOnly?: boolean;
}

/** Parses the incoming byte stream of one connection and enforces the limits; see the file comment. */
export class FrameGuard {
  private phase: 'header' | 'sasl' | 'amqp' | 'failed' = 'header';
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes needed before parsing can progress (a header, a frame header, or a whole frame). */
  private need = 8;
  /** Unfinished multi-frame transfers: bytes so far by channel/handle key. */
  private readonly open = new Map<number, number>();
  private openTotal = 0;
  /** Links detached over the connection cap: their remaining frames are dropped until the transfer ends. */
  private readonly dropping = new Set<number>();
  /** Links whose delivery is over the size limit: rhea counts and drops its frames until it ends. */
  private readonly discarding = new Set<number>();
  /** Payload bytes of a discarded delivery's frame still to arrive; they are dropped as they are read. */
  private skip = 0;
  /** Set while bytes after the second protocol header wait for rhea's SASL outcome. */
  private holdUntil = 0;

  constructor(
    private readonly limits: FrameGuardLimits,
    private readonly hooks: FrameGuardHooks,
    private readonly onFail: (condition: string, description: string, amqpUp: boolean) => void,
  ) {}

  /** True once the guard has ended the connection. */
  get failed(): boolean {
    return this.phase === 'failed';
  }

  /** Bytes the guard holds for an incomplete frame (bounded by the max frame size). */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /** Bytes of unfinished multi-frame transfers rhea holds for this connection, as counted here. */
  get transferBytes(): number {
    return this.openTotal;
  }

  /** Feeds bytes read from the socket. */
  push(chunk: Buffer): void {
    if (this.phase === 'failed') return;
    if (this.skip > 0) {
      const n = Math.min(this.skip, chunk.length);
      this.skip -= n;
      if (n === chunk.length) return;
      chunk = chunk.subarray(n);
    }
    if (this.phase === 'header' && !this.headerPrefixOk(chunk)) {
      return this.fail('amqp:connection:framing-error', 'Not an AMQP 1.0 protocol header.');
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.holdUntil) {
      if (this.buffered > this.limits.maxFrameSize) this.fail('amqp:connection:framing-error', 'Too many bytes before the SASL outcome.');
      return;
    }
    this.drain();
  }

  private drain(): void {
    if (this.buffered < this.need) return;
    const data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [];
    this.buffered = 0;
    const rest = this.parse(data);
    if (rest && !this.failed) {
      // Copy a small tail so a large read buffer is not kept alive by it.
      const tail = rest.length < 4096 ? Buffer.from(rest) : rest;
      this.chunks.push(tail);
      this.buffered = tail.length;
    }
  }

  // Re-checks every few ms (bounded by SASL_WAIT_MS) whether rhea has finished SASL, then resumes parsing.
  private hold(): void {
    this.holdUntil ||= Date.now() + SASL_WAIT_MS;
    setTimeout(() => {
      if (this.failed) return;
      if (this.hooks.saslDone()) {
        this.holdUntil = 0;
        this.need = 8;
        return this.drain();
      }
      if (Date.now() > this.holdUntil) return this.fail('amqp:unauthorized-access', 'SASL did not complete.');
      this.hold();
    }, 1).unref();
  }

  /** Ends the connection with an error (also used by the owner for deadlines). */
  fail(condition: string, description: string): void {
    if (this.phase === 'failed') return;
    const amqpUp = this.phase === 'amqp';
    this.phase = 'failed';
    this.chunks = [];
    this.buffered = 0;
    this.onFail(condition, description, amqpUp);
  }

  // Bytes of a header seen so far must spell "AMQP": a TLS ClientHello (0x16 0x03 ...) or an HTTP request
  // is refused on its first read instead of waiting for 8 bytes that may never come.
  private headerPrefixOk(chunk: Buffer): boolean {
    const have = this.buffered;
    for (let i = 0; i + have < 4 && i < chunk.length; i++) {
      if (chunk[i] !== SASL_HEADER[i + have]) return false;
    }
    return true;
  }

  /** Cuts `data` into headers and frames; forwards what passes; returns the unparsed tail, if any. */
  private parse(data: Buffer): Buffer | null {
    let off = 0;
    let from = 0; // start of the run of bytes not yet forwarded
    const flush = (end: number): void => {
      if (end > from) this.hooks.forward(data.subarray(from, end));
      from = end;
    };
    // Each pass consumes at least 8 bytes or stops, so the loop is bounded by data.length / 8.
    while (this.phase !== 'failed') {
      const left = data.length - off;
      const headerNext = this.phase === 'header' || (this.phase === 'sasl' && left >= 4 && data.readUInt32BE(off) === AMQP);
      if (headerNext) {
        if (left < 8) {
          this.need = 8;
          break;
        }
        // rhea decides the SASL outcome a microtask after the init frame; bytes it reads before that are
        // taken for a frame of size "AMQP" (1.1 GB) and buffered without end. Hold them until it is done.
        flush(off);
        if (this.phase === 'sasl' && !this.hooks.saslDone()) {
          this.hold();
          return data.subarray(off);
        }
        const problem = this.header(data, off);
        if (problem) {
          flush(off);
          this.fail('amqp:connection:framing-error', problem);
          return null;
        }
        off += 8;
        continue;
      }
      if (left < 8) {
        this.need = 8;
        break;
      }
      const size = data.readUInt32BE(off);
      const doff = data[off + 4]!;
      const type = data[off + 5]!;
      const channel = data.readUInt16BE(off + 6);
      const problem = this.frameHeader(size, doff, type, channel);
      if (problem) {
        flush(off);
        this.fail('amqp:connection:framing-error', problem);
        return null;
      }
      if (left < size) {
        const head = this.phase === 'amqp' ? this.discardedHead(data.subarray(off + doff * 4, data.length), channel) : -1;
        if (head <= 0) {
          // Not a discarded delivery's frame (or its performative is still incomplete): wait for all of it.
          this.need = head === 0 ? Math.min(size, doff * 4 + PEEK_BYTES) : size;
          break;
        }
        // A frame of a delivery being discarded: rhea gets its header and performative now, and the payload
        // is dropped as it arrives, never assembled (a 100 MB message is not buffered here either).
        flush(off);
        const cut = Buffer.from(data.subarray(off, off + doff * 4 + head));
        cut.writeUInt32BE(cut.length, 0);
        this.inspect(cut.subarray(doff * 4), channel, head);
        const fields = listFields(cut.subarray(doff * 4), performative(cut.subarray(doff * 4))!.list, 1)!;
        this.hooks.discardTransfer(channel, fields[0] as number, size - cut.length);
        this.hooks.forward(cut);
        this.skip = size - left;
        off = from = data.length;
        this.need = 8;
        break;
      }
      const verdict = this.inspect(data.subarray(off + doff * 4, off + size), channel, size - doff * 4);
      if (verdict !== 'pass') {
        // Everything before this frame reaches rhea first, so a verdict acts on this frame, not earlier ones.
        flush(off);
        if (typeof verdict === 'object') verdict.before();
        else {
          from = off + size;
          if (verdict !== 'drop') verdict();
        }
      }
      off += size;
    }
    if (this.phase === 'failed') return null;
    flush(off);
    this.need = Math.max(this.need, 8);
    return off < data.length ? data.subarray(off) : null;
  }

  // "AMQP" + protocol id + 1.0.0. Id 3 (SASL) first; id 0 (AMQP) after SASL, or first if rhea is to refuse it.
  private header(data: Buffer, off: number): string | null {
    if (data.readUInt32BE(off) !== AMQP) return 'Not an AMQP 1.0 protocol header.';
    const id = data[off + 4]!;
    if (data[off + 5] !== 1 || data[off + 6] !== 0 || data[off + 7] !== 0) return 'Only AMQP 1.0.0 is supported.';
    if (id === 3 && this.phase === 'header') this.phase = 'sasl';
    else if (id === 0) this.phase = 'amqp';
    else return `Protocol id ${id} is not supported here.`;
    return null;
  }

  private frameHeader(size: number, doff: number, type: number, channel: number): string | null {
    if (size < 8 || doff < 2 || doff * 4 > size) return `Malformed frame header (size ${size}, doff ${doff}).`;
    if (size > this.limits.maxFrameSize) {
      return `Frame size ${size} exceeds the maximum frame size ${this.limits.maxFrameSize}.`;
    }
    const expected = this.phase === 'sasl' ? 1 : 0;
    if (type !== expected) return `Frame type ${type} is not allowed here.`;
    if (this.phase === 'amqp' && channel > this.limits.channelMax) {
      return `Channel ${channel} exceeds channel-max ${this.limits.channelMax}.`;
    }
    return null;
  }

  // Looks at a frame's performative: refuses one it cannot read as rhea would, tracks unfinished transfers
  // and refuses the one that overflows, and refuses dispositions whose delivery-id range rhea would walk
  // from a coerced value.
  private inspect(body: Buffer, channel: number, bodyLen: number): Verdict {
    if (this.phase !== 'amqp' || bodyLen === 0) return 'pass'; // SASL frame or heartbeat
    const perf = performative(body);
    // rhea also dispatches a uint or string descriptor and a described array or map, where this guard would
    // see no transfer to count (rhea reads `more` from any truthy value): refuse what it cannot read.
    if (!perf) {
      const why = 'A frame body must be a list described by a performative ulong or symbol.';
      return () => this.fail('amqp:decode-error', why);
    }
    const { code, list } = perf;
    if (this.limits.openOnly) return code === OPEN || code === CLOSE ? 'pass' : 'drop';
    if (code === TRANSFER) return this.transfer(body, list, channel, bodyLen);
    if (code === DISPOSITION) {
      // rhea walks `for (i = first; i <= (last || first); i++)` on the decoded values: a null first counts
      // from 0, a timestamp or string last coerces past any uint — billions of steps in one frame (fuzzer
      // seed 541995). Both are uints by the spec (AMQP 1.0 §2.7.6); rhea-patches.ts clamps the range of valid ones.
      const f = listFields(body, list, 3);
      if (!f || typeof f[1] !== 'number' || wrongType(f, 2, 'number')) {
        return () => this.fail('amqp:decode-error', 'A disposition needs a uint first and a null or uint last.');
      }
    } else if (code === ATTACH || code === DETACH) {
      const fields = listFields(body, list, 1);
      if (fields && typeof fields[0] === 'number') this.forget(key(channel, fields[0]));
    } else if (code === END) {
      for (const k of [...this.open.keys(), ...this.dropping, ...this.discarding]) if (k >>> 16 === channel) this.forget(k);
    }
    return 'pass';
  }

  private transfer(body: Buffer, list: number, channel: number, bodyLen: number): Verdict {
    const f = listFields(body, list, 10);
    // A handle that is not a uint, or a `more` that is not a boolean, would escape the transfer caps: rhea
    // takes any truthy `more` as "more to come".
    if (!f || typeof f[0] !== 'number' || wrongType(f, 5, 'boolean')) {
      return () => this.fail('amqp:decode-error', 'A transfer needs a uint handle and a boolean more.');
    }
    const k = key(channel, f[0]);
    const more = f[5] === true && f[9] !== true; // an aborted transfer ends it
    if (this.discarding.has(k)) {
      if (!more) this.discarding.delete(k);
      return 'pass';
    }
    if (this.dropping.has(k)) {
      if (!more) this.dropping.delete(k);
      return 'drop';
    }
    if (!more) {
      this.forget(k);
      return 'pass';
    }
    const bytes = (this.open.get(k) ?? 0) + bodyLen;
    const handle = f[0];
    if (bytes > this.limits.maxLinkTransferBytes) {
      // Larger than any message the broker takes: Service Bus refuses it with message-size-exceeded and the
      // link stays up, so the rest is read and dropped, never held (rhea-patches.ts), and refused at its end.
      this.forget(k);
      this.discarding.add(k);
      return { before: () => this.hooks.discardTransfer(channel, handle, 0) };
    }
    this.open.set(k, bytes);
    this.openTotal += bodyLen;
    if (this.openTotal <= this.limits.maxConnTransferBytes) return 'pass';
    // Many links each short of the size limit: the connection's unfinished transfers are capped together.
    const c = 'amqp:resource-limit-exceeded';
    const d = `Unfinished transfers on this connection exceed ${this.limits.maxConnTransferBytes} bytes.`;
    this.forget(k);
    this.dropping.add(k);
    return () => {
      if (!this.hooks.detachLink(channel, handle, c, d)) this.fail(c, d);
    };
  }

  /**
   * For a frame that has begun to arrive: the length of its performative if it is a transfer of a delivery
   * being discarded and the performative is complete in `body`; 0 if that cannot be told yet; -1 otherwise.
   */
  private discardedHead(body: Buffer, channel: number): number {
    if (!this.discarding.size) return -1;
    const perf = performative(body);
    if (!perf) return body.length < PEEK_BYTES ? 0 : -1;
    if (perf.code !== TRANSFER) return -1;
    const f = listFields(body, perf.list, 1);
    if (!f) return body.length < PEEK_BYTES ? 0 : -1;
    if (typeof f[0] !== 'number' || !this.discarding.has(key(channel, f[0]))) return -1;
    const end = listEnd(body, perf.list);
    if (end === null) return -1;
    return end <= body.length ? end : end <= PEEK_BYTES ? 0 : -1;
  }

  private forget(k: number): void {
    this.openTotal -= this.open.get(k) ?? 0;
    this.open.delete(k);
    this.dropping.delete(k);
    this.discarding.delete(k);
  }
}

/** Bytes of a frame's start enough to hold a transfer performative (delivery tags are at most 32 bytes). */
const PEEK_BYTES = 512;

/** What the guard does with one frame: forward it, drop it, act instead of forwarding, or act then forward. */
type Verdict = 'pass' | 'drop' | (() => void) | { before: () => void };
