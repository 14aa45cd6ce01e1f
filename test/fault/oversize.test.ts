// Oversized messages (memory is bounded: docs/durability.md, "The promises"). A message exactly at
// Broker.MaxMessageSizeBytes is accepted and comes back byte-exact; one byte more is rejected with
// amqp:link:message-size-exceeded; a frame above the max frame size ends the connection with a framing error; a huge
// multi-frame transfer streamed at full speed is read and dropped without the broker's memory following it, refused
// with message-size-exceeded when its last frame arrives, and the same link then takes the next message.

import { describe, expect, it } from 'vitest';
import rhea from 'rhea';
import { connect } from '../helpers/amqp-client.js';
import { emit, receiveLocked, rssMB, sendOne, settle, sharedChild, size, sleep, until } from '../helpers/fault.js';
import { RawConn, attachSender, frame, loginPrefix, transfer } from '../helpers/raw-amqp.js';

const LIMIT = 262_144;
const STREAM_BYTES = size(64, 1024) * 1024 * 1024;
const child = sharedChild([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }]);

/** The data-section length that makes the encoded message exactly `total` bytes. */
function bodyLengthFor(total: number, id: string): number {
  const enc = (n: number): number => rhea.message.encode({ message_id: id, body: rhea.message.data_section(Buffer.alloc(n)) }).length;
  const n = total - (enc(100_000) - 100_000);
  expect(enc(n)).toBe(total);
  return n;
}

/** The outcome and error condition of the broker's disposition for `deliveryId`, once it has arrived. */
function outcomeOf(conn: RawConn, deliveryId: number): { outcome: string; condition?: string } | undefined {
  const d = conn.seen.find((s) => s.name === 'disposition' && s.fields.first === deliveryId);
  if (!d) return undefined;
  const state = (rhea.message as unknown as { unwrap_outcome(s: unknown): { error?: { condition?: string } } }).unwrap_outcome(d.fields.state);
  return { outcome: String((state as object).constructor).split('#')[0]!, condition: state.error?.condition };
}

