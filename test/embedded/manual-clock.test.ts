// The manual clock through the real SDK (default options): every time-driven behaviour of Service Bus follows
// broker.advance() as if the time had passed — lock expiry and redelivery, MaxDeliveryCount, session locks, TTL with
// dead-lettering, scheduled messages, duplicate-detection windows — and the times clients see are broker time.
// No test waits in real time for any of it.

import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type EmbeddedBroker } from '../../src/index.js';
import { authHeader } from '../helpers/http.js';
import { codeOf } from '../helpers/sdk.js';

const MIN = 60_000;
let broker: EmbeddedBroker;
let client: ServiceBusClient;

beforeAll(async () => {
  broker = await startBroker({
    clock: 'manual',
    config: {
      UserConfig: {
        Namespaces: [
          {
            Name: 'ns',
            Queues: [
              { Name: 'five-minute-lock', Properties: { LockDuration: 'PT5M' } },
              { Name: 'two-deliveries', Properties: { LockDuration: 'PT1M', MaxDeliveryCount: 2 } },
              { Name: 'expiring', Properties: { DefaultMessageTimeToLive: 'PT1H', DeadLetteringOnMessageExpiration: true } },
              { Name: 'scheduled' },
              { Name: 'dedup', Properties: { RequiresDuplicateDetection: true, DuplicateDetectionHistoryTimeWindow: 'PT10M' } },
              { Name: 'sessions', Properties: { RequiresSession: true, LockDuration: 'PT1M' } },
              { Name: 'times', Properties: { LockDuration: 'PT2M' } },
            ],
          },
        ],
      },
    },
  });
  client = new ServiceBusClient(broker.connectionString);
});
afterAll(async () => {
  await client?.close();
  await broker?.stop();
});

