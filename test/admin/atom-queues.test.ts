// The management plane over plain HTTP, driven by the real administration client. @azure/service-bus
// 7.10.0-beta.2 dials plain HTTP on the Endpoint's port when the connection string has UseDevelopmentEmulator
// (7.9.5 always dials HTTPS, which needs the TLS listener), so the admin client is the beta pointed at the HTTP
// port; the data plane is the stable 7.9.5 SDK with default options.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient, type QueueProperties } from '@azure/service-bus-beta';
import { ServiceBusClient } from '@azure/service-bus';
import { ACTIVITY_SWEEP_MS } from '../../src/broker/catalog/activity.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker | undefined;
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await broker?.dispose();
  broker = undefined;
});

const KEY = 'SAS_KEY_VALUE';

function adminString(b: TestBroker, policy = 'RootManageSharedAccessKey', key = KEY): string {
  return `Endpoint=sb://127.0.0.1:${b.httpPort};SharedAccessKeyName=${policy};SharedAccessKey=${key};UseDevelopmentEmulator=true`;
}

async function start(
  opts: { store?: MemoryStore; dataDir?: string; policies?: unknown[]; clock?: FakeClock } = {},
): Promise<{ admin: ServiceBusAdministrationClient; b: TestBroker }> {
  const brokerOpts = opts.policies ? { SharedAccessPolicies: opts.policies } : {};
  broker = await startTestBroker([{ Name: 'configured', Properties: { MaxDeliveryCount: 3 } }], {
    store: opts.store,
    dataDir: opts.dataDir,
    clock: opts.clock,
    broker: brokerOpts,
  });
  const admin = new ServiceBusAdministrationClient(adminString(broker), { retryOptions: { maxRetries: 0 } });
  return { admin, b: broker };
}

function dataClient(b: TestBroker): ServiceBusClient {
  const c = new ServiceBusClient(b.connectionString);
  closers.push(() => c.close());
  return c;
}

