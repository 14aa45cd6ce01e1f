// `$management` operations through the real @azure/service-bus SDK: peek, schedule / cancel, deferred
// messages by sequence number, and settling through update-disposition.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceBusClient } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { codeOf, sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker;
let clock: FakeClock;
let client: ServiceBusClient;


beforeEach(async () => {
  clock = new FakeClock(Date.now());
  broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S', MaxDeliveryCount: 5 } }], {
    clock,
    store: new MemoryStore(),
  });
  client = sdkClient(broker);
});

afterEach(async () => {
  await client.close();
  await broker.dispose();
});

describe('$management with the real SDK', () => {
  it('peeks in order without locking, then returns [] past the end', async () => {
    await client.createSender('q').sendMessages([{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
    const receiver = client.createReceiver('q');
    const first = await receiver.peekMessages(2);
    expect(first.map((m) => m.body)).toEqual(['a', 'b']);
    expect(first[0]!.lockToken).toBeUndefined();
    const rest = await receiver.peekMessages(5);
    expect(rest.map((m) => m.body)).toEqual(['c']);
    expect(await receiver.peekMessages(5)).toEqual([]);
    const all = await receiver.peekMessages(10, { fromSequenceNumber: first[0]!.sequenceNumber! });
    expect(all).toHaveLength(3);
    const got = await receiver.receiveMessages(3, { maxWaitTimeInMs: 1000 });
    expect(got.map((m) => m.body)).toEqual(['a', 'b', 'c']); // peeking did not lock anything
  });

  it('schedules a message invisible until due, and cancels another', async () => {
    const sender = client.createSender('q');
    const due = new Date(clock.now() + 60_000);
    const [keep, cancel] = await sender.scheduleMessages([{ body: 'later' }, { body: 'never' }], due);
    expect(Number(cancel) - Number(keep)).toBe(1);
    await sender.cancelScheduledMessages(cancel!);
    const receiver = client.createReceiver('q');
    const peeked = await receiver.peekMessages(10, { fromSequenceNumber: keep! });
    expect(peeked.map((m) => [m.body, m.state])).toEqual([['later', 'scheduled']]);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
    clock.advance(60_000);
    const got = await receiver.receiveMessages(2, { maxWaitTimeInMs: 1000 });
    expect(got.map((m) => m.body)).toEqual(['later']);
    const err = await sender.cancelScheduledMessages(cancel!).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('MessageNotFound');
  });

  it('fetches a deferred message by sequence number under a lock and completes it', async () => {
    await client.createSender('q').sendMessages({ body: 'later', messageId: 'D' });
    const receiver = client.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await receiver.deferMessage(m!);
    const peeked = await receiver.peekMessages(1, { fromSequenceNumber: m!.sequenceNumber! });
    expect(peeked[0]!.state).toBe('deferred');
    const [d] = await receiver.receiveDeferredMessages(m!.sequenceNumber!);
    expect(d!.messageId).toBe('D');
    expect(d!.lockToken).toMatch(/^[0-9a-f-]{36}$/);
    expect(d!.lockedUntilUtc!.getTime()).toBe(clock.now() + 30_000);
    await receiver.completeMessage(d!);
    const err = await receiver.receiveDeferredMessages(m!.sequenceNumber!).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('MessageNotFound');
  });

  it('an abandoned deferred message stays deferred', async () => {
    await client.createSender('q').sendMessages({ body: 'x' });
    const receiver = client.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await receiver.deferMessage(m!);
    const [d] = await receiver.receiveDeferredMessages(m!.sequenceNumber!);
    await receiver.abandonMessage(d!);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
    const [again] = await receiver.receiveDeferredMessages(m!.sequenceNumber!);
    expect(again!.deliveryCount).toBe(2);
  });

  it('settles through update-disposition after the receiver link is gone', async () => {
    await client.createSender('q').sendMessages({ body: 'orphan', messageId: 'O' });
    const receiver = client.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await receiver.close();
    const other = client.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    await other.completeMessage(m!);
    clock.advance(31_000);
    expect(await other.receiveMessages(1, { maxWaitTimeInMs: 300 })).toHaveLength(0);
  });

  it('renewing a lapsed lock fails with MessageLockLost', async () => {
    await client.createSender('q').sendMessages({ body: 'x' });
    const receiver = client.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    clock.advance(30_000);
    const err = await receiver.renewMessageLock(m!).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('MessageLockLost');
  });
});