describe('oversized messages', () => {
  it('accepts a message at the limit byte-exact, rejects limit+1, and refuses a huge stream without holding it', async () => {
    const broker = child.broker;
    const conn = await connect(broker.port);
    const atLimit = Buffer.alloc(bodyLengthFor(LIMIT, 'at'), 7);
    atLimit.write('start', 0);
    atLimit.write('end', atLimit.length - 3);
    const ok = await sendOne(conn, 'q', { message_id: 'at', body: rhea.message.data_section(atLimit) });
    const over = Buffer.alloc(bodyLengthFor(LIMIT + 1, 'over'), 1);
    const t0 = performance.now();
    const refused = await sendOne(conn, 'q', { message_id: 'over', body: rhea.message.data_section(over) });
    const rejectMs = Math.round(performance.now() - t0);
    expect(ok.outcome).toBe('ok');
    expect(refused).toEqual({ outcome: 'fail', condition: 'amqp:link:message-size-exceeded' });
    const r = receiveLocked(conn, 'q', 5);
    const got = await r.waitFor(1, 5_000);
    await sleep(200);
    expect(got.map((m) => m.id)).toEqual(['at']);
    expect(got[0]!.body.equals(atLimit)).toBe(true);
    expect((await settle(got[0]!.delivery, 'complete')).outcome).toBe('ok');
    conn.close();

    // One frame above the max frame size: refused on its header, never buffered.
    const big = new RawConn(broker.port);
    await big.ready();
    await big.write(loginPrefix());
    await until(() => !!big.find('begin'), 5_000);
    const hdr = Buffer.alloc(8);
    hdr.writeUInt32BE(LIMIT + 1);
    hdr[4] = 2;
    await big.write(hdr);
    await until(() => big.closed, 3_000);
    expect(big.find('close')?.fields.error?.condition).toBe('amqp:connection:framing-error');
    expect(big.closed).toBe(true);

    // A multi-frame transfer that never ends, streamed as fast as the socket takes it.
    const rssBefore = rssMB(broker.proc.pid);
    let rssMax = rssBefore;
    const stream = new RawConn(broker.port);
    await stream.ready();
    await stream.write(Buffer.concat([loginPrefix(), attachSender(0, 'q')]));
    await until(() => !!stream.find('attach'), 5_000);
    const chunk = transfer(0, 0, Buffer.alloc(LIMIT - 64, 3), true);
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMB(broker.proc.pid))), 50);
    let sent = 0;
    const deadline = Date.now() + 60_000;
    while (sent < STREAM_BYTES && !stream.closed && Date.now() < deadline) {
      await stream.write(chunk);
      sent += chunk.length;
    }
    await sleep(200);
    const refusedBeforeEnd = outcomeOf(stream, 0);
    // The last frame ends the delivery: refused, and the link takes the next message.
    await stream.write(Buffer.concat([transfer(0, 0, Buffer.alloc(10, 3), false), transfer(0, 1, rhea.message.encode({ body: 'next' }), false)]));
    await until(() => outcomeOf(stream, 1) !== undefined || stream.closed, 10_000);
    clearInterval(sampler);
    const streamOutcome = outcomeOf(stream, 0);
    const nextOutcome = outcomeOf(stream, 1);
    const detach = stream.seen.find((s) => s.name === 'detach');
    const streamOpen = !stream.closed;
    stream.destroy();

    // The broker still serves a well-behaved client afterwards.
    const after = await connect(broker.port);
    const canary = await sendOne(after, 'q', { message_id: 'after', body: 'fine' });
    after.close();
    const figures = {
      test: 'oversize',
      atLimit: ok.outcome,
      overLimit: refused.condition,
      rejectMs,
      streamedMB: Math.round(sent / 1048576),
      streamOutcome: streamOutcome?.condition ?? null,
      nextOnSameLink: nextOutcome?.outcome ?? null,
      detach: detach?.fields.error?.condition ?? null,
      rssBeforeMB: rssBefore,
      rssMaxMB: rssMax,
      rssGrowthMB: Math.round((rssMax - rssBefore) * 10) / 10,
      canary: canary.outcome,
    };
    emit(figures);
    expect(sent).toBeGreaterThanOrEqual(Math.min(STREAM_BYTES, 32 * 1024 * 1024));
    expect(refusedBeforeEnd).toBeUndefined();
    expect(streamOutcome).toEqual({ outcome: 'rejected', condition: 'amqp:link:message-size-exceeded' });
    expect(nextOutcome).toEqual({ outcome: 'accepted', condition: undefined });
    expect(detach).toBeUndefined();
    expect(streamOpen).toBe(true);
    expect(rssMax - rssBefore).toBeLessThan(100);
    expect(canary.outcome).toBe('ok');
    expect(broker.proc.exitCode).toBeNull();
  });

  it('drops an oversized delivery the client aborts, without an outcome, and the link carries on', async () => {
    const broker = child.broker;
    const c = new RawConn(broker.port);
    await c.ready();
    await c.write(Buffer.concat([loginPrefix(), attachSender(0, 'q')]));
    await until(() => !!c.find('attach'), 5_000);
    const part = transfer(0, 0, Buffer.alloc(LIMIT - 64, 5), true);
    // Eight frames (2 MB): well past the limit, so the guard is discarding when the abort comes.
    await c.write(Buffer.concat(Array.from({ length: 8 }, () => part)));
    const abort = frame(0, 'transfer', { handle: 0, delivery_id: 0, delivery_tag: Buffer.from([0]), message_format: 0, more: false, aborted: true });
    await c.write(Buffer.concat([abort, transfer(0, 1, rhea.message.encode({ message_id: 'after-abort', body: 'x' }), false)]));
    await until(() => outcomeOf(c, 1) !== undefined || c.closed, 10_000);
    const aborted = outcomeOf(c, 0);
    const next = outcomeOf(c, 1);
    const open = !c.closed;
    c.destroy();
    expect(aborted).toBeUndefined();
    expect(next).toEqual({ outcome: 'accepted', condition: undefined });
    expect(open).toBe(true);
    const conn = await connect(broker.port);
    const r = receiveLocked(conn, 'q', 10);
    const got = await r.waitFor(10, 2_000);
    expect(got.map((m) => m.id)).toContain('after-abort');
    for (const m of got) await settle(m.delivery, 'complete');
    conn.close();
  });

  it('refuses a frame on a channel beyond channel-max and a frame with a bad data offset', async () => {
    const broker = child.broker;
    for (const bad of [frame(1001, 'begin', { next_outgoing_id: 0, incoming_window: 1, outgoing_window: 1 }), Buffer.from([0, 0, 0, 8, 1, 0, 0, 0])]) {
      const c = new RawConn(broker.port);
      await c.ready();
      await c.write(loginPrefix());
      await until(() => !!c.find('begin'), 5_000);
      await c.write(bad);
      await until(() => c.closed, 3_000);
      expect(c.find('close')?.fields.error?.condition).toBe('amqp:connection:framing-error');
      c.destroy();
    }
  });
});