describe('ServiceBusAdministrationClient over plain HTTP: queues', () => {
  it('creates a queue with the service defaults, gets it, and reports it exists', async () => {
    const { admin } = await start({ store: new MemoryStore() });
    const created = await admin.createQueue('orders');
    expect(created).toMatchObject<Partial<QueueProperties>>({
      name: 'orders',
      lockDuration: 'PT1M',
      maxDeliveryCount: 10,
      defaultMessageTimeToLive: 'P10675199DT2H48M5.4775807S',
      duplicateDetectionHistoryTimeWindow: 'PT10M',
      requiresSession: false,
      requiresDuplicateDetection: false,
      maxSizeInMegabytes: 1024,
      status: 'Active',
      enableBatchedOperations: true,
    });
    const got = await admin.getQueue('orders');
    expect(got.name).toBe('orders');
    expect(got.lockDuration).toBe('PT1M');
    expect(await admin.queueExists('orders')).toBe(true);
    // A Config.json queue is the same kind of entity.
    expect(await admin.queueExists('configured')).toBe(true);
    expect((await admin.getQueue('configured')).maxDeliveryCount).toBe(3);
    expect(await admin.queueExists('missing')).toBe(false);
  });

  it('creates a queue with options, updates it, and deletes it', async () => {
    const { admin } = await start({ store: new MemoryStore() });
    await admin.createQueue('target');
    const q = await admin.createQueue('opts', {
      lockDuration: 'PT45S',
      maxDeliveryCount: 7,
      defaultMessageTimeToLive: 'P2D',
      deadLetteringOnMessageExpiration: true,
      userMetadata: 'meta <&>',
      forwardDeadLetteredMessagesTo: 'target',
    });
    expect(q).toMatchObject({
      lockDuration: 'PT45S',
      maxDeliveryCount: 7,
      defaultMessageTimeToLive: 'P2D',
      deadLetteringOnMessageExpiration: true,
      userMetadata: 'meta <&>',
    });
    expect(q.forwardDeadLetteredMessagesTo).toMatch(/target$/);

    const updated = await admin.updateQueue({ ...q, lockDuration: 'PT2M', maxDeliveryCount: 4 });
    expect(updated).toMatchObject({ lockDuration: 'PT2M', maxDeliveryCount: 4, userMetadata: 'meta <&>' });
    expect((await admin.getQueue('opts')).lockDuration).toBe('PT2M');

    await admin.deleteQueue('opts');
    expect(await admin.queueExists('opts')).toBe(false);
    await expect(admin.deleteQueue('opts')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });
  });

  it('maps a duplicate to MessageEntityAlreadyExistsError and a missing queue to MessageEntityNotFoundError', async () => {
    const { admin } = await start({ store: new MemoryStore() });
    await admin.createQueue('dup');
    await expect(admin.createQueue('dup')).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError', statusCode: 409 });
    await expect(admin.createQueue('configured')).rejects.toMatchObject({ code: 'MessageEntityAlreadyExistsError' });
    // As from the real service: a missing entity's GET is 200 with an empty feed, which the client maps to not-found.
    await expect(admin.getQueue('nope')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 200 });
    expect(await admin.queueExists('nope')).toBe(false);
    await expect(admin.getQueueRuntimeProperties('nope')).rejects.toMatchObject({ code: 'MessageEntityNotFoundError' });
    await expect(admin.updateQueue({ ...(await admin.getQueue('dup')), name: 'nope' })).rejects.toMatchObject({
      code: 'MessageEntityNotFoundError',
    });
  });

  it('refuses a policy without Manage, and a wrong key, with 401', async () => {
    const { b } = await start({
      store: new MemoryStore(),
      policies: [
        { Name: 'RootManageSharedAccessKey', Key: KEY, Rights: ['Manage', 'Send', 'Listen'] },
        { Name: 'sender', Key: 'sender-key', Rights: ['Send', 'Listen'] },
      ],
    });
    const noManage = new ServiceBusAdministrationClient(adminString(b, 'sender', 'sender-key'), { retryOptions: { maxRetries: 0 } });
    await expect(noManage.createQueue('x')).rejects.toMatchObject({ code: 'UnauthorizedRequestError', statusCode: 401 });
    await expect(noManage.getNamespaceProperties()).rejects.toMatchObject({ statusCode: 401 });
    const wrongKey = new ServiceBusAdministrationClient(adminString(b, 'RootManageSharedAccessKey', 'wrong'), {
      retryOptions: { maxRetries: 0 },
    });
    await expect(wrongKey.listQueues().next()).rejects.toMatchObject({ code: 'UnauthorizedRequestError', statusCode: 401 });
  });

  it('pages over 250 queues with byPage({ maxPageSize: 100 })', async () => {
    const { admin } = await start({ store: new MemoryStore() });
    const names = Array.from({ length: 250 }, (_, i) => `page-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 25) await Promise.all(names.slice(i, i + 25).map((n) => admin.createQueue(n)));
    const sizes: number[] = [];
    const seen: string[] = [];
    for await (const page of admin.listQueues().byPage({ maxPageSize: 100 })) {
      sizes.push(page.length);
      seen.push(...page.map((q) => q.name));
    }
    expect(sizes).toEqual([100, 100, 51]);
    expect(seen).toEqual([...names, 'configured'].sort());
    const runtime: string[] = [];
    for await (const q of admin.listQueuesRuntimeProperties()) runtime.push(q.name);
    expect(runtime).toHaveLength(251);
  });

  it('reports live counts in getQueueRuntimeProperties, following sends, dead-letters and schedules', async () => {
    const { admin, b } = await start({ store: new MemoryStore() });
    await admin.createQueue('counted');
    // Never used yet: the service's "never" (DateTime.MinValue).
    expect((await admin.getQueueRuntimeProperties('counted')).accessedAt.getUTCFullYear()).toBe(1);
    const client = dataClient(b);
    const sender = client.createSender('counted');
    await sender.sendMessages([{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
    await sender.scheduleMessages({ body: 'later' }, new Date(Date.now() + 3_600_000));
    let rt = await admin.getQueueRuntimeProperties('counted');
    expect(rt).toMatchObject({ activeMessageCount: 3, deadLetterMessageCount: 0, scheduledMessageCount: 1, totalMessageCount: 4 });
    expect(rt.sizeInBytes).toBeGreaterThan(0);
    const receiver = client.createReceiver('counted');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    await receiver.deadLetterMessage(m!, { deadLetterReason: 'test', deadLetterErrorDescription: 'in a test' });
    rt = await admin.getQueueRuntimeProperties('counted');
    expect(rt).toMatchObject({ activeMessageCount: 2, deadLetterMessageCount: 1, scheduledMessageCount: 1, totalMessageCount: 4 });
    expect(rt).toMatchObject({ transferMessageCount: 0, transferDeadLetterMessageCount: 0 });
    // The dead-letter settlement was the last use.
    expect(Math.abs(rt.accessedAt.getTime() - Date.now())).toBeLessThan(10_000);
    expect(rt.accessedAt.getTime()).toBeGreaterThanOrEqual(rt.createdAt.getTime());
  });

  it('refuses sends to a queue updated to SendDisabled with MessagingEntityDisabled, and takes them again when Active', async () => {
    const { admin, b } = await start({ store: new MemoryStore() });
    const q = await admin.createQueue('switch');
    await admin.updateQueue({ ...q, status: 'SendDisabled' });
    const sender = dataClient(b).createSender('switch');
    await expect(sender.sendMessages({ body: 'x' })).rejects.toMatchObject({ code: 'MessagingEntityDisabled' });
    await admin.updateQueue({ ...q, status: 'Active' });
    await sender.sendMessages({ body: 'y' });
    expect((await admin.getQueueRuntimeProperties('switch')).activeMessageCount).toBe(1);
  });

  it('reports the namespace', async () => {
    const { admin } = await start({ store: new MemoryStore() });
    const ns = await admin.getNamespaceProperties();
    expect(ns).toMatchObject({ name: 'sbemulatorns', messagingSku: 'Standard' });
  });
});

describe('a queue created at run time on the data plane (SDK 7.9.5)', () => {
  it('sends, receives and completes, and survives a restart of an LMDB broker; a deleted one stays deleted', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-atom-'));
    closers.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const first = await start({ dataDir });
    await first.admin.createQueue('runtime', { lockDuration: 'PT30S' });
    const c1 = new ServiceBusClient(first.b.connectionString);
    await c1.createSender('runtime').sendMessages([{ body: 'one' }, { body: 'two' }]);
    const receiver = c1.createReceiver('runtime');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    expect(m?.body).toBe('one');
    await receiver.completeMessage(m!);
    await c1.close();
    await first.b.dispose();

    // Restarted on the same data directory: the queue, its settings and its message are still there.
    const again = await start({ dataDir });
    expect((await again.admin.getQueueRuntimeProperties('runtime')).activeMessageCount).toBe(1);
    expect((await again.admin.getQueue('runtime')).lockDuration).toBe('PT30S');
    const c2 = new ServiceBusClient(again.b.connectionString);
    const r2 = c2.createReceiver('runtime');
    const [m2] = await r2.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    expect(m2?.body).toBe('two');
    await r2.completeMessage(m2!);

    // Deleted: senders get not-found, and it is gone after another restart.
    await again.admin.deleteQueue('runtime');
    await expect(c2.createSender('runtime').sendMessages({ body: 'x' })).rejects.toMatchObject({ code: 'MessagingEntityNotFound' });
    await c2.close();
    await again.b.dispose();
    const third = await start({ dataDir });
    expect(await third.admin.queueExists('runtime')).toBe(false);
  });
});

describe('AutoDeleteOnIdle through the administration client', () => {
  it('deletes a queue idle for its interval on the broker clock; sends then fail with not-found', async () => {
    const clock = new FakeClock(Date.now());
    const { admin, b } = await start({ store: new MemoryStore(), clock });
    await expect(admin.createQueue('short', { autoDeleteOnIdle: 'PT4M' })).rejects.toMatchObject({ statusCode: 400 });
    expect((await admin.createQueue('temp', { autoDeleteOnIdle: 'PT5M' })).autoDeleteOnIdle).toBe('PT5M');
    const sender = dataClient(b).createSender('temp');
    await sender.sendMessages({ body: 'x' });
    const used = (await admin.getQueueRuntimeProperties('temp')).accessedAt.getTime();
    expect(used).toBe(clock.now());
    // Five minutes and one sweep later, in sweep-sized steps so each sweep's write lands.
    for (let t = 0; t < 5 * 60_000 + ACTIVITY_SWEEP_MS; t += ACTIVITY_SWEEP_MS) {
      clock.advance(ACTIVITY_SWEEP_MS);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(await admin.queueExists('temp')).toBe(false);
    await expect(sender.sendMessages({ body: 'y' })).rejects.toMatchObject({ code: 'MessagingEntityNotFound' });
  });
});
