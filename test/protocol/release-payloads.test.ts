// rhea keeps an outgoing delivery until the peer settles it; releaseSentPayloads (rhea-patches.ts) drops its
// encoded payload once every transfer frame is written, so a receiver holding many peek-locks costs the broker
// no copies of messages it already sent. Checked on a server on the broker's rhea and a stock rhea client on 127.0.0.1: payloads are
// kept while frames are pending (a multi-frame message split by a small max-frame-size arrives whole) and
// released once sent, and the unsettled deliveries can still be settled afterwards.

import type { AddressInfo } from 'node:net';
import rhea from 'rhea';
import { afterAll, describe, expect, it } from 'vitest';
import brokerRhea from '../../src/amqp/rhea.js';
import { releaseSentPayloads } from '../../src/amqp/rhea-patches.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('releaseSentPayloads', () => {
  const server = brokerRhea.create_container({ id: 'release-server' });
  const client = rhea.create_container({ id: 'release-client' });
  const closers: (() => void)[] = [];
  afterAll(() => closers.forEach((c) => c()));

  it('drops each payload once all its frames are written, never before, and settlement still works', async () => {
    releaseSentPayloads();
    const senderReady = new Promise<Any>((resolve) => server.on('sender_open', (ctx: Any) => resolve(ctx.sender)));
    const listener = server.listen({ port: 0, host: '127.0.0.1' }) as Any;
    closers.push(() => listener.close());
    await new Promise<void>((r) => (listener.listening ? r() : listener.once('listening', () => r())));
    const port = (listener.address() as AddressInfo).port;

    // A small max frame size splits each 5,000-byte message into several transfer frames.
    const conn = client.connect({ host: '127.0.0.1', port, max_frame_size: 1024, reconnect: false }) as Any;
    closers.push(() => conn.close());
    const received: Any[] = [];
    const receiver = conn.open_receiver({ source: 'q', autoaccept: false, credit_window: 0 });
    receiver.on('message', (ctx: Any) => received.push(ctx));
    const sender = await senderReady;
    receiver.add_credit(20);
    await new Promise((r) => setTimeout(r, 50));

    const bodies = Array.from({ length: 20 }, (_, i) => Buffer.alloc(5_000, i + 1));
    const sent = bodies.map((b) => sender.send({ body: rhea.message.data_section(b) }));
    // Before the session has written them, every payload is still there.
    expect(sent.every((d: Any) => d.data.length > 1)).toBe(true);
    const deadline = Date.now() + 5_000;
    while (received.length < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));

    expect(received.map((ctx) => Buffer.from(ctx.message.body.content).equals(bodies[received.indexOf(ctx)]!))).toEqual(
      Array(20).fill(true),
    );
    expect(sent.every((d: Any) => d.data.length === 0)).toBe(true);
    expect(sent.every((d: Any) => !d.remote_settled)).toBe(true);

    const settled = new Promise<void>((resolve) => {
      let n = 0;
      sender.on('accepted', () => ++n === 20 && resolve());
    });
    received.forEach((ctx) => ctx.delivery.accept());
    await settled;
  });
});
