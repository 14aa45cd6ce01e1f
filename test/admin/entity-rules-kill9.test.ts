// An entity's SAS rules are part of its stored description: created, rotated, SIGKILL right after the reply, and
// after the restart the rotated key still opens the queue and the old one still does not. A Config.json rule whose
// keys the file leaves out gets generated keys once, and keeps them across restarts.

import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient } from '@azure/service-bus-beta';
import { ServiceBusClient } from '@azure/service-bus';
import { exited, startChild, writeConfig, type ChildBroker } from '../helpers/child-broker.js';
import { codeOf } from '../helpers/sdk.js';

const ROTATED = 'cm90YXRlZC1rZXktZm9yLWtpbGwtOS10ZXN0LTAwMDA=';
const { config, dataDir, dir } = writeConfig([{ Name: 'declared', Properties: { AuthorizationRules: [{ KeyName: 'generated', Rights: ['Send'] }] } }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function httpPort(child: ChildBroker): number {
  const line = child.output().split('\n').find((l) => l.includes('"listening"'))!;
  return (JSON.parse(line) as { httpPort: number }).httpPort;
}

function admin(child: ChildBroker): ServiceBusAdministrationClient {
  const key = 'SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true';
  return new ServiceBusAdministrationClient(`Endpoint=sb://127.0.0.1:${httpPort(child)};${key}`, { retryOptions: { maxRetries: 0 } });
}

/** Sends one message to `queue` with the key `keyName`/`key`; resolves with 'sent' or the error code. */
async function send(child: ChildBroker, queue: string, keyName: string, key: string): Promise<string | undefined> {
  const c = new ServiceBusClient(`Endpoint=sb://127.0.0.1:${child.port};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`, {
    retryOptions: { maxRetries: 0, timeoutInMs: 10_000 },
  });
  try {
    await c.createSender(queue).sendMessages({ body: 'x' });
    return 'sent';
  } catch (err) {
    return codeOf(err);
  } finally {
    await c.close();
  }
}

describe('entity SAS rules and kill -9', () => {
  it('keeps a rotated rule and a generated Config.json key after SIGKILL', async () => {
    const args = ['--config', config, '--data-dir', dataDir];
    let child = await startChild(args);
    let generated: string;
    let oldKey: string;
    try {
      const a = admin(child);
      generated = (await a.getQueue('declared')).authorizationRules![0]!.primaryKey!;
      expect(await send(child, 'declared', 'generated', generated)).toBe('sent');
      const q = await a.createQueue('app-queue', { authorizationRules: [{ claimType: 'SharedAccessKey', keyName: 'app', accessRights: ['Send'] }] });
      oldKey = q.authorizationRules![0]!.primaryKey!;
      expect(await send(child, 'app-queue', 'app', oldKey)).toBe('sent');
      const got = await a.getQueue('app-queue');
      await a.updateQueue({ ...got, authorizationRules: [{ ...got.authorizationRules![0]!, primaryKey: ROTATED }] });
    } finally {
      child.proc.kill('SIGKILL');
      await exited(child.proc);
    }

    child = await startChild(args);
    try {
      expect(await send(child, 'app-queue', 'app', ROTATED)).toBe('sent');
      expect(await send(child, 'app-queue', 'app', oldKey)).toBe('UnauthorizedAccess');
      expect(await send(child, 'declared', 'generated', generated)).toBe('sent');
      expect((await admin(child).getQueueRuntimeProperties('app-queue')).activeMessageCount).toBe(2);
    } finally {
      child.proc.kill('SIGKILL');
      await exited(child.proc);
    }
  }, 60_000);
});
