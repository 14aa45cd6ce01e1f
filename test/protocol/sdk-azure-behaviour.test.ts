// Behaviour Azure Service Bus shows to the real @azure/service-bus SDK, held against peeklock: which
// deliveries count, how a scheduled message is reported, how a missing entity is named, and how many
// unsettled messages one receiver link gets. Lock and schedule times run on a fake clock.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusReceiver } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const LOCK_MS = 30_000;

let broker: TestBroker;
let clock: FakeClock;
let client: ServiceBusClient;

beforeAll(async () => {
  clock = new FakeClock(Date.now());
  broker = await startTestBroker(
    [
      { Name: 'dl', Properties: { LockDuration: 'PT30S' } },
      { Name: 'deferred-dl', Properties: { LockDuration: 'PT30S' } },
      { Name: 'dlq-abandon', Properties: { LockDuration: 'PT30S' } },
      { Name: 'sched', Properties: { LockDuration: 'PT30S' } },
      { Name: 'cap', Properties: { LockDuration: 'PT30S' } },
      { Name: 'cap-reopen', Properties: { LockDuration: 'PT30S' } },
    ],
    { clock, store: new MemoryStore(), topics: [{ Name: 't', Subscriptions: [{ Name: 's' }] }] },
  );
  client = sdkClient(broker, 20_000);
});

afterAll(async () => {
  await client.close();
  await broker.dispose();
});

/** Receives until `n` messages have arrived (bounded in rounds). */
async function receiveN(receiver: ServiceBusReceiver, n: number, batch = 50): Promise<ServiceBusReceivedMessage[]> {
  const out: ServiceBusReceivedMessage[] = [];
  for (let round = 0; round < 400 && out.length < n; round++) {
    out.push(...(await receiver.receiveMessages(Math.min(batch, n - out.length), { maxWaitTimeInMs: 2000 })));
  }
  return out;
}

/** Sends `n` small messages in batches. */
async function sendN(queue: string, n: number): Promise<void> {
  const sender = client.createSender(queue);
  let i = 0;
  while (i < n) {
    const batch = await sender.createMessageBatch();
    while (i < n && batch.tryAddMessage({ body: `m-${i}` })) i++;
    await sender.sendMessages(batch);
  }
  await sender.close();
}

describe('dead-lettering is not a failed delivery', () => {
  it('a message received once and dead-lettered shows delivery count 0 in the dead-letter queue', async () => {
    await client.createSender('dl').sendMessages({ body: 'once', messageId: 'once' });
    const receiver = client.createReceiver('dl');
    const [m] = await receiver.receiveMessages(1);
    expect(m!.deliveryCount).toBe(0);
    await receiver.deadLetterMessage(m!, { deadLetterReason: 'unreadable', deadLetterErrorDescription: 'unreadable' });
    const dlq = client.createReceiver('dl', { subQueueType: 'deadLetter' });
    const [d] = await dlq.receiveMessages(1);
    expect(d!.messageId).toBe('once');
    expect(d!.deliveryCount).toBe(0);
    expect(d!.deadLetterReason).toBe('unreadable');
    await dlq.completeMessage(d!);
  });

  it('a deferred message fetched by sequence number (count 1) and dead-lettered shows 1', async () => {
    await client.createSender('deferred-dl').sendMessages({ body: 'later', messageId: 'later' });
    const receiver = client.createReceiver('deferred-dl');
    const [m] = await receiver.receiveMessages(1);
    expect(m!.deliveryCount).toBe(0);
    await receiver.deferMessage(m!);
    const [deferred] = await receiver.receiveDeferredMessages(m!.sequenceNumber!);
    expect(deferred!.state).toBe('deferred');
    expect(deferred!.deliveryCount).toBe(1);
    await receiver.deadLetterMessage(deferred!);
    expect(await receiver.peekMessages(1, { fromSequenceNumber: m!.sequenceNumber! })).toHaveLength(0);
    const dlq = client.createReceiver('deferred-dl', { subQueueType: 'deadLetter' });
    const [d] = await dlq.receiveMessages(1);
    expect(d!.messageId).toBe('later');
    expect(d!.deliveryCount).toBe(1);
    expect(d!.state).toBe('active');
    await dlq.completeMessage(d!);
  });

  it('abandoning a message in the dead-letter queue does not count either', async () => {
    await client.createSender('dlq-abandon').sendMessages({ body: 'x', messageId: 'x' });
    const receiver = client.createReceiver('dlq-abandon');
    const [m] = await receiver.receiveMessages(1);
    await receiver.deadLetterMessage(m!);
    const dlq = client.createReceiver('dlq-abandon', { subQueueType: 'deadLetter' });
    const [first] = await dlq.receiveMessages(1);
    expect(first!.deliveryCount).toBe(0);
    await dlq.abandonMessage(first!);
    const [second] = await dlq.receiveMessages(1);
    expect(second!.messageId).toBe('x');
    expect(second!.deliveryCount).toBe(0);
    await dlq.completeMessage(second!);
  });
});

