// The frame guard's byte parser on its own: what reaches rhea, and what ends a connection or a link.

import { describe, expect, it } from 'vitest';
import { FrameGuard } from '../../src/amqp/frame-guard.js';
import { attachSender, frame, header, transfer } from '../helpers/raw-amqp.js';

function guard(opts: { saslDone?: boolean } = {}) {
  const forwarded: Buffer[] = [];
  const failures: string[] = [];
  const detached: string[] = [];
  const discarded: string[] = [];
  const dropped = { bytes: 0 };
  const g = new FrameGuard(
    { maxFrameSize: 4096, maxLinkTransferBytes: 10_000, maxConnTransferBytes: 15_000, channelMax: 7 },
    {
      forward: (b) => forwarded.push(Buffer.from(b)),
      closeWithError: () => true,
      detachLink: (ch, h, condition) => {
        detached.push(`${ch}/${h} ${condition}`);
        return true;
      },
      // Marks are recorded with the bytes forwarded so far: the frame that crossed the limit must not have gone yet.
      discardTransfer: (ch, h, n) => (n === 0 ? discarded.push(`${ch}/${h} after ${Buffer.concat(forwarded).length}`) : (dropped.bytes += n)),
      saslDone: () => opts.saslDone ?? true,
    },
    (condition) => failures.push(condition),
  );
  return { g, forwarded, failures, detached, discarded, dropped, bytes: () => Buffer.concat(forwarded) };
}

const open = Buffer.concat([header(0), frame(0, 'open', { container_id: 'x' })]);

