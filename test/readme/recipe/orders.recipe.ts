import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, expect, inject, it } from 'vitest';
import { remoteBroker, type PeeklockProvided } from 'peeklock/vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    peeklock: PeeklockProvided;
  }
}

const peeklock = inject('peeklock');
const broker = remoteBroker(peeklock); // the clock and faults, over the broker's admin API
const client = new ServiceBusClient(peeklock.connectionString);
afterAll(() => client.close());

it('redelivers an order whose lock lapsed', async () => {
  await client.createSender('orders').sendMessages({ body: 'order-1' });
  const stalled = client.createReceiver('orders');
  const [first] = await stalled.receiveMessages(1);
  await broker.advance(60_001); // the queue's LockDuration is PT1M
  const [again] = await client.createReceiver('orders').receiveMessages(1);
  expect(again.deliveryCount).toBe(1);
  await expect(stalled.completeMessage(first)).rejects.toMatchObject({ code: 'MessageLockLost' });
});
