// The frame guard's byte parser on its own: what reaches rhea, and what ends a connection or a link.

import { describe, expect, it } from 'vitest';
import { FrameGuard } from '../../src/amqp/frame-guard.js';
import { attachSender, frame, header, transfer } from '../helpers/raw-amqp.js';

function guard(opts: { saslDone?: boolean } = {}) {
  const forwarded: Buffer[] = [];
  const failures: string[] = [];
  const detached: string[] = [];
  const g = new FrameGuard(
    { maxFrameSize: 4096, maxLinkTransferBytes: 10_000, maxConnTransferBytes: 15_000, channelMax: 7 },
    {
      forward: (b) => forwarded.push(Buffer.from(b)),
      closeWithError: () => true,
      detachLink: (ch, h, condition) => {
        detached.push(`${ch}/${h} ${condition}`);
        return true;
      },
      saslDone: () => opts.saslDone ?? true,
    },
    (condition) => failures.push(condition),
  );
  return { g, forwarded, failures, detached, bytes: () => Buffer.concat(forwarded) };
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

  it('detaches a link whose unfinished transfer passes the per-link cap and drops the rest of it', () => {
    const t = guard();
    t.g.push(Buffer.concat([open, attachSender(0, 'q')]));
    const before = t.bytes().length;
    for (let i = 0; i < 5; i++) t.g.push(transfer(0, 0, Buffer.alloc(3000), true));
    expect(t.detached).toEqual(['0/0 amqp:link:message-size-exceeded']);
    // Three frames (about 9 KB) went through; the fourth crossed 10,000 bytes and it and the fifth were dropped.
    const passed = t.bytes().length - before;
    expect(passed).toBe(3 * transfer(0, 0, Buffer.alloc(3000), true).length);
    t.g.push(transfer(0, 0, Buffer.alloc(10), false));
    expect(t.bytes().length - before).toBe(passed);
    expect(t.g.transferBytes).toBe(0);
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
      { forward: (b) => forwarded.push(Buffer.from(b)), closeWithError: () => true, detachLink: () => true, saslDone: () => done },
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