describe('FrameGuard', () => {
  it('passes a valid stream through unchanged, however it is chunked', () => {
    const stream = Buffer.concat([open, attachSender(0, 'q'), transfer(0, 0, Buffer.alloc(100, 1), false)]);
    for (const step of [1, 3, 7, 64, stream.length]) {
      const t = guard();
      for (let i = 0; i < stream.length; i += step) t.g.push(stream.subarray(i, i + step));
      expect(t.bytes().equals(stream)).toBe(true);
      expect(t.failures).toEqual([]);
    }
  });

  it('refuses a TLS ClientHello on its first byte, and an unknown protocol id', () => {
    const tls = guard();
    tls.g.push(Buffer.from([0x16, 0x03, 0x01]));
    expect(tls.failures).toEqual(['amqp:connection:framing-error']);
    const id = guard();
    id.g.push(Buffer.from([0x41, 0x4d, 0x51, 0x50, 2, 1, 0, 0]));
    expect(id.failures).toEqual(['amqp:connection:framing-error']);
    expect(id.bytes().length).toBe(0);
  });

  it('refuses a declared frame size above the maximum without waiting for its bytes', () => {
    const t = guard();
    const hdr = Buffer.from([0x7f, 0xff, 0xff, 0xff, 2, 0, 0, 0]);
    t.g.push(Buffer.concat([open, hdr]));
    expect(t.failures).toEqual(['amqp:connection:framing-error']);
    expect(t.bytes().equals(open)).toBe(true);
    expect(t.g.bufferedBytes).toBe(0);
  });

  it('refuses channels beyond channel-max and a data offset below 2', () => {
    const ch = guard();
    ch.g.push(Buffer.concat([open, frame(8, 'end', {})]));
    expect(ch.failures).toEqual(['amqp:connection:framing-error']);
    const doff = guard();
    doff.g.push(Buffer.concat([open, Buffer.from([0, 0, 0, 8, 1, 0, 0, 0])]));
    expect(doff.failures).toEqual(['amqp:connection:framing-error']);
  });

  it('marks a delivery past the size limit for discarding, keeps the link, and still forwards its frames', () => {
    const t = guard();
    t.g.push(Buffer.concat([open, attachSender(0, 'q')]));
    const before = t.bytes().length;
    const frameLen = transfer(0, 0, Buffer.alloc(3000), true).length;
    // Five frames arrive in one read: the mark must land between the third and the fourth.
    t.g.push(Buffer.concat(Array.from({ length: 5 }, () => transfer(0, 0, Buffer.alloc(3000), true))));
    expect(t.detached).toEqual([]);
    expect(t.failures).toEqual([]);
    expect(t.discarded).toEqual([`0/0 after ${before + 3 * frameLen}`]);
    // rhea still sees every frame (it counts them for the session window); none is held by the guard's caps.
    expect(t.bytes().length - before).toBe(5 * frameLen);
    expect(t.g.transferBytes).toBe(0);
    t.g.push(transfer(0, 0, Buffer.alloc(10), false));
    // The next delivery on the same link is counted afresh and not discarded.
    for (let i = 0; i < 3; i++) t.g.push(transfer(0, 0, Buffer.alloc(3000), true));
    expect(t.discarded).toHaveLength(1);
    expect(t.g.transferBytes).toBe(3 * (frameLen - 8));
  });

  it('drops the payload of a discarded delivery as it arrives, however it is chunked, and forwards only headers', () => {
    const head = transfer(0, 0, Buffer.alloc(0), true).length;
    const next = transfer(0, 1, Buffer.alloc(500, 9), false);
    for (const step of [1, 7, 100, 1000, 4096]) {
      const t = guard();
      t.g.push(Buffer.concat([open, attachSender(0, 'q')]));
      for (let i = 0; i < 4; i++) t.g.push(transfer(0, 0, Buffer.alloc(3000), true));
      expect(t.discarded).toHaveLength(1);
      const before = t.bytes().length;
      // Three more frames of the discarded delivery, the last one ending it, then the link's next message.
      const rest = Buffer.concat([transfer(0, 0, Buffer.alloc(3000, 1), true), transfer(0, 0, Buffer.alloc(3000, 2), true), transfer(0, 0, Buffer.alloc(3000, 3), false), next]);
      for (let i = 0; i < rest.length; i += step) t.g.push(rest.subarray(i, i + step));
      const out = t.bytes().subarray(before);
      // Frames that arrived whole go through whole; the others reach rhea as header and performative only.
      expect(out.subarray(out.length - next.length).equals(next)).toBe(true);
      expect(out.length - next.length + t.dropped.bytes).toBe(rest.length - next.length);
      expect(t.failures).toEqual([]);
      expect(t.g.transferBytes).toBe(0);
      expect(t.g.bufferedBytes).toBeLessThan(600);
      if (step < 3000) expect(out.length - next.length).toBe(3 * head);
    }
  });

  it('caps unfinished transfers per connection across links', () => {
    const t = guard();
    t.g.push(Buffer.concat([open, attachSender(0, 'a'), attachSender(1, 'b')]));
    for (let i = 0; i < 3; i++) t.g.push(transfer(0, 0, Buffer.alloc(3000), true));
    for (let i = 0; i < 3; i++) t.g.push(transfer(1, 1, Buffer.alloc(3000), true));
    expect(t.detached).toEqual(['0/1 amqp:resource-limit-exceeded']);
  });

  it('holds bytes after the AMQP header until rhea has finished SASL', async () => {
    let done = false;
    const forwarded: Buffer[] = [];
    const g = new FrameGuard(
      { maxFrameSize: 4096, maxLinkTransferBytes: 10_000, maxConnTransferBytes: 15_000, channelMax: 7 },
      { forward: (b) => forwarded.push(Buffer.from(b)), closeWithError: () => true, detachLink: () => true, discardTransfer: () => undefined, saslDone: () => done },
      () => undefined,
    );
    const sasl = Buffer.concat([header(3), Buffer.from([0, 0, 0, 8, 2, 1, 0, 0])]);
    g.push(Buffer.concat([sasl, open]));
    expect(Buffer.concat(forwarded).equals(sasl)).toBe(true);
    done = true;
    await new Promise((r) => setTimeout(r, 20));
    expect(Buffer.concat(forwarded).equals(Buffer.concat([sasl, open]))).toBe(true);
  });
});
