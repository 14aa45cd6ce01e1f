import { ServiceBusClient } from '@azure/service-bus';
import WebSocket from 'ws';

// AMQP over WebSockets (wss) to any peeklock port; run with NODE_EXTRA_CA_CERTS=$(peeklock cert --path).
const port = process.env.PEEKLOCK_PORT ?? '5671';
const client = new ServiceBusClient(
  'Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE',
  { webSocketOptions: { webSocket: WebSocket }, customEndpointAddress: `https://localhost:${port}` },
);
await client.createSender('orders').sendMessages({ body: 'hello over wss' });
const receiver = client.createReceiver('orders');
const [msg] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
console.log(msg.body);
await receiver.completeMessage(msg);
await client.close();
