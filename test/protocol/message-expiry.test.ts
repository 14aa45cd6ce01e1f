// What a received message says about its expiry (issue 38, item 5). Service Bus gives a message without a TTL the
// DefaultMessageTimeToLive of the entity it lands in and cuts a longer one down to it at enqueue; the message then
// carries that effective TTL (header ttl) and the broker's expiry, EnqueuedTime + TTL (properties
// absolute-expiry-time, with creation-time = EnqueuedTime, from which the JS SDK computes timeToLive), never the
// sender's own clock. Checked with the JS SDK on a queue, a subscription, a peek, a
// scheduled and a forwarded message, and with a raw rhea sender whose clock runs 70 minutes slow.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import type { ServiceBusClient, ServiceBusReceivedMessage } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const HOUR = 3_600_000;
let broker: TestBroker;
let client: ServiceBusClient;
let clock: FakeClock;

beforeEach(async () => {
  clock = new FakeClock(Date.now());
  broker = await startTestBroker(
    [
      { Name: 'q1h', Properties: { DefaultMessageTimeToLive: 'PT1H' } },
      { Name: 'plain' },
      { Name: 'fwd', Properties: { ForwardTo: 'q1h' } },
    ],
    {
      clock,
      store: new MemoryStore(),
      topics: [{ Name: 't', Subscriptions: [{ Name: 's1h', Properties: { DefaultMessageTimeToLive: 'PT1H' } }, { Name: 'open' }] }],
    },
  );
  client = sdkClient(broker);
});

afterEach(async () => {
  await client.close();
  await broker.dispose();
});

const MESSAGES = [
  { body: 'a', messageId: 'none' },
  { body: 'b', messageId: 'longer', timeToLive: 2 * HOUR },
  { body: 'c', messageId: 'shorter', timeToLive: 10 * 60_000 },
];

/** What one message reports: its TTL, ExpiresAt minus EnqueuedTime, and the absolute-expiry-time it carries. */
function reported(m: ServiceBusReceivedMessage): { id: unknown; ttl: unknown; expiresIn: number; absolute: number | undefined } {
  const absolute = (m._rawAmqpMessage.properties as Any)?.absoluteExpiryTime as number | undefined;
  return {
    id: m.messageId,
    ttl: m.timeToLive,
    expiresIn: m.expiresAtUtc!.getTime() - m.enqueuedTimeUtc!.getTime(),
    absolute: absolute === undefined ? undefined : absolute - m.enqueuedTimeUtc!.getTime(),
  };
}

const effective = (ttl: number): { ttl: number; expiresIn: number; absolute: number } => ({ ttl, expiresIn: ttl, absolute: ttl });

function expectEffective(got: ServiceBusReceivedMessage[], defaultTtl: number): void {
  const byId = Object.fromEntries(got.map((m) => [String(m.messageId), reported(m)]));
  expect(byId).toEqual({
    none: { id: 'none', ...effective(defaultTtl) },
    longer: { id: 'longer', ...effective(defaultTtl) },
    shorter: { id: 'shorter', ...effective(10 * 60_000) },
  });
}

async function receiveAll(queue: string, count: number, sub?: string): Promise<ServiceBusReceivedMessage[]> {
  const receiver = sub ? client.createReceiver(queue, sub, { receiveMode: 'receiveAndDelete' }) : client.createReceiver(queue, { receiveMode: 'receiveAndDelete' });
  const got: ServiceBusReceivedMessage[] = [];
  for (let i = 0; i < 10 && got.length < count; i++) got.push(...(await receiver.receiveMessages(count - got.length, { maxWaitTimeInMs: 1000 })));
  await receiver.close();
  return got;
}

describe('the expiry a message reports', () => {
  it('is the queue default for no TTL and a longer one, the own TTL for a shorter one; peeked alike', async () => {
    await client.createSender('q1h').sendMessages(MESSAGES);
    const peeker = client.createReceiver('q1h');
    expectEffective(await peeker.peekMessages(3), HOUR);
    await peeker.close();
    expectEffective(await receiveAll('q1h', 3), HOUR);
  });

  it("is the subscription's default on a subscription, and the message's own where there is none", async () => {
    await client.createSender('t').sendMessages(MESSAGES);
    expectEffective(await receiveAll('t', 3, 's1h'), HOUR);
    const open = Object.fromEntries((await receiveAll('t', 3, 'open')).map((m) => [String(m.messageId), reported(m)]));
    expect(open.longer).toEqual({ id: 'longer', ...effective(2 * HOUR) });
    // No TTL and no default: never, as Service Bus says it (no ttl, no absolute-expiry-time).
    expect(open.none).toMatchObject({ id: 'none', ttl: undefined, absolute: undefined });
  });

  it('runs from the scheduled time for a scheduled message', async () => {
    const at = new Date(clock.now() + 60_000);
    await client.createSender('q1h').scheduleMessages({ body: 's', messageId: 'scheduled', timeToLive: 2 * HOUR }, at);
    const [peeked] = await client.createReceiver('q1h').peekMessages(1);
    expect(peeked!.enqueuedTimeUtc!.getTime()).toBe(at.getTime());
    expect(reported(peeked!)).toEqual({ id: 'scheduled', ...effective(HOUR) });
  });

  it("is the destination's effective TTL for a forwarded message", async () => {
    await client.createSender('fwd').sendMessages([{ body: 'f', messageId: 'forwarded', timeToLive: 2 * HOUR }]);
    const [m] = await receiveAll('q1h', 1);
    expect(reported(m!)).toEqual({ id: 'forwarded', ...effective(HOUR) });
  });
});

describe('a sender whose clock is wrong', () => {
  function connect(): Promise<Any> {
    const c = rhea.create_container({ id: 'skewed-client' });
    return new Promise((resolve, reject) => {
      const conn = c.connect({ host: '127.0.0.1', port: broker.port, reconnect: false, username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE' } as Any);
      conn.once('connection_open', () => resolve(conn));
      conn.once('connection_error', reject);
    });
  }

  it("gets the broker's expiry and enqueued time, not its own absolute-expiry-time and creation-time", async () => {
    const conn = await connect();
    try {
      // 70 minutes slow, with a 1 h TTL: its own expiry lies 10 minutes before the broker's enqueued time.
      const senderNow = clock.now() - 70 * 60_000;
      const sender = conn.open_sender({ target: { address: 'plain' } });
      await new Promise((r) => sender.once('sendable', r));
      sender.send({
        message_id: 'skewed',
        ttl: HOUR,
        creation_time: new Date(senderNow),
        absolute_expiry_time: new Date(senderNow + HOUR),
        body: 'x',
      });
      await new Promise((r, j) => {
        sender.once('accepted', r);
        sender.once('rejected', (ctx: Any) => j(new Error(String(ctx.delivery.remote_state?.error?.description))));
      });
      const receiver = conn.open_receiver({ source: { address: 'plain' }, autoaccept: true });
      const m = await new Promise<Any>((r) => receiver.once('message', (ctx: Any) => r(ctx.message)));
      const enqueued = (m.message_annotations['x-opt-enqueued-time'] as Date).getTime();
      expect({ ttl: m.ttl, expiresIn: (m.absolute_expiry_time as Date).getTime() - enqueued, created: (m.creation_time as Date).getTime() }).toEqual({
        ttl: HOUR,
        expiresIn: HOUR,
        created: enqueued,
      });
    } finally {
      conn.close();
    }
  });
});
