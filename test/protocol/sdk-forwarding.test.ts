// Auto-forwarding with the real SDK: ForwardTo chains, the four-hop limit (MaxTransferHopCountExceeded) that
// also stops a cycle, and ForwardDeadLetteredMessagesTo carrying the reason and x-opt-deadletter-source.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceBusClient } from '@azure/service-bus';
import { MemoryStore } from '../../src/store/memory-store.js';
import { sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker;
let client: ServiceBusClient;

beforeAll(async () => {
  broker = await startTestBroker(
    [
      { Name: 'a', Properties: { ForwardTo: 'b' } },
      { Name: 'b', Properties: { ForwardTo: 'c' } },
      { Name: 'c' },
      { Name: 'ping', Properties: { ForwardTo: 'pong' } },
      { Name: 'pong', Properties: { ForwardTo: 'ping' } },
      { Name: 'work', Properties: { ForwardDeadLetteredMessagesTo: 'parking', MaxDeliveryCount: 1 } },
      { Name: 'parking' },
    ],
    { store: new MemoryStore() },
  );
  client = sdkClient(broker);
});

afterAll(async () => {
  await client.close();
  await broker.dispose();
});

async function take(queue: string, dlq = false): Promise<{ body: unknown; reason?: string; source?: string }[]> {
  const r = client.createReceiver(queue, { receiveMode: 'receiveAndDelete', subQueueType: dlq ? 'deadLetter' : undefined });
  const got = await r.receiveMessages(10, { maxWaitTimeInMs: 600 });
  return got.map((m) => ({ body: m.body, reason: m.deadLetterReason, source: m.deadLetterSource }));
}

describe('auto-forwarding', () => {
  it('ForwardTo chains deliver at the end of the chain', async () => {
    await client.createSender('a').sendMessages({ body: 'hop' });
    expect(await take('c')).toEqual([{ body: 'hop', reason: undefined, source: undefined }]);
    expect(await take('a')).toEqual([]);
  });

  it('a forwarding cycle stops after four hops in a dead-letter queue with MaxTransferHopCountExceeded', async () => {
    await client.createSender('ping').sendMessages({ body: 'loop' });
    const dead = [...(await take('ping', true)), ...(await take('pong', true))];
    expect(dead).toEqual([{ body: 'loop', reason: 'MaxTransferHopCountExceeded', source: undefined }]);
  });

  it('ForwardDeadLetteredMessagesTo moves dead letters with their reason and source', async () => {
    await client.createSender('work').sendMessages({ body: 'poison' });
    const r = client.createReceiver('work');
    const [m] = await r.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await r.deadLetterMessage(m!, { deadLetterReason: 'Bad', deadLetterErrorDescription: 'very' });
    expect(await take('work', true)).toEqual([]);
    expect(await take('parking')).toEqual([{ body: 'poison', reason: 'Bad', source: 'work' }]);
  });
});
