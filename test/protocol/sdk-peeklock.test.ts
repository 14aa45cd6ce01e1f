// The real @azure/service-bus SDK, unmodified, against a broker on 127.0.0.1 (port 0): send, peek-lock
// receive, complete, abandon, dead-letter, defer, renew, lock expiry (with the overlap case), max delivery
// count, receive-and-delete, and restart on the same data directory. Lock time runs on a fake clock so no
// test waits for a lock to lapse.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceBusClient, ServiceBusReceivedMessage } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { codeOf, sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const QUEUES = [
  { Name: 'orders', Properties: { LockDuration: 'PT30S', MaxDeliveryCount: 3 } },
  { Name: 'jobs', Properties: { LockDuration: 'PT1M' } },
];

let broker: TestBroker;
let clock: FakeClock;
let client: ServiceBusClient;


async function receiveAll(
  queue: string,
  n: number,
  opts: { subQueue?: 'deadLetter'; mode?: 'peekLock' | 'receiveAndDelete' } = {},
): Promise<{ msgs: ServiceBusReceivedMessage[]; receiver: ReturnType<ServiceBusClient['createReceiver']> }> {
  const receiver = client.createReceiver(queue, {
    subQueueType: opts.subQueue,
    receiveMode: opts.mode ?? 'peekLock',
    maxAutoLockRenewalDurationInMs: 0,
  });
  const msgs: ServiceBusReceivedMessage[] = [];
  for (let i = 0; i < 10 && msgs.length < n; i++) {
    msgs.push(...(await receiver.receiveMessages(n - msgs.length, { maxWaitTimeInMs: 1000 })));
  }
  return { msgs, receiver };
}

beforeEach(async () => {
  clock = new FakeClock(Date.now());
  broker = await startTestBroker(QUEUES, { clock });
  client = sdkClient(broker);
});

afterEach(async () => {
  await client.close();
  await broker.dispose();
});

