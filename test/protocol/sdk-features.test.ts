// More of the queue surface through the real SDK: TTL with and without dead-lettering, createMessageBatch,
// and the SDK's automatic lock renewal keeping a slow handler's lock past several LockDurations.

import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceBusClient, ServiceBusReceivedMessage } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker | undefined;
let client: ServiceBusClient | undefined;

afterEach(async () => {
  await client?.close();
  await broker?.dispose();
  client = undefined;
  broker = undefined;
});

async function start(queues: { Name: string; Properties?: Record<string, unknown> }[], clock?: FakeClock): Promise<ServiceBusClient> {
  broker = await startTestBroker(queues, { clock, store: new MemoryStore() });
  client = sdkClient(broker);
  return client;
}

describe('TTL', () => {
  it('removes expired messages; the smaller of the message TTL and the queue default wins', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start([{ Name: 'q', Properties: { DefaultMessageTimeToLive: 'PT1M' } }], clock);
    await c.createSender('q').sendMessages([{ body: 'short', timeToLive: 10_000 }, { body: 'default' }, { body: 'long', timeToLive: 3_600_000 }]);
    clock.advance(10_001);
    const receiver = c.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    expect((await receiver.peekMessages(10)).map((m) => m.body)).toEqual(['default', 'long']);
    clock.advance(50_000);
    expect(await receiver.receiveMessages(5, { maxWaitTimeInMs: 300 })).toHaveLength(0);
    const dlq = c.createReceiver('q', { subQueueType: 'deadLetter' });
    expect(await dlq.peekMessages(5)).toHaveLength(0);
  });

  it('dead-letters expired messages with TTLExpiredException when DeadLetteringOnMessageExpiration is set', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start([{ Name: 'q', Properties: { DeadLetteringOnMessageExpiration: true } }], clock);
    await c.createSender('q').sendMessages({ body: 'stale', messageId: 'S', timeToLive: 5_000 });
    clock.advance(5_001);
    expect(await c.createReceiver('q').receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
    const [d] = await c.createReceiver('q', { subQueueType: 'deadLetter' }).receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(d!.messageId).toBe('S');
    expect(d!.deadLetterReason).toBe('TTLExpiredException');
  });

  it('a deferred message expires too', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start([{ Name: 'q', Properties: { DeadLetteringOnMessageExpiration: true, LockDuration: 'PT5S' } }], clock);
    await c.createSender('q').sendMessages({ body: 'later', timeToLive: 60_000 });
    const receiver = c.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await receiver.deferMessage(m!);
    clock.advance(60_001);
    const err = await receiver.receiveDeferredMessages(m!.sequenceNumber!).then(() => null, (e: { code?: string }) => e.code);
    expect(err).toBe('MessageNotFound');
    const dlq = await c.createReceiver('q', { subQueueType: 'deadLetter' }).peekMessages(1);
    expect(dlq[0]!.deadLetterReason).toBe('TTLExpiredException');
  });
});

describe('batches', () => {
  it('createMessageBatch sends every message of the batch, each stored on its own', async () => {
    const c = await start([{ Name: 'q' }]);
    const sender = c.createSender('q');
    const batch = await sender.createMessageBatch();
    expect(batch.maxSizeInBytes).toBe(262144);
    for (let i = 0; i < 5; i++) expect(batch.tryAddMessage({ body: `m${i}`, applicationProperties: { i } })).toBe(true);
    await sender.sendMessages(batch);
    const got = await c.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(5, { maxWaitTimeInMs: 1000 });
    expect(got.map((m) => [m.body, m.applicationProperties?.i, Number(m.sequenceNumber)])).toEqual([
      ['m0', 0, 1],
      ['m1', 1, 2],
      ['m2', 2, 3],
      ['m3', 3, 4],
      ['m4', 4, 5],
    ]);
  });
});

describe('automatic lock renewal', () => {
  it('keeps a slow handler’s lock alive past several LockDurations (real time, PT5S lock, 12 s handler)', async () => {
    const c = await start([{ Name: 'slow', Properties: { LockDuration: 'PT5S' } }]);
    await c.createSender('slow').sendMessages({ body: 'work', messageId: 'W' });
    const receiver = c.createReceiver('slow');
    const seen: ServiceBusReceivedMessage[] = [];
    const done = new Promise<void>((resolve, reject) => {
      receiver.subscribe(
        {
          processMessage: async (m) => {
            seen.push(m);
            await new Promise((r) => setTimeout(r, 12_000));
            await receiver.completeMessage(m);
            resolve();
          },
          processError: async (args) => reject(args.error),
        },
        { autoCompleteMessages: false },
      );
    });
    await done;
    expect(seen.map((m) => [m.messageId, m.deliveryCount])).toEqual([['W', 0]]);
    expect(broker!.broker.counters.renewed).toBeGreaterThanOrEqual(2);
    expect(broker!.broker.counters.lockExpired).toBe(0);
    expect(broker!.broker.counters.completed).toBe(1);
  }, 30_000);
});

describe('duplicate detection', () => {
  it('accepts and drops a repeated message-id inside the window, and stores it again after', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start([{ Name: 'q', Properties: { RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: 'PT1M' } }], clock);
    const sender = c.createSender('q');
    await sender.sendMessages({ body: 'first', messageId: 'X' });
    await sender.sendMessages({ body: 'again', messageId: 'X' });
    await sender.sendMessages([{ body: 'y1', messageId: 'Y' }, { body: 'y2', messageId: 'Y' }]);
    const receiver = c.createReceiver('q', { receiveMode: 'receiveAndDelete' });
    expect((await receiver.receiveMessages(5, { maxWaitTimeInMs: 500 })).map((m) => m.body)).toEqual(['first', 'y1']);
    clock.advance(60_001);
    await sender.sendMessages({ body: 'later', messageId: 'X' });
    expect((await receiver.receiveMessages(5, { maxWaitTimeInMs: 500 })).map((m) => m.body)).toEqual(['later']);
  });

  it('keeps the window across a restart', async () => {
    const clock = new FakeClock(Date.now());
    const queues = [{ Name: 'q', Properties: { RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: 'PT10M' } }];
    broker = await startTestBroker(queues, { clock });
    const dataDir = broker.dataDir;
    client = sdkClient(broker);
    await client.createSender('q').sendMessages({ body: 'once', messageId: 'R' });
    await client.close();
    await broker.close();
    broker = await startTestBroker(queues, { clock, dataDir });
    client = sdkClient(broker);
    await client.createSender('q').sendMessages({ body: 'twice', messageId: 'R' });
    const got = await client.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(5, { maxWaitTimeInMs: 500 });
    expect(got.map((m) => m.body)).toEqual(['once']);
    await client.close();
    await broker.close();
    (await import('node:fs')).rmSync(dataDir, { recursive: true, force: true });
    client = undefined;
    broker = undefined;
  });
});
