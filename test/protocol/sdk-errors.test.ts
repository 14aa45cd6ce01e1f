// One test per failure the SDK must classify: each broker error reaches @azure/service-bus as the
// ServiceBusError code a Service Bus user handles (docs/wire-contract.md, "Error conditions").

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceBusClient } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { codeOf, sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker;
let clock: FakeClock;
let store: MemoryStore;
let client: ServiceBusClient;


async function failure(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(() => 'no error', codeOf);
}

beforeAll(async () => {
  clock = new FakeClock(Date.now());
  store = new MemoryStore();
  broker = await startTestBroker(
    [{ Name: 'q', Properties: { LockDuration: 'PT30S' } }, { Name: 'small', Properties: { MaxSizeInMegabytes: 1 } }],
    { clock, store },
  );
  client = sdkClient(broker);
});

afterAll(async () => {
  await client.close();
  await broker.dispose();
});

describe('ServiceBusError codes', () => {
  it('MessagingEntityNotFound for an unknown queue', async () => {
    expect(await failure(client.createSender('missing').sendMessages({ body: 1 }))).toBe('MessagingEntityNotFound');
    expect(await failure(client.createReceiver('missing').receiveMessages(1, { maxWaitTimeInMs: 200 }))).toBe('MessagingEntityNotFound');
  });

  it('MessageLockLost for a settle after the lock lapsed', async () => {
    await client.createSender('q').sendMessages({ body: 'x' });
    const r = client.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await r.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    clock.advance(30_000);
    expect(await failure(r.abandonMessage(m!))).toBe('MessageLockLost');
    const again = await client.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(again).toHaveLength(1);
  });

  it('MessageNotFound for a deferred sequence number that does not exist', async () => {
    const r = client.createReceiver('q');
    const seq = (await client.createSender('q').scheduleMessages({ body: 'x' }, new Date(clock.now() + 60_000)))[0]!;
    expect(await failure(r.receiveDeferredMessages(seq))).toBe('MessageNotFound');
    await client.createSender('q').cancelScheduledMessages(seq);
  });

  it('MessageSizeExceeded for a message over max-message-size', async () => {
    expect(await failure(client.createSender('q').sendMessages({ body: Buffer.alloc(262_145) }))).toBe('MessageSizeExceeded');
  });

  it('QuotaExceeded once the entity reaches MaxSizeInMegabytes, and sends work again after it drains', async () => {
    const sender = client.createSender('small');
    for (let i = 0; i < 4; i++) await sender.sendMessages({ body: Buffer.alloc(250_000) });
    expect(await failure(sender.sendMessages({ body: Buffer.alloc(250_000) }))).toBe('QuotaExceeded');
    const r = client.createReceiver('small', { receiveMode: 'receiveAndDelete' });
    expect(await r.receiveMessages(4, { maxWaitTimeInMs: 1000 })).toHaveLength(4);
    await sender.sendMessages({ body: Buffer.alloc(250_000) });
  });

  it('ServiceBusy (retryable) when the store cannot commit, and nothing is stored', async () => {
    store.failWrites = new Error('disk gone');
    let err: unknown;
    try {
      await client.createSender('q').sendMessages({ body: 'lost?' });
    } catch (e) {
      err = e;
    } finally {
      store.failWrites = null;
    }
    expect(codeOf(err)).toBe('ServiceBusy');
    expect((err as { retryable?: boolean }).retryable).toBe(true);
    expect(await client.createReceiver('q').peekMessages(10, {})).toEqual([]);
  });

  it('UnauthorizedAccess for a wrong key', async () => {
    const bad = new ServiceBusClient(broker.connectionString.replace('SAS_KEY_VALUE', 'nope'), { retryOptions: { maxRetries: 0 } });
    expect(await failure(bad.createSender('q').sendMessages({ body: 1 }))).toBe('UnauthorizedAccess');
    await bad.close();
  });
});
