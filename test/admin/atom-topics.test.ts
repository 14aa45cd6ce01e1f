// Topics, subscriptions and rules over the management plane, driven by the real administration client
// (7.10.0-beta.2 over plain HTTP, see atom-queues.test.ts), with fan-out checked on the data plane (SDK 7.9.5).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient } from '@azure/service-bus-beta';
import { ServiceBusClient } from '@azure/service-bus';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker | undefined;
let client: ServiceBusClient | undefined;

afterEach(async () => {
  await client?.close();
  await broker?.dispose();
  client = undefined;
  broker = undefined;
});

async function start(dataDir?: string): Promise<ServiceBusAdministrationClient> {
  broker = await startTestBroker([], {
    store: dataDir ? undefined : new MemoryStore(),
    dataDir,
    topics: [{ Name: 'configured-topic', Subscriptions: [{ Name: 'configured-sub' }] }],
  });
  const cs = `Endpoint=sb://127.0.0.1:${broker.httpPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`;
  return new ServiceBusAdministrationClient(cs, { retryOptions: { maxRetries: 0 } });
}

describe('ServiceBusAdministrationClient over plain HTTP: topics, subscriptions, rules', () => {
  it('creates, gets, lists, updates and deletes topics; a Config.json topic is listed too', async () => {
    const admin = await start();
    const t = await admin.createTopic('orders', { userMetadata: 'm' });
    expect(t).toMatchObject({ name: 'orders', defaultMessageTimeToLive: 'P10675199DT2H48M5.4775807S', userMetadata: 'm', status: 'Active' });
    expect(await admin.topicExists('orders')).toBe(true);
    expect(await admin.topicExists('configured-topic')).toBe(true);
    const names: string[] = [];
    for await (const x of admin.listTopics()) names.push(x.name);
    expect(names).toEqual(['configured-topic', 'orders']);
    const updated = await admin.updateTopic({ ...t, defaultMessageTimeToLive: 'PT1H' });
    expect(updated.defaultMessageTimeToLive).toBe('PT1H');
    await expect(admin.createTopic('orders')).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError' });
    await admin.deleteTopic('orders');
    expect(await admin.topicExists('orders')).toBe(false);
    await expect(admin.getTopic('orders')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError' });
  });

  it('creates subscriptions with the default rule or their own, lists, updates and deletes them', async () => {
    const admin = await start();
    await admin.createTopic('t');
    const s = await admin.createSubscription('t', 'all');
    expect(s).toMatchObject({ subscriptionName: 'all', topicName: 't', lockDuration: 'PT1M', maxDeliveryCount: 10, deadLetteringOnFilterEvaluationExceptions: true });
    expect(await admin.subscriptionExists('t', 'all')).toBe(true);
    expect(await admin.subscriptionExists('configured-topic', 'configured-sub')).toBe(true);
    await admin.createSubscription('t', 'red', { defaultRuleOptions: { name: 'only-red', filter: { sqlExpression: "color = 'red'" } } });
    const rules: string[] = [];
    for await (const r of admin.listRules('t', 'red')) rules.push(r.name);
    expect(rules).toEqual(['only-red']);
    const def = await admin.getRule('t', 'all', '$Default');
    expect(def.filter).toEqual({ sqlExpression: '1=1', sqlParameters: undefined });
    const subs: string[] = [];
    for await (const x of admin.listSubscriptions('t')) subs.push(x.subscriptionName);
    expect(subs).toEqual(['all', 'red']);
    const upd = await admin.updateSubscription({ ...s, lockDuration: 'PT2M' });
    expect(upd.lockDuration).toBe('PT2M');
    await expect(admin.createSubscription('t', 'all')).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError' });
    await expect(admin.createSubscription('missing', 'x')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError' });
    await admin.deleteSubscription('t', 'all');
    expect(await admin.subscriptionExists('t', 'all')).toBe(false);
    expect((await admin.getTopicRuntimeProperties('t')).subscriptionCount).toBe(1);
  });

  it('creates SQL and correlation rules with actions, updates and deletes them, and routes by them', async () => {
    const admin = await start();
    await admin.createTopic('t');
    await admin.createSubscription('t', 's');
    await admin.deleteRule('t', 's', '$Default');
    const sql = await admin.createRule('t', 's', 'big', { sqlExpression: 'size > 10' }, { sqlExpression: "SET tier = 'big'" });
    expect(sql).toMatchObject({ name: 'big', filter: { sqlExpression: 'size > 10' }, action: { sqlExpression: "SET tier = 'big'" } });
    const corr = await admin.createRule('t', 's', 'vip', { correlationId: 'c1', applicationProperties: { level: 'gold', n: 3, ok: true } });
    expect(corr.filter).toMatchObject({ correlationId: 'c1', applicationProperties: { level: 'gold', n: 3, ok: true } });
    await expect(admin.createRule('t', 's', 'big', { sqlExpression: '1=1' })).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError' });
    const listed: string[] = [];
    for await (const r of admin.listRules('t', 's')) listed.push(r.name);
    expect(listed).toEqual(['big', 'vip']);

    client = new ServiceBusClient(broker!.connectionString);
    const sender = client.createSender('t');
    await sender.sendMessages([
      { body: 'small', applicationProperties: { size: 1 } },
      { body: 'large', applicationProperties: { size: 20 } },
      { body: 'gold', correlationId: 'c1', applicationProperties: { level: 'gold', n: 3, ok: true } },
    ]);
    const receiver = client.createReceiver('t', 's', { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 2000 });
    expect(got.map((m) => m.body).sort()).toEqual(['gold', 'large']);
    expect(got.find((m) => m.body === 'large')?.applicationProperties?.['tier']).toBe('big');

    const updated = await admin.updateRule('t', 's', { ...sql, filter: { sqlExpression: 'size > 100' } });
    expect(updated.filter).toMatchObject({ sqlExpression: 'size > 100' });
    await admin.deleteRule('t', 's', 'vip');
    await expect(admin.getRule('t', 's', 'vip')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError' });
    await expect(admin.deleteRule('t', 's', 'vip')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError' });
    expect(await admin.ruleExists('t', 's', 'big')).toBe(true);
  });
});

describe('SQL rule parameters through the administration client', () => {
  it('binds @name values in filters and actions, reads them back, and fans out by them', async () => {
    const admin = await start();
    await admin.createTopic('t');
    await admin.createSubscription('t', 's');
    await admin.deleteRule('t', 's', '$Default');
    const created = await admin.createRule(
      't',
      's',
      'big',
      { sqlExpression: 'size > @min AND color = @color', sqlParameters: { '@min': 10, '@color': 'red' } },
      { sqlExpression: 'SET tier = @tier', sqlParameters: { '@tier': 'gold' } },
    );
    expect(created.filter).toEqual({ sqlExpression: 'size > @min AND color = @color', sqlParameters: { '@min': 10, '@color': 'red' } });
    const got = await admin.getRule('t', 's', 'big');
    expect(got.filter).toEqual({ sqlExpression: 'size > @min AND color = @color', sqlParameters: { '@min': 10, '@color': 'red' } });
    expect(got.action).toEqual({ sqlExpression: 'SET tier = @tier', sqlParameters: { '@tier': 'gold' } });
    const listed = [];
    for await (const r of admin.listRules('t', 's')) listed.push(r);
    expect(listed[0]?.filter).toMatchObject({ sqlParameters: { '@min': 10 } });

    client = new ServiceBusClient(broker!.connectionString);
    await client.createSender('t').sendMessages([
      { body: 'small', applicationProperties: { size: 5, color: 'red' } },
      { body: 'blue', applicationProperties: { size: 50, color: 'blue' } },
      { body: 'large', applicationProperties: { size: 50, color: 'red' } },
    ]);
    const receiver = client.createReceiver('t', 's', { receiveMode: 'receiveAndDelete' });
    const msgs = await receiver.receiveMessages(10, { maxWaitTimeInMs: 2000 });
    expect(msgs.map((m) => m.body)).toEqual(['large']);
    expect(msgs[0]!.applicationProperties?.['tier']).toBe('gold');

    // A new value takes effect at once: an update rebinds the parameter.
    await admin.updateRule('t', 's', { ...got, filter: { sqlExpression: 'size > @min AND color = @color', sqlParameters: { '@min': 1, '@color': 'red' } } });
    await client.createSender('t').sendMessages({ body: 'small-now', applicationProperties: { size: 5, color: 'red' } });
    expect((await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 })).map((m) => m.body)).toEqual(['small-now']);
  });

  it('refuses a rule whose expression names a parameter it does not give, creating nothing', async () => {
    const admin = await start();
    await admin.createTopic('t');
    await admin.createSubscription('t', 's');
    await expect(admin.createRule('t', 's', 'r', { sqlExpression: 'size > @min', sqlParameters: { '@max': 1 } })).rejects.toMatchObject({
      statusCode: 400,
    });
    expect(await admin.ruleExists('t', 's', 'r')).toBe(false);
  });
});

describe('topics created at run time on an LMDB broker', () => {
  it('keep their subscriptions, rules and messages across a restart, and fan out after it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-atom-topics-'));
    try {
      let admin = await start(dataDir);
      await admin.createTopic('t');
      await admin.createSubscription('t', 'evens', { defaultRuleOptions: { name: 'even', filter: { sqlExpression: 'n % 2 = 0' } } });
      client = new ServiceBusClient(broker!.connectionString);
      await client.createSender('t').sendMessages([1, 2, 3, 4].map((n) => ({ body: n, applicationProperties: { n } })));
      await client.close();
      client = undefined;
      await broker!.dispose();

      admin = await start(dataDir);
      expect((await admin.getSubscriptionRuntimeProperties('t', 'evens')).activeMessageCount).toBe(2);
      expect((await admin.getRule('t', 'evens', 'even')).filter).toMatchObject({ sqlExpression: 'n % 2 = 0' });
      client = new ServiceBusClient(broker!.connectionString);
      await client.createSender('t').sendMessages([{ body: 6, applicationProperties: { n: 6 } }, { body: 7, applicationProperties: { n: 7 } }]);
      const got = await client.createReceiver('t', 'evens', { receiveMode: 'receiveAndDelete' }).receiveMessages(10, { maxWaitTimeInMs: 2000 });
      expect(got.map((m) => m.body as number).sort()).toEqual([2, 4, 6]);
    } finally {
      await client?.close();
      client = undefined;
      await broker?.dispose();
      broker = undefined;
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
