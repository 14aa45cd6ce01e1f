// Entities created, changed and deleted over the management plane are durable once the reply is sent: SIGKILL the
// broker right after the last reply, restart it on the same data directory, and every change is there.

import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient } from '@azure/service-bus-beta';
import { ServiceBusClient } from '@azure/service-bus';
import { exited, startChild, writeConfig, type ChildBroker } from '../helpers/child-broker.js';

const { config, dataDir, dir } = writeConfig([{ Name: 'configured' }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function httpPort(child: ChildBroker): number {
  const line = child.output().split('\n').find((l) => l.includes('"listening"'))!;
  return (JSON.parse(line) as { httpPort: number }).httpPort;
}

function clients(child: ChildBroker): { admin: ServiceBusAdministrationClient; data: ServiceBusClient } {
  const key = 'SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true';
  return {
    admin: new ServiceBusAdministrationClient(`Endpoint=sb://127.0.0.1:${httpPort(child)};${key}`, { retryOptions: { maxRetries: 0 } }),
    data: new ServiceBusClient(`Endpoint=sb://127.0.0.1:${child.port};${key}`),
  };
}

describe('management-plane changes and kill -9', () => {
  it('keeps created, updated and deleted entities, their messages, dead letters and rule fan-out (with SQL parameters) after SIGKILL', async () => {
    const args = ['--config', config, '--data-dir', dataDir];
    let child = await startChild(args);
    let { admin, data } = clients(child);
    await admin.createQueue('kept', { lockDuration: 'PT20S', maxDeliveryCount: 4 });
    await data.createSender('kept').sendMessages([{ body: 'a' }, { body: 'b' }]);
    await data.close();
    await admin.createTopic('t');
    await admin.createSubscription('t', 's', { defaultRuleOptions: { name: 'r', filter: { sqlExpression: 'x = 1' } } });
    await admin.createSubscription('t', 'p');
    await admin.deleteRule('t', 'p', '$Default');
    await admin.createRule('t', 'p', 'big', { sqlExpression: 'x > @min', sqlParameters: { '@min': 1 } });
    await admin.createQueue('gone');
    await admin.deleteQueue('gone');
    await admin.createTopic('gone-topic');
    await admin.createSubscription('gone-topic', 'sub');
    await admin.deleteTopic('gone-topic');
    // A dead-lettered message and a topic fan-out, both accepted before the kill.
    data = clients(child).data;
    await admin.createQueue('dl');
    await data.createSender('dl').sendMessages({ body: 'poison' });
    const dlReceiver = data.createReceiver('dl');
    const [poison] = await dlReceiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    await dlReceiver.deadLetterMessage(poison!, { deadLetterReason: 'Bad', deadLetterErrorDescription: 'before the kill' });
    await data.createSender('t').sendMessages([1, 2, 3].map((x) => ({ body: x, applicationProperties: { x } })));
    await data.close();
    const configured = await admin.getQueue('configured');
    await admin.updateQueue({ ...configured, maxDeliveryCount: 9 });
    child.proc.kill('SIGKILL');
    await exited(child.proc);

    child = await startChild(args);
    try {
      ({ admin, data } = clients(child));
      expect(await admin.getQueue('kept')).toMatchObject({ lockDuration: 'PT20S', maxDeliveryCount: 4 });
      expect((await admin.getQueueRuntimeProperties('kept')).activeMessageCount).toBe(2);
      expect(await admin.queueExists('gone')).toBe(false);
      expect((await admin.getQueue('configured')).maxDeliveryCount).toBe(9);
      expect((await admin.getRule('t', 's', 'r')).filter).toMatchObject({ sqlExpression: 'x = 1' });
      const receiver = data.createReceiver('kept');
      const got = [];
      // A receive may return fewer than asked; at most five tries.
      for (let i = 0; i < 5 && got.length < 2; i++) got.push(...(await receiver.receiveMessages(2 - got.length, { maxWaitTimeInMs: 2000 })));
      expect(got.map((m) => m.body)).toEqual(['a', 'b']);
      for (const m of got) await receiver.completeMessage(m);
      expect(await admin.topicExists('gone-topic')).toBe(false);

      // The dead-lettered message is in the dead-letter queue with its reason, and can be completed there.
      const dlq = data.createReceiver('dl', { subQueueType: 'deadLetter' });
      const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      expect(dead).toMatchObject({ body: 'poison', deadLetterReason: 'Bad' });
      await dlq.completeMessage(dead!);
      expect((await admin.getQueueRuntimeProperties('dl')).deadLetterMessageCount).toBe(0);

      // Fan-out through the rules created over the management plane, before and after the restart.
      await data.createSender('t').sendMessages([{ body: 4, applicationProperties: { x: 4 } }, { body: 1, applicationProperties: { x: 1 } }]);
      const drain = async (sub: string): Promise<number[]> => {
        const r = data.createReceiver('t', sub);
        const bodies: number[] = [];
        for (let i = 0; i < 5; i++) {
          const ms = await r.receiveMessages(10, { maxWaitTimeInMs: 1000 });
          if (!ms.length && bodies.length) break;
          for (const m of ms) {
            bodies.push(m.body as number);
            await r.completeMessage(m);
          }
        }
        return bodies.sort();
      };
      expect(await drain('s')).toEqual([1, 1]);
      expect(await drain('p')).toEqual([2, 3, 4]);
      await data.close();
    } finally {
      child.proc.kill('SIGKILL');
      await exited(child.proc);
    }
  });
});
