import { ServiceBusClient } from '@azure/service-bus';

// The emulator's connection string; the port goes after the host when it is not 5672.
const connectionString = process.env.SERVICEBUS_CONNECTION_STRING
  ?? 'Endpoint=sb://127.0.0.1;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true';
const client = new ServiceBusClient(connectionString);
await client.createSender('orders').sendMessages({ body: 'hello' });
const receiver = client.createReceiver('orders');
const [msg] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
console.log(msg.body);
await receiver.completeMessage(msg);
await client.close();
