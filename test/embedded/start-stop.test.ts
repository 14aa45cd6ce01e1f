// The embedded API as a test suite uses it: one call starts a broker on ephemeral ports in a temporary data
// directory, the connection string works with the SDK, and stop() leaves no listener, socket or directory behind.
// The manual clock and fault injection stay off unless asked for.

import fs from 'node:fs';
import { ServiceBusClient } from '@azure/service-bus';
import { describe, expect, it } from 'vitest';
import { startBroker } from '../../src/index.js';

/** Counts of the handle kinds a broker opens (listeners and sockets). */
function netHandles(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap' || r === 'TCPSocketWrap').length;
}

describe('startBroker', () => {
  it('starts on ephemeral ports in a temporary directory, serves the SDK, and stop() leaves nothing behind', async () => {
    const before = netHandles();
    const broker = await startBroker({ config: { UserConfig: { Namespaces: [{ Name: 'ns', Queues: [{ Name: 'orders' }] }] } } });
    expect(broker.amqpPort).toBeGreaterThan(0);
    expect(broker.httpPort).toBeGreaterThan(0);
    expect(broker.amqpPort).not.toBe(5672);
    expect(broker.httpPort).not.toBe(5300);
    expect(broker.tlsPort).toBeNull();
    expect(broker.connectionString).toBe(
      `Endpoint=sb://127.0.0.1:${broker.amqpPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
    );
    expect(fs.existsSync(broker.dataDir)).toBe(true);

    const client = new ServiceBusClient(broker.connectionString);
    const sender = client.createSender('orders');
    await sender.sendMessages({ body: 'hello', messageId: 'm1' });
    const receiver = client.createReceiver('orders');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(m?.body).toBe('hello');
    await receiver.completeMessage(m!);
    await client.close();

    await broker.stop();
    expect(fs.existsSync(broker.dataDir)).toBe(false);
    // Closing is idempotent.
    await broker.stop();
    expect(netHandles()).toBeLessThanOrEqual(before);
  });

  it('creates and deletes queues at run time, and keeps a data directory it was given', async () => {
    const dir = fs.mkdtempSync(`${process.env.TMPDIR ?? '/tmp'}/peeklock-given-`);
    try {
      const broker = await startBroker({ dataDir: dir });
      const q = await broker.createQueue('made-at-runtime', { settings: { lockDurationMs: 30_000 } });
      expect(q.name).toBe('made-at-runtime');
      const client = new ServiceBusClient(broker.connectionString);
      await client.createSender('made-at-runtime').sendMessages({ body: 1 });
      await client.close();
      await broker.deleteQueue('made-at-runtime');
      await broker.stop();
      expect(fs.existsSync(dir)).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses advance() and faults unless they were turned on, and the HTTP routes answer 404', async () => {
    const broker = await startBroker();
    try {
      await expect(broker.advance(1000)).rejects.toThrow(/clock is not manual.*clock: "manual"/);
      expect(() => broker.faults.failSends('ServerBusy')).toThrow(/faults: true/);
      const clock = await fetch(`http://127.0.0.1:${broker.httpPort}/api/clock/advance`, { method: 'POST', body: '{"ms":1000}' });
      expect(clock.status).toBe(404);
      expect(((await clock.json()) as { error: { message: string } }).error.message).toMatch(/Broker.Clock: "manual"/);
      const faults = await fetch(`http://127.0.0.1:${broker.httpPort}/api/faults/sends`, { method: 'POST', body: '{"fail":"ServerBusy"}' });
      expect(faults.status).toBe(404);
    } finally {
      await broker.stop();
    }
  });

  it('reports a bad config with the path of the problem, and leaves no directory behind', async () => {
    const before = fs.readdirSync(process.env.TMPDIR ?? '/tmp').filter((f) => f.startsWith('peeklock-')).length;
    await expect(
      startBroker({ config: { UserConfig: { Namespaces: [{ Name: 'ns', Queues: [{ Name: 'q', Properties: { LockDuration: 'PT10M' } }] }] } } }),
    ).rejects.toThrow(/LockDuration/);
    const after = fs.readdirSync(process.env.TMPDIR ?? '/tmp').filter((f) => f.startsWith('peeklock-')).length;
    expect(after).toBeLessThanOrEqual(before);
  });
});
