import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startBroker, type EmbeddedBroker } from 'peeklock';

let broker: EmbeddedBroker;
let client: ServiceBusClient;

beforeAll(async () => {
  // Ephemeral ports, a temporary data dir removed by stop(), no logs. The clock and faults are opt-in.
  broker = await startBroker({ clock: 'manual', faults: true });
  await broker.createQueue('orders', { settings: { lockDurationMs: 5 * 60_000, maxDeliveryCount: 3 } });
  client = new ServiceBusClient(broker.connectionString);
});

afterAll(async () => {
  await client.close();
  await broker.stop();
});

it('hands an order to another worker when the first one stalls past its five-minute lock', async () => {
  await client.createSender('orders').sendMessages({ body: { id: 42 }, messageId: 'order-42' });
  const stalled = client.createReceiver('orders');
  const [first] = await stalled.receiveMessages(1);

  await broker.advance(5 * 60_000 + 1); // no real waiting

  const worker = client.createReceiver('orders');
  const [second] = await worker.receiveMessages(1);
  expect(second.messageId).toBe('order-42');
  expect(second.deliveryCount).toBe(1);
  await expect(stalled.completeMessage(first)).rejects.toMatchObject({ code: 'MessageLockLost' });
  await worker.completeMessage(second);
});

it('survives a busy broker: the SDK retries ServerBusy and the order is stored once', async () => {
  broker.faults.failSends('ServerBusy', { count: 1, entity: 'orders' });
  const retrying = new ServiceBusClient(broker.connectionString, { retryOptions: { retryDelayInMs: 100 } });
  await retrying.createSender('orders').sendMessages({ body: { id: 43 }, messageId: 'order-43' });
  const peeked = await retrying.createReceiver('orders').peekMessages(10);
  expect(peeked.map((m) => m.messageId)).toEqual(['order-43']);
  await retrying.close();
});
