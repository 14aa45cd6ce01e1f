// Topics and subscriptions through the real SDK: fan-out by rules (the $Default rule, a correlation filter,
// a SQL filter with an action), subscription dead-letter queues, and auto-forwarding.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceBusClient } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker;
let client: ServiceBusClient;

const TOPICS = [
  {
    Name: 'orders',
    Properties: { DefaultMessageTimeToLive: 'PT1H' },
    Subscriptions: [
      { Name: 'all' },
      {
        Name: 'eu-paid',
        Rules: [
          {
            Name: 'only-paid',
            Properties: { FilterType: 'Correlation', CorrelationFilter: { Label: 'OrderPaid', Properties: { region: 'eu' } } },
          },
        ],
      },
      {
        Name: 'big',
        Properties: { LockDuration: 'PT30S' },
        Rules: [
          {
            Name: 'over-1000',
            Properties: {
              FilterType: 'Sql',
              SqlFilter: { SqlExpression: "amount > 1000 AND sys.ContentType = 'application/json'" },
              Action: { SqlExpression: "SET priority = 'high'; SET sys.To = 'vip'" },
            },
          },
        ],
      },
      { Name: 'to-audit', Properties: { ForwardTo: 'audit' } },
    ],
  },
];

beforeEach(async () => {
  broker = await startTestBroker([{ Name: 'audit' }], { clock: new FakeClock(Date.now()), store: new MemoryStore(), topics: TOPICS });
  client = sdkClient(broker);
});

afterEach(async () => {
  await client.close();
  await broker.dispose();
});

async function drain(path: string, n = 10): Promise<{ body: unknown; props: Record<string, unknown>; to?: string; seq: number }[]> {
  const [topic, , sub] = path.split('/');
  const r = sub ? client.createReceiver(topic!, sub, { receiveMode: 'receiveAndDelete' }) : client.createReceiver(topic!, { receiveMode: 'receiveAndDelete' });
  const got = await r.receiveMessages(n, { maxWaitTimeInMs: 700 });
  return got.map((m) => ({ body: m.body, props: (m.applicationProperties ?? {}) as Record<string, unknown>, to: m.to, seq: Number(m.sequenceNumber) }));
}

describe('topics with the real SDK', () => {
  it('fans a send out to each subscription by its rules, with action copies modified', async () => {
    const sender = client.createSender('orders');
    await sender.sendMessages([
      { body: 'paid-eu', subject: 'OrderPaid', applicationProperties: { region: 'eu', amount: 10 } },
      { body: 'paid-us', subject: 'OrderPaid', applicationProperties: { region: 'us', amount: 10 } },
      { body: 'big-json', contentType: 'application/json', applicationProperties: { amount: 5000 } },
      { body: 'big-text', contentType: 'text/plain', applicationProperties: { amount: 5000 } },
    ]);
    expect((await drain('orders/Subscriptions/all')).map((m) => m.body)).toEqual(['paid-eu', 'paid-us', 'big-json', 'big-text']);
    expect((await drain('orders/Subscriptions/eu-paid')).map((m) => m.body)).toEqual(['paid-eu']);
    const big = await drain('orders/Subscriptions/big');
    expect(big.map((m) => m.body)).toEqual(['big-json']);
    expect(big[0]!.props).toMatchObject({ amount: 5000, priority: 'high', RuleName: 'over-1000' });
    expect(big[0]!.to).toBe('vip');
    // ForwardTo: the subscription's copies land in the queue.
    expect((await drain('audit')).map((m) => m.body)).toEqual(['paid-eu', 'paid-us', 'big-json', 'big-text']);
  });

  it('a subscription has its own lock, settlement and dead-letter queue', async () => {
    await client.createSender('orders').sendMessages({ body: 'x', messageId: 'X', contentType: 'application/json', applicationProperties: { amount: 2000 } });
    const r = client.createReceiver('orders', 'big');
    const [m] = await r.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(m!.messageId).toBe('X');
    // A reason without a description, as JavaScript callers may send it (the SDK's type asks for both).
    await r.deadLetterMessage(m!, { deadLetterReason: 'no' } as Parameters<typeof r.deadLetterMessage>[1]);
    const dlq = client.createReceiver('orders', 'big', { subQueueType: 'deadLetter' });
    const [d] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(d!.messageId).toBe('X');
    expect(d!.deadLetterReason).toBe('no');
    expect(d!.applicationProperties?.priority).toBe('high');
    // The other subscriptions still have their own copies.
    expect((await drain('orders/Subscriptions/all')).map((m) => m.body)).toEqual(['x']);
  });

  it('refuses receivers on a topic and sends to a subscription', async () => {
    const err = await client.createSender('orders/Subscriptions/all').sendMessages({ body: 1 }).then(() => null, (e: { code?: string }) => e);
    expect(err).not.toBeNull();
  });

  it('schedules on a topic: every copy appears when due and cancel removes them all', async () => {
    const sender = client.createSender('orders');
    const [keep, drop] = await sender.scheduleMessages([{ body: 'k' }, { body: 'd' }], new Date(Date.now() + 60_000));
    await sender.cancelScheduledMessages(drop!);
    const peeked = await client.createReceiver('orders', 'all').peekMessages(10);
    expect(peeked.map((m) => [m.body, m.state])).toEqual([['k', 'scheduled']]);
    void keep;
  });
});

describe('rule manager with the real SDK', () => {
  it('lists $Default, adds SQL and correlation rules, filters by them, deletes, and refuses duplicates and bad SQL', async () => {
    const rm = client.createRuleManager('orders', 'all');
    const initial = await rm.listRules().byPage().next();
    void initial;
    const rules0 = [];
    for await (const r of rm.listRules()) rules0.push(r);
    expect(rules0.map((r) => [r.name, (r.filter as { sqlExpression?: string }).sqlExpression])).toEqual([['$Default', '1=1']]);
    expect(rules0[0]!.action).toEqual({});
    await rm.createRule('sqlRule', { sqlExpression: "color = 'red'" }, { sqlExpression: 'SET tagged = true' });
    await rm.createRule('correlationRule', { subject: 'S1', applicationProperties: { k: 'v' } });
    await rm.deleteRule('$Default');
    const names = [];
    for await (const r of rm.listRules()) names.push(r.name);
    expect(names).toEqual(['correlationRule', 'sqlRule']);
    const dup = await rm.createRule('sqlRule', { sqlExpression: '1=1' }).then(() => null, (e: { code?: string }) => e.code);
    expect(dup).toBe('MessagingEntityAlreadyExists');
    const bad = await rm.createRule('bad', { sqlExpression: 'color == ' }).then(() => null, (e: unknown) => e);
    expect(bad).not.toBeNull();
    const missing = await rm.deleteRule('nope').then(() => null, (e: { code?: string }) => e.code);
    expect(missing).toBe('MessagingEntityNotFound');

    await client.createSender('orders').sendMessages([
      { body: 'red', applicationProperties: { color: 'red' } },
      { body: 'blue', applicationProperties: { color: 'blue' } },
      { body: 's1', subject: 'S1', applicationProperties: { k: 'v' } },
    ]);
    const got = await drain('orders/Subscriptions/all');
    expect(got.map((m) => [m.body, m.props.tagged ?? null])).toEqual([
      ['red', true],
      ['s1', null],
    ]);
  });
});