describe('the manual clock', () => {
  it('lets a five-minute lock lapse at once: another receiver gets the message and the stale complete fails with MessageLockLost', async () => {
    const started = performance.now();
    await client.createSender('five-minute-lock').sendMessages({ body: 'job', messageId: 'job-1' });
    const first = client.createReceiver('five-minute-lock');
    const [m1] = await first.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(m1?.lockedUntilUtc?.getTime()).toBe(broker.now().getTime() + 5 * MIN);

    await broker.advance(5 * MIN + 1_000);

    const second = client.createReceiver('five-minute-lock');
    const [m2] = await second.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(m2?.messageId).toBe('job-1');
    expect(m2?.deliveryCount).toBe(1);
    const stale = await first.completeMessage(m1!).then(() => 'completed', (e: unknown) => codeOf(e));
    expect(stale).toBe('MessageLockLost');
    await second.completeMessage(m2!);
    const elapsed = performance.now() - started;
    // The run time of this test is a figure for the report, not an assertion (performance is the benchmark's job).
    process.stdout.write(`${JSON.stringify({ figure: 'five-minute-lock expiry test', ms: Math.round(elapsed) })}\n`);
    await first.close();
    await second.close();
  });

  it('dead-letters a message whose lock lapsed MaxDeliveryCount times, with MaxDeliveryCountExceeded', async () => {
    await client.createSender('two-deliveries').sendMessages({ body: 'poison', messageId: 'p1' });
    const receiver = client.createReceiver('two-deliveries');
    for (let i = 0; i < 2; i++) {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
      expect(m?.deliveryCount).toBe(i);
      await broker.advance(MIN + 1);
    }
    const dlq = client.createReceiver('two-deliveries', { subQueueType: 'deadLetter' });
    const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(dead?.messageId).toBe('p1');
    expect(dead?.deadLetterReason).toBe('MaxDeliveryCountExceeded');
    await dlq.completeMessage(dead!);
    expect(await receiver.peekMessages(10)).toEqual([]);
    await receiver.close();
    await dlq.close();
  });

  it('expires a message at its time to live and dead-letters it with TTLExpiredException', async () => {
    const sender = client.createSender('expiring');
    await sender.sendMessages({ body: 'short-lived', messageId: 't1' });
    await broker.advance(59 * MIN);
    const receiver = client.createReceiver('expiring');
    expect((await receiver.peekMessages(10)).map((m) => m.messageId)).toEqual(['t1']);
    await broker.advance(MIN + 1);
    const dlq = client.createReceiver('expiring', { subQueueType: 'deadLetter' });
    const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(dead?.messageId).toBe('t1');
    expect(dead?.deadLetterReason).toBe('TTLExpiredException');
    await dlq.completeMessage(dead!);
    expect(await client.createReceiver('expiring').peekMessages(10)).toEqual([]);
    await receiver.close();
    await dlq.close();
  });

  it('makes a scheduled message available when broker time reaches its enqueue time, and not before', async () => {
    const at = new Date(broker.now().getTime() + 60 * MIN);
    const sender = client.createSender('scheduled');
    await sender.scheduleMessages({ body: 'later', messageId: 's1' }, at);
    const receiver = client.createReceiver('scheduled');
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toEqual([]);
    await broker.advance(59 * MIN);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toEqual([]);
    await broker.advance(MIN);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(m?.messageId).toBe('s1');
    expect(m?.enqueuedTimeUtc?.getTime()).toBe(at.getTime());
    await receiver.completeMessage(m!);
    await receiver.close();
  });

  it('forgets a message-id once the duplicate-detection window has passed in broker time', async () => {
    const sender = client.createSender('dedup');
    await sender.sendMessages({ body: 1, messageId: 'same' });
    await broker.advance(9 * MIN);
    await sender.sendMessages({ body: 2, messageId: 'same' });
    const receiver = client.createReceiver('dedup', { receiveMode: 'receiveAndDelete' });
    const drain = async (): Promise<unknown[]> => (await receiver.receiveMessages(10, { maxWaitTimeInMs: 300 })).map((m) => m.body);
    expect(await drain()).toEqual([1]);
    await broker.advance(MIN + 1);
    await sender.sendMessages({ body: 3, messageId: 'same' });
    expect(await drain()).toEqual([3]);
    await receiver.close();
  });

  it('releases a session whose lock lapsed: another receiver accepts it and the first gets SessionLockLost', async () => {
    await client.createSender('sessions').sendMessages([
      { body: 'a', sessionId: 's1' },
      { body: 'b', sessionId: 's1' },
    ]);
    const first = await client.acceptSession('sessions', 's1');
    const [m1] = await first.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(m1?.body).toBe('a');
    await broker.advance(MIN + 1);
    const second = await client.acceptSession('sessions', 's1');
    const [again] = await second.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(again?.body).toBe('a');
    expect(again?.deliveryCount).toBe(1);
    const stale = await first.completeMessage(m1!).then(() => 'completed', (e: unknown) => codeOf(e));
    expect(stale).toBe('SessionLockLost');
    await second.completeMessage(again!);
    await first.close();
    await second.close();
  });

  it('shows clients broker time: enqueued time and locked-until follow the clock, not the wall', async () => {
    await broker.advance(24 * 60 * MIN);
    const now = broker.now().getTime();
    expect(now).toBeGreaterThan(Date.now() + 23 * 60 * MIN);
    await client.createSender('times').sendMessages({ body: 'x' });
    const receiver = client.createReceiver('times');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(m?.enqueuedTimeUtc?.getTime()).toBe(now);
    expect(m?.lockedUntilUtc?.getTime()).toBe(now + 2 * MIN);
    await receiver.completeMessage(m!);
    await receiver.close();
  });

  it('moves over HTTP with POST /api/clock/advance (Manage right), refusing a bad body or no token', async () => {
    const url = `http://127.0.0.1:${broker.httpPort}/api/clock/advance`;
    const before = broker.now().getTime();
    const res = await fetch(url, { method: 'POST', headers: { authorization: authHeader() }, body: JSON.stringify({ ms: 90_000 }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ nowMs: before + 90_000, now: new Date(before + 90_000).toISOString() });
    expect(broker.now().getTime()).toBe(before + 90_000);
    const bad = await fetch(url, { method: 'POST', headers: { authorization: authHeader() }, body: JSON.stringify({ ms: -5 }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/ms = -5: must be an integer from 0/);
    const anonymous = await fetch(url, { method: 'POST', body: JSON.stringify({ ms: 1 }) });
    expect(anonymous.status).toBe(401);
    expect(broker.now().getTime()).toBe(before + 90_000);
  });

  it('refuses a negative or non-finite advance', async () => {
    await expect(broker.advance(-1)).rejects.toThrow(RangeError);
    await expect(broker.advance(Number.NaN)).rejects.toThrow(/finite number/);
  });
});
