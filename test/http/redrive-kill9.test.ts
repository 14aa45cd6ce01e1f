// A kill -9 of the broker (a child process) in the middle of a CLI redrive: after a restart on the same data
// directory every message is either still dead-lettered or back in its queue, exactly once.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, exited, startChild, writeConfig, type ChildBroker } from '../helpers/child-broker.js';
import { api, until } from '../helpers/http.js';

const N = 200;
const { config, dataDir, dir } = writeConfig([{ Name: 'orders', Properties: { LockDuration: 'PT1M' } }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function httpBase(child: ChildBroker): string {
  const line = child
    .output()
    .split('\n')
    .find((l) => l.includes('"listening"'))!;
  return `http://127.0.0.1:${(JSON.parse(line) as { httpPort: number }).httpPort}`;
}

async function fillDeadLetterQueue(port: number): Promise<void> {
  const client = new ServiceBusClient(
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
  );
  await client
    .createSender('orders')
    .sendMessages(Array.from({ length: N }, (_, i) => ({ messageId: `m${i}`, body: { i } })));
  const receiver = client.createReceiver('orders', { maxAutoLockRenewalDurationInMs: 0 });
  let done = 0;
  for (let round = 0; round < 50 && done < N; round++) {
    const msgs = await receiver.receiveMessages(N - done, { maxWaitTimeInMs: 1000 });
    await Promise.all(
      msgs.map((m) =>
        receiver.deadLetterMessage(m, { deadLetterReason: 'Poison', deadLetterErrorDescription: 'test' }),
      ),
    );
    done += msgs.length;
  }
  await client.close();
  expect(done).toBe(N);
}

async function ids(base: string, view: string): Promise<string[]> {
  const r = await api(base, `/api/entities/orders/messages?view=${view}&count=1000`);
  return r.body.messages.map((m: { messageId: string }) => m.messageId);
}

describe('redrive under kill -9', () => {
  it('leaves every message in the dead-letter queue or the queue, exactly once', async () => {
    const first = await startChild(['--config', config, '--data-dir', dataDir]);
    const base = httpBase(first);
    await fillDeadLetterQueue(first.port);
    expect((await api(base, '/api/entities/orders')).body.deadLettered).toBe(N);

    const cli = spawn(process.execPath, [BIN, 'redrive', 'orders', '--rate', '60', '--url', base], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    cli.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await until(() => first.output().includes('"redrive started"'), 15_000);
    let moved = 0;
    for (let i = 0; i < 300 && moved < 20; i++) {
      moved = (await api(base, '/api/entities/orders')).body.active as number;
      if (moved < 20) await new Promise((r) => setTimeout(r, 25));
    }
    expect(moved).toBeGreaterThanOrEqual(20);
    first.proc.kill('SIGKILL');
    await exited(first.proc);
    expect(await exited(cli)).toBe(1);
    expect(stderr).toMatch(/peeklock: the connection to the broker broke before the redrive finished/);

    const second = await startChild(['--config', config, '--data-dir', dataDir]);
    const base2 = httpBase(second);
    const inQueue = await ids(base2, 'active');
    const inDlq = await ids(base2, 'deadletter');
    second.proc.kill('SIGTERM');
    expect(await exited(second.proc)).toBe(0);

    expect(inQueue.length).toBeGreaterThanOrEqual(20);
    expect(inDlq.length).toBeGreaterThan(0); // the kill really came mid-redrive
    const all = [...inQueue, ...inDlq];
    expect(all).toHaveLength(N);
    expect(new Set(all)).toEqual(new Set(Array.from({ length: N }, (_, i) => `m${i}`)));
  });
});
