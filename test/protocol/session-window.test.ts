// A receiver's session incoming window bounds what the broker locks for it. rhea keeps a delivery it may not
// transfer yet (the peer's window is closed) without telling anyone; a lock taken for such a delivery would run
// down, and count a delivery attempt, before the client could see the message. The client here has a session
// buffer of 10: it holds 10 unsettled deliveries at most, so the broker must lock no more than 10 until it
// settles some, and then go on by itself when the client's session flow reopens the window.

import rhea from 'rhea';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { receiveLocked, settle } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let broker: TestBroker | undefined;
const conns: Any[] = [];
afterEach(async () => {
  conns.splice(0).forEach((c) => c.close());
  await broker?.dispose();
  broker = undefined;
});

function connect(port: number, extra: Record<string, unknown> = {}): Promise<Any> {
  const c = rhea.create_container({ id: 'window-client' });
  return new Promise((resolve, reject) => {
    const connection = c.connect({ host: '127.0.0.1', port, reconnect: false, username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE', ...extra } as Any);
    conns.push(connection);
    connection.once('connection_open', () => resolve(connection));
    connection.once('connection_error', reject);
  });
}

const until = async (f: () => boolean, ms = 5_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!f() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

describe('session incoming window', () => {
  it('locks no more than the receiver session can take, and resumes when the client reopens its window', async () => {
    broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }]);
    const sendConn = await connect(broker.port);
    const sender = sendConn.open_sender({ target: { address: 'q' } });
    await new Promise((r) => sender.once('sendable', r));
    let accepted = 0;
    sender.on('accepted', () => accepted++);
    for (let i = 0; i < 40; i++) sender.send({ message_id: `m${i}`, body: `b${i}` });
    await until(() => accepted === 40);
    expect(accepted).toBe(40);

    const recvConn = await connect(broker.port, { session_buffer_size: 10 });
    const receiver = recvConn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, rcv_settle_mode: 0 });
    const got: Any[] = [];
    receiver.on('message', (ctx: Any) => got.push(ctx));
    receiver.add_credit(40);
    await until(() => got.length >= 10);
    await new Promise((r) => setTimeout(r, 300)); // room for any over-locking to show
    expect(got).toHaveLength(10);
    expect(broker.broker.messageCounts().find((c) => c.path === 'q')?.locked).toBe(10);

    // Settling frees the client's session buffer; its session flow reopens the window and the broker goes on.
    for (let round = 0; round < 3; round++) {
      const batch = got.slice(round * 10, round * 10 + 10);
      batch.forEach((ctx) => ctx.delivery.accept());
      await until(() => got.length >= (round + 2) * 10);
      expect(got.length).toBe((round + 2) * 10);
    }
    expect(got.map((ctx) => ctx.message.message_id)).toEqual(Array.from({ length: 40 }, (_, i) => `m${i}`));
    // Every message was seen on its first delivery: no lock ran down out of sight.
    expect(got.every((ctx) => (ctx.message.delivery_count ?? 0) === 0)).toBe(true);
  });

  // AMQP 1.0 §2.6.12: in rcv-settle-mode second the receiver settles after the sender's settled disposition.
  // rhea frees a slot of its session buffer (its incoming window) only on that local settle, so the fault
  // tests' peek-lock helper must make it; without it the session stopped at 2,048 deliveries (the buffer).
  it('keeps delivering to a second-mode receiver that settles each delivery after the broker settles it', async () => {
    broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }]);
    await broker.broker.send(
      'q',
      Array.from({ length: 30 }, (_, i) => ({ body: rhea.message.encode({ message_id: `m${i}`, body: 'x' }), messageId: `m${i}` })),
    );
    const conn = await connect(broker.port, { session_buffer_size: 10 });
    const rx = receiveLocked(conn, 'q', 30);
    let done = 0;
    let next = 0;
    const end = Date.now() + 5_000;
    while (done < 30 && Date.now() < end) {
      while (next < rx.got.length) void settle(rx.got[next++]!.delivery, 'complete').then((a) => a.outcome === 'ok' && done++);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(rx.got.map((m) => m.id)).toEqual(Array.from({ length: 30 }, (_, i) => `m${i}`));
    expect(done).toBe(30);
  });
});
