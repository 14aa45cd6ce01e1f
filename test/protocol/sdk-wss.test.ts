// AMQP over secure WebSockets (wss): @azure/service-bus 7.9.5 with `webSocketOptions` (the `ws` package) and a
// connection string without UseDevelopmentEmulator dials wss://<customEndpointAddress>/$servicebus/websocket,
// as it dials Service Bus on 443. Every port that takes TLS also takes wss (the decrypted stream is an HTTP
// upgrade), so the core Peek-Lock flows run on the amqps port and on the HTTP port alike.

import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';
import WebSocket from 'ws';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'orders', Properties: { LockDuration: 'PT30S' } }], { store: new MemoryStore(), broker: { TlsPort: 0 } });
});
afterAll(async () => broker?.dispose());

const CS = 'Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE';

async function receive(receiver: ReturnType<ServiceBusClient['createReceiver']>, n: number): Promise<ServiceBusReceivedMessage[]> {
  const got: ServiceBusReceivedMessage[] = [];
  for (let i = 0; i < 10 && got.length < n; i++) got.push(...(await receiver.receiveMessages(n - got.length, { maxWaitTimeInMs: 1000 })));
  return got;
}

describe('the SDK over wss', () => {
  for (const which of ['amqps', 'http'] as const) {
    it(`sends, locks, completes, abandons and dead-letters over wss on the ${which} port`, async () => {
      const port = which === 'amqps' ? broker.tlsPort! : broker.httpPort;
      const client = new ServiceBusClient(CS, {
        // The CA handed to ws directly (NODE_EXTRA_CA_CERTS does the same for a whole process).
        webSocketOptions: { webSocket: WebSocket, webSocketConstructorOptions: { ca: fs.readFileSync(broker.tls!.caCertPath!) } },
        customEndpointAddress: `https://localhost:${port}`,
      });
      try {
        const sender = client.createSender('orders');
        await sender.sendMessages([
          { body: 'done', messageId: 'a' },
          { body: 'again', messageId: 'b' },
          { body: 'dead', messageId: 'c' },
        ]);
        const receiver = client.createReceiver('orders');
        const got = await receive(receiver, 3);
        expect(got.map((m) => m.messageId).sort()).toEqual(['a', 'b', 'c']);
        const byId = Object.fromEntries(got.map((m) => [m.messageId as string, m]));
        await receiver.completeMessage(byId['a']!);
        await receiver.abandonMessage(byId['b']!);
        await receiver.deadLetterMessage(byId['c']!, { deadLetterReason: 'bad', deadLetterErrorDescription: 'over wss' });
        const [again] = await receive(receiver, 1);
        expect({ id: again?.messageId, deliveryCount: again?.deliveryCount }).toEqual({ id: 'b', deliveryCount: 1 });
        await receiver.completeMessage(again!);
        expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toEqual([]);
        const [dead] = await receive(client.createReceiver('orders', { subQueueType: 'deadLetter' }), 1);
        expect({ id: dead?.messageId, reason: dead?.deadLetterReason }).toEqual({ id: 'c', reason: 'bad' });
      } finally {
        await client.close();
      }
    }, 60_000);
  }
});
