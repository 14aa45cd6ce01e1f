import { ServiceBusAdministrationClient } from '@azure/service-bus';

// 7.9.5 dials HTTPS on the port in Endpoint; run with NODE_EXTRA_CA_CERTS=$(peeklock cert --path).
const port = process.env.PEEKLOCK_PORT ?? '5672';
const admin = new ServiceBusAdministrationClient(
  `Endpoint=sb://localhost:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
);
await admin.createQueue('invoices');
console.log(await admin.queueExists('invoices'));
await admin.deleteQueue('invoices');
