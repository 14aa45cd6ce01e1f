// Fault injection as a user's test observes it through the SDK: ServerBusy is retried by the SDK and the send
// then succeeds; QuotaExceeded is not retried; a lock expired on demand makes the complete fail with
// MessageLockLost and the message come back; a dropped connection is re-opened by the SDK; slow $management
// calls are slow. The HTTP routes do the same and are refused without the Manage right.

import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remoteBroker, startBroker, type EmbeddedBroker } from '../../src/index.js';
import { authHeader } from '../helpers/http.js';
import { codeOf } from '../helpers/sdk.js';

let broker: EmbeddedBroker;
let client: ServiceBusClient;

beforeAll(async () => {
  broker = await startBroker({
    faults: true,
    config: { UserConfig: { Namespaces: [{ Name: 'ns', Queues: ['busy', 'quota', 'locks', 'drop', 'slow', 'remote'].map((Name) => ({ Name })) }] } },
  });
  // The SDK's default first retry waits about 30 s; a shorter delay keeps the retry observable in a test.
  client = new ServiceBusClient(broker.connectionString, { retryOptions: { retryDelayInMs: 50, maxRetries: 3 } });
});
afterAll(async () => {
  await client?.close();
  await broker?.stop();
});

async function receiveOne(queue: string): Promise<{ m: ServiceBusReceivedMessage; close: () => Promise<void>; complete: () => Promise<void> }> {
  const receiver = client.createReceiver(queue);
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
  if (!m) throw new Error(`nothing received from ${queue}`);
  return { m, close: () => receiver.close(), complete: () => receiver.completeMessage(m) };
}

describe('fault injection', () => {
  it('fails the next sends with ServerBusy; the SDK retries and the send succeeds, stored once', async () => {
    broker.faults.failSends('ServerBusy', { count: 2, entity: 'busy' });
    await client.createSender('busy').sendMessages({ body: 'after retries', messageId: 'b1' });
    const peeked = await client.createReceiver('busy').peekMessages(10);
    expect(peeked.map((m) => m.messageId)).toEqual(['b1']);
    // Both failures were used up by the SDK's attempts: it retried twice.
    const armed = await fetch(`http://127.0.0.1:${broker.httpPort}/api/faults`, { headers: { authorization: authHeader() } });
    expect(await armed.json()).toEqual({ sends: [], managementDelayMs: 0 });
  });

  it('fails a send with QuotaExceeded, which the SDK reports without retrying; the next send works', async () => {
    broker.faults.failSends('QuotaExceeded', { entity: 'quota' });
    const sender = client.createSender('quota');
    const code = await sender.sendMessages({ body: 1 }).then(() => 'sent', (e: unknown) => codeOf(e));
    expect(code).toBe('QuotaExceeded');
    await sender.sendMessages({ body: 2 });
    expect((await client.createReceiver('quota').peekMessages(10)).map((m) => m.body)).toEqual([2]);
  });

  it('leaves other entities alone when a fault names one', async () => {
    broker.faults.failSends('QuotaExceeded', { entity: 'quota' });
    await client.createSender('slow').sendMessages({ body: 'unaffected' });
    broker.faults.clear();
    await client.createSender('quota').sendMessages({ body: 3 });
  });

  it('delays the next send by the given time', async () => {
    broker.faults.delaySends(300, { entity: 'busy' });
    const t = performance.now();
    await client.createSender('busy').sendMessages({ body: 'late' });
    expect(performance.now() - t).toBeGreaterThanOrEqual(290);
  });

  it('expires a lock on demand: the complete fails with MessageLockLost and the message is delivered again', async () => {
    await client.createSender('locks').sendMessages({ body: 'x', messageId: 'l1' });
    const first = await receiveOne('locks');
    broker.faults.expireLock(first.m.lockToken!);
    expect(await first.complete().then(() => 'completed', (e: unknown) => codeOf(e))).toBe('MessageLockLost');
    const again = await receiveOne('locks');
    expect(again.m.messageId).toBe('l1');
    expect(again.m.deliveryCount).toBe(1);
    await again.complete();
    await first.close();
    await again.close();
    expect(() => broker.faults.expireLock(first.m.lockToken!)).toThrow(/lock supplied is invalid/);
  });

  it('drops every connection of an entity; the SDK reconnects and keeps working', async () => {
    const sender = client.createSender('drop');
    await sender.sendMessages({ body: 'before' });
    const before = await receiveOne('drop');
    await before.complete();
    expect(await broker.faults.dropConnections('drop')).toBeGreaterThanOrEqual(1);
    // The receiver's lock is gone with its link; the sender reconnects on its next send.
    await sender.sendMessages({ body: 'after' });
    const after = await receiveOne('drop');
    expect(after.m.body).toBe('after');
    await after.complete();
    await before.close();
    await after.close();
  });

  it('makes $management calls slow', async () => {
    const receiver = client.createReceiver('slow');
    await receiver.peekMessages(1); // the management link is up
    broker.faults.slowManagement(400);
    const t = performance.now();
    await receiver.peekMessages(1);
    expect(performance.now() - t).toBeGreaterThanOrEqual(390);
    broker.faults.slowManagement(0);
    await receiver.close();
  });

  it('takes the same faults over HTTP (remoteBroker), with the Manage right only', async () => {
    const remote = remoteBroker({ connectionString: broker.connectionString, httpPort: broker.httpPort });
    await remote.failSends('QuotaExceeded', { entity: 'remote' });
    const code = await client.createSender('remote').sendMessages({ body: 1 }).then(() => 'sent', (e: unknown) => codeOf(e));
    expect(code).toBe('QuotaExceeded');
    await client.createSender('remote').sendMessages({ body: 'm' });
    const got = await receiveOne('remote');
    await remote.expireLock(got.m.lockToken!);
    expect(await got.complete().then(() => 'completed', (e: unknown) => codeOf(e))).toBe('MessageLockLost');
    await got.close();
    await expect(remote.expireLock(got.m.lockToken!)).rejects.toThrow(/410/);
    await expect(remote.advance(1000)).rejects.toThrow(/404 The broker clock is not manual/);
    const unsigned = await fetch(`http://127.0.0.1:${broker.httpPort}/api/faults/sends`, { method: 'POST', body: '{"fail":"ServerBusy"}' });
    expect(unsigned.status).toBe(401);
    const wrong = remoteBroker({ connectionString: 'Endpoint=sb://127.0.0.1;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=nope', httpPort: broker.httpPort });
    await expect(wrong.failSends('ServerBusy')).rejects.toThrow(/401/);
    await expect(remote.failSends('Nope' as never)).rejects.toThrow(/400 fail = "Nope": must be one of "ServerBusy", "QuotaExceeded"/);
    await remote.clearFaults();
  });
});