describe('scheduled messages', () => {
  it('are peeked and received with state scheduled, enqueued at their scheduled time', async () => {
    const sender = client.createSender('sched');
    const due = new Date(clock.now() + 60_000);
    const [seq] = await sender.scheduleMessages({ body: 'hello', messageId: 'sch-1' }, due);
    await sender.sendMessages({ body: 'plain', messageId: 'plain-1' });

    const receiver = client.createReceiver('sched');
    const before = await receiver.peekMessages(2, { fromSequenceNumber: seq! });
    expect(before.map((m) => [m.messageId, m.state])).toEqual([
      ['sch-1', 'scheduled'],
      ['plain-1', 'active'],
    ]);
    expect(before[0]!.enqueuedTimeUtc!.getTime()).toBe(due.getTime());
    expect(before[0]!.scheduledEnqueueTimeUtc!.getTime()).toBe(due.getTime());

    const [plain] = await receiver.receiveMessages(1);
    expect(plain!.messageId).toBe('plain-1');
    expect(plain!.state).toBe('active');
    await receiver.completeMessage(plain!);

    clock.advance(60_000);
    const [m] = await receiver.receiveMessages(1);
    expect(m!.messageId).toBe('sch-1');
    expect(m!.state).toBe('scheduled');
    expect(m!.enqueuedTimeUtc!.getTime()).toBe(due.getTime());
    const [peekedAfter] = await receiver.peekMessages(1, { fromSequenceNumber: seq! });
    expect(peekedAfter!.state).toBe('scheduled');
    await receiver.completeMessage(m!);
  });
});

describe('a missing entity is named by its full address', () => {
  const expected = (path: string): string => `The messaging entity 'sb://${client.fullyQualifiedNamespace}/${path}' could not be found.`;

  it('the client addressed the broker as 127.0.0.1', () => {
    expect(client.fullyQualifiedNamespace).toBe('127.0.0.1');
  });

  it('for a sender', async () => {
    const err = await client.createSender('no-such-queue').sendMessages({ body: 1 }).then(() => undefined, (e: unknown) => e);
    expect((err as { code?: string }).code).toBe('MessagingEntityNotFound');
    expect((err as Error).message).toContain(expected('no-such-queue'));
  });

  it('for a batch receiver on a queue and on a subscription', async () => {
    for (const [receiver, path] of [
      [client.createReceiver('no-such-queue'), 'no-such-queue'],
      [client.createReceiver('no-such-topic', 'no-such-sub'), 'no-such-topic/Subscriptions/no-such-sub'],
      [client.createReceiver('t', 'no-such-sub'), 't/Subscriptions/no-such-sub'],
    ] as const) {
      const err = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 }).then(() => undefined, (e: unknown) => e);
      expect((err as { code?: string }).code).toBe('MessagingEntityNotFound');
      expect((err as Error).message).toContain(expected(path));
      await receiver.close();
    }
  });

  it('for a streaming receiver', async () => {
    const receiver = client.createReceiver('no-such-queue');
    const err = await new Promise<Error>((resolve) => {
      receiver.subscribe({ processMessage: async () => undefined, processError: async (args) => resolve(args.error) });
    });
    await receiver.close();
    expect((err as { code?: string }).code).toBe('MessagingEntityNotFound');
    expect(err.message).toContain(expected('no-such-queue'));
  });

  it('for a management request (peek)', async () => {
    const err = await client.createReceiver('no-such-queue').peekMessages(1).then(() => undefined, (e: unknown) => e);
    expect((err as { code?: string }).code).toBe('MessagingEntityNotFound');
    expect((err as Error).message).toContain(expected('no-such-queue'));
  });
});

describe('at most 2,047 unsettled messages per receiver link', () => {
  const SENT = 3000;
  const CAP = 2047;

  it('a peek-lock receiver that does not settle gets 2,047; more arrive once it settles', async () => {
    await sendN('cap', SENT);
    const receiver = client.createReceiver('cap');
    const held = await receiveN(receiver, CAP, 500);
    expect(held).toHaveLength(CAP);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 1500 })).toHaveLength(0);
    for (const m of held) await receiver.completeMessage(m);
    const rest = await receiveN(receiver, SENT - CAP, 500);
    expect(rest).toHaveLength(SENT - CAP);
    expect(new Set([...held, ...rest].map((m) => String(m.body))).size).toBe(SENT);
    for (const m of rest) await receiver.completeMessage(m);
    await receiver.close();
  }, 120_000);

  it('after closing and reopening, those 2,047 come back with delivery count 1', async () => {
    await sendN('cap-reopen', SENT);
    const first = client.createReceiver('cap-reopen');
    expect(await receiveN(first, CAP, 500)).toHaveLength(CAP);
    expect(await first.receiveMessages(1, { maxWaitTimeInMs: 1500 })).toHaveLength(0);
    await first.close();
    clock.advance(LOCK_MS);
    const again = client.createReceiver('cap-reopen', { receiveMode: 'receiveAndDelete' });
    const all = await receiveN(again, SENT, 500);
    expect(all).toHaveLength(SENT);
    const counts = new Map<number, number>();
    for (const m of all) counts.set(m.deliveryCount ?? 0, (counts.get(m.deliveryCount ?? 0) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({ 0: SENT - CAP, 1: CAP });
    await again.close();
  }, 120_000);
});