describe('peek-lock with the real SDK', () => {
  it('sends and receives in order, with sequence numbers, enqueued time, lock and message id', async () => {
    const sender = client.createSender('orders');
    await sender.sendMessages({ body: 'first', applicationProperties: { n: 1 } });
    await sender.sendMessages([{ body: 'second' }, { body: { third: true } }]);
    const { msgs, receiver } = await receiveAll('orders', 3);
    expect(msgs.map((m) => m.body)).toEqual(['first', 'second', { third: true }]);
    expect(msgs.map((m) => Number(m.sequenceNumber))).toEqual([1, 2, 3]);
    expect(msgs[0]!.applicationProperties).toEqual({ n: 1 });
    expect(msgs[0]!.deliveryCount).toBe(0);
    expect(msgs[0]!.messageId).toMatch(/^[0-9a-f]{32}$/);
    expect(msgs[0]!.lockToken).toMatch(/^[0-9a-f-]{36}$/);
    expect(msgs[0]!.lockedUntilUtc!.getTime()).toBe(clock.now() + 30_000);
    expect(Math.abs(msgs[0]!.enqueuedTimeUtc!.getTime() - clock.now())).toBeLessThan(1000);
    for (const m of msgs) await receiver.completeMessage(m);
    const again = await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 });
    expect(again).toHaveLength(0);
    clock.advance(31_000);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
  });

  it('abandon redelivers first with delivery count + 1 and the modified properties', async () => {
    const sender = client.createSender('orders');
    await sender.sendMessages([{ body: 'a', messageId: 'A' }, { body: 'b', messageId: 'B' }]);
    const { msgs, receiver } = await receiveAll('orders', 1);
    expect(msgs[0]!.messageId).toBe('A');
    await receiver.abandonMessage(msgs[0]!, { reason: 'retry-me', attempt: 7 });
    const next = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(next[0]!.messageId).toBe('A');
    expect(next[0]!.deliveryCount).toBe(1);
    expect(next[0]!.applicationProperties).toMatchObject({ reason: 'retry-me', attempt: 7 });
  });

  it('dead-letters with reason and description, readable from the DLQ subqueue', async () => {
    await client.createSender('orders').sendMessages({ body: 'poison', messageId: 'P' });
    const { msgs, receiver } = await receiveAll('orders', 1);
    await receiver.deadLetterMessage(msgs[0]!, { deadLetterReason: 'BadInput', deadLetterErrorDescription: 'not json' });
    const dlq = await receiveAll('orders', 1, { subQueue: 'deadLetter' });
    expect(dlq.msgs[0]!.messageId).toBe('P');
    expect(dlq.msgs[0]!.body).toBe('poison');
    expect(dlq.msgs[0]!.deadLetterReason).toBe('BadInput');
    expect(dlq.msgs[0]!.deadLetterErrorDescription).toBe('not json');
    await dlq.receiver.completeMessage(dlq.msgs[0]!);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
  });

  it('defer sets a message aside: it is not delivered again', async () => {
    await client.createSender('orders').sendMessages([{ body: 'd', messageId: 'D' }, { body: 'e', messageId: 'E' }]);
    const { msgs, receiver } = await receiveAll('orders', 1);
    await receiver.deferMessage(msgs[0]!);
    const next = await receiver.receiveMessages(2, { maxWaitTimeInMs: 500 });
    expect(next.map((m) => m.messageId)).toEqual(['E']);
    await receiver.completeMessage(next[0]!);
    clock.advance(60_000);
    expect(await receiver.receiveMessages(2, { maxWaitTimeInMs: 300 })).toHaveLength(0);
  });

  it('lock expiry: a second receiver gets the message and the first one’s late complete fails with MessageLockLost', async () => {
    await client.createSender('orders').sendMessages({ body: 'slow', messageId: 'S' });
    const first = await receiveAll('orders', 1);
    clock.advance(30_001);
    const second = await receiveAll('orders', 1);
    expect(second.msgs[0]!.messageId).toBe('S');
    expect(second.msgs[0]!.deliveryCount).toBe(1);
    expect(second.msgs[0]!.lockToken).not.toBe(first.msgs[0]!.lockToken);
    const err = await first.receiver.completeMessage(first.msgs[0]!).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('MessageLockLost');
    await second.receiver.completeMessage(second.msgs[0]!);
    clock.advance(31_000);
    expect(await second.receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
  });

  it('MaxDeliveryCount reached: the message goes to the DLQ with MaxDeliveryCountExceeded', async () => {
    await client.createSender('orders').sendMessages({ body: 'again', messageId: 'M' });
    const { receiver } = await receiveAll('orders', 0);
    for (let i = 0; i < 3; i++) {
      const got = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
      expect(got[0]!.deliveryCount).toBe(i);
      if (i < 2) await receiver.abandonMessage(got[0]!);
      else clock.advance(30_001); // the third attempt ends by lock expiry
    }
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
    const dlq = await receiveAll('orders', 1, { subQueue: 'deadLetter' });
    expect(dlq.msgs[0]!.messageId).toBe('M');
    expect(dlq.msgs[0]!.deadLetterReason).toBe('MaxDeliveryCountExceeded');
  });

  it('renewMessageLock extends lockedUntilUtc by the lock duration', async () => {
    await client.createSender('jobs').sendMessages({ body: 'long job' });
    const { msgs, receiver } = await receiveAll('jobs', 1);
    const before = msgs[0]!.lockedUntilUtc!.getTime();
    clock.advance(45_000);
    const renewed = await receiver.renewMessageLock(msgs[0]!);
    expect(renewed.getTime()).toBe(clock.now() + 60_000);
    expect(renewed.getTime()).toBeGreaterThan(before);
    clock.advance(30_000); // past the original lock, within the renewed one
    const other = client.createReceiver('jobs');
    expect(await other.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
    await receiver.completeMessage(msgs[0]!);
  });

  it('receiveAndDelete removes messages as they are sent', async () => {
    await client.createSender('jobs').sendMessages([{ body: 1 }, { body: 2 }]);
    const { msgs } = await receiveAll('jobs', 2, { mode: 'receiveAndDelete' });
    expect(msgs.map((m) => m.body)).toEqual([1, 2]);
    expect(msgs[0]!.lockToken).toBeUndefined();
    clock.advance(120_000);
    const peekLock = client.createReceiver('jobs');
    expect(await peekLock.receiveMessages(2, { maxWaitTimeInMs: 300 })).toHaveLength(0);
  });

  it('refuses an unknown entity with MessagingEntityNotFound', async () => {
    const err = await client.createSender('nope').sendMessages({ body: 1 }).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('MessagingEntityNotFound');
  });

  it('refuses a message over the size limit with MessageSizeExceeded and stores nothing', async () => {
    const sender = client.createSender('jobs');
    const err = await sender.sendMessages({ body: Buffer.alloc(300_000) }).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('MessageSizeExceeded');
    const r = client.createReceiver('jobs');
    expect(await r.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
  });
});

describe('restart on the same data directory', () => {
  it('keeps messages, delivery counts and locks', async () => {
    const sender = client.createSender('orders');
    await sender.sendMessages([{ body: 'kept', messageId: 'K' }, { body: 'locked', messageId: 'L' }]);
    const { msgs, receiver } = await receiveAll('orders', 2);
    await receiver.abandonMessage(msgs[0]!); // K: back in the queue, count 1
    const lockedUntil = msgs[1]!.lockedUntilUtc!.getTime(); // L: stays locked across the restart
    await client.close();
    await broker.close();

    broker = await startTestBroker(QUEUES, { clock, dataDir: broker.dataDir });
    client = sdkClient(broker);
    const r1 = { receiver: client.createReceiver('orders', { maxAutoLockRenewalDurationInMs: 0 }) };
    const got = await r1.receiver.receiveMessages(2, { maxWaitTimeInMs: 1000 });
    expect(got.map((m) => m.messageId)).toEqual(['K']);
    expect(got[0]!.deliveryCount).toBe(1);
    await r1.receiver.completeMessage(got[0]!);
    clock.advance(lockedUntil - clock.now() + 1);
    const r2 = await r1.receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(r2.map((m) => m.messageId)).toEqual(['L']);
    expect(r2[0]!.deliveryCount).toBe(1);
    expect(Number(r2[0]!.sequenceNumber)).toBe(2);
    await client.createSender('orders').sendMessages({ body: 'after' });
    const r3 = await r1.receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(Number(r3[0]!.sequenceNumber)).toBe(3);
  });
});
