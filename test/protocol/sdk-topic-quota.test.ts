// A topic's MaxSizeInMegabytes through the real SDK (issue 25, row 8). Service Bus counts a topic's size as the
// messages its subscriptions hold (a message sent to a topic is counted once per subscription that keeps it), and
// rejects a send once the topic is full: the SDK gets QuotaExceeded and nothing of the refused send is stored.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceBusClient } from '@azure/service-bus';
import { MemoryStore } from '../../src/store/memory-store.js';
import { codeOf, sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker;
let client: ServiceBusClient;

const TOPICS = [
  { Name: 'small', Properties: { MaxSizeInMegabytes: 1 }, Subscriptions: [{ Name: 'a' }, { Name: 'b' }] },
  { Name: 'big', Subscriptions: [{ Name: 'all' }] },
];

beforeAll(async () => {
  broker = await startTestBroker([], { store: new MemoryStore(), topics: TOPICS });
  client = sdkClient(broker);
});

afterAll(async () => {
  await client.close();
  await broker.dispose();
});

const stored = (path: string): { count: number; bytes: number } => {
  const e = broker.broker.listEntities().find((x) => x.path === path)!;
  return { count: e.active, bytes: e.bytes };
};

describe('a topic with MaxSizeInMegabytes 1', () => {
  it('refuses a send with QuotaExceeded once its subscriptions hold 1 MB, and stores nothing of it', async () => {
    const sender = client.createSender('small');
    // Two subscriptions keep a copy each: two 200 KB sends are 800 KB of the topic's 1 MB, a third would be 1.2 MB.
    for (let i = 0; i < 2; i++) await sender.sendMessages({ body: Buffer.alloc(200_000) });
    const before = ['a', 'b'].map((s) => stored(`small/Subscriptions/${s}`));
    expect(before.map((s) => s.count)).toEqual([2, 2]);
    const err = await sender.sendMessages({ body: Buffer.alloc(200_000) }).then(() => undefined, (e: unknown) => e);
    expect(codeOf(err)).toBe('QuotaExceeded');
    expect(String((err as Error).message)).toContain("'small'");
    expect(['a', 'b'].map((s) => stored(`small/Subscriptions/${s}`))).toEqual(before);
    // Another topic is not affected, and the full one takes sends again once a subscription drains.
    await client.createSender('big').sendMessages({ body: Buffer.alloc(200_000) });
    const r = client.createReceiver('small', 'a', { receiveMode: 'receiveAndDelete' });
    const r2 = client.createReceiver('small', 'b', { receiveMode: 'receiveAndDelete' });
    expect(await r.receiveMessages(2, { maxWaitTimeInMs: 1000 })).toHaveLength(2);
    expect(await r2.receiveMessages(2, { maxWaitTimeInMs: 1000 })).toHaveLength(2);
    await sender.sendMessages({ body: Buffer.alloc(200_000) });
    expect(stored('small/Subscriptions/a').count).toBe(1);
  });
});
