// Send-via to a destination that does not exist lands in the via queue's transfer dead-letter queue, which the
// JS SDK 7.9.5 reads with subQueueType "transferDeadLetter" (`<queue>/$Transfer/$DeadLetterQueue`), with the reason
// Service Bus gives (MessagingEntityNotFound); the runtime properties (read with the 7.10 beta's plain-HTTP
// administration client) and the metrics count it.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import { ServiceBusAdministrationClient } from '@azure/service-bus-beta';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { sdkClient } from '../helpers/sdk.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'via' }, { Name: 'dest' }], { store: new MemoryStore() });
});
afterAll(async () => broker?.dispose());

// A send-via with a plain rhea client (the JS SDK has no send-via): target = the via queue, destination = attach property.
async function sendVia(destination: string, body: string): Promise<string> {
  const c = rhea.create_container({ id: 'via-client' });
  const conn: Any = c.connect({ host: '127.0.0.1', port: broker.port, reconnect: false, username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE' } as Any);
  try {
    const sender = conn.open_sender({ target: { address: 'via' }, properties: { 'com.microsoft:transfer-destination-address': destination } });
    await new Promise((r) => sender.once('sendable', r));
    expect(sender.remote.attach.properties?.['com.microsoft:transfer-destination-address']).toBe(destination);
    sender.send({ message_id: body, body });
    return await new Promise<string>((r) => {
      sender.once('accepted', () => r('accepted'));
      sender.once('rejected', (ctx: Any) => r(`rejected ${ctx.delivery.remote_state?.error?.condition}`));
    });
  } finally {
    conn.close();
  }
}

describe('send-via and the transfer dead-letter queue', () => {
  it('delivers a send-via to its destination', async () => {
    expect(await sendVia('dest', 'arrived')).toBe('accepted');
    const sb = sdkClient(broker);
    try {
      const [m] = await sb.createReceiver('dest').receiveMessages(1, { maxWaitTimeInMs: 5000 });
      expect(m?.body).toBe('arrived');
    } finally {
      await sb.close();
    }
  });

  it('moves a send-via to a missing destination to the transfer DLQ, which the SDK reads with subQueueType transferDeadLetter', async () => {
    expect(await sendVia('missing', 'orphan')).toBe('accepted');
    const sb = sdkClient(broker);
    try {
      const receiver = sb.createReceiver('via', { subQueueType: 'transferDeadLetter' });
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
      expect(m?.body).toBe('orphan');
      expect(m?.deadLetterReason).toBe('MessagingEntityNotFound');
      expect(m?.deadLetterErrorDescription).toContain('missing');
      expect(broker.broker.getQueue('via')?.counts.transferDeadLetter).toBe(1);
      // Counted where operators look: the runtime properties (Atom) and the metrics.
      const admin = new ServiceBusAdministrationClient(
        `Endpoint=sb://127.0.0.1:${broker.httpPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
        { retryOptions: { maxRetries: 0 } },
      );
      const props = await admin.getQueueRuntimeProperties('via');
      expect(props.transferDeadLetterMessageCount).toBe(1);
      expect(props.deadLetterMessageCount).toBe(0);
      const metrics = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
      expect(metrics).toMatch(/peeklock_transfer_dead_letter_messages\{entity="via"\} 1/);
      await receiver.completeMessage(m!);
      expect(broker.broker.getQueue('via')?.counts.transferDeadLetter).toBe(0);
      // Nothing reached the via queue itself or its ordinary dead-letter queue.
      expect(broker.broker.browse('via')).toHaveLength(0);
      expect(broker.broker.browse('via/$DeadLetterQueue')).toHaveLength(0);
    } finally {
      await sb.close();
    }
  });
});
