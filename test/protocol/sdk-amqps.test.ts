// AMQP over TLS (amqps): the broker's TLS port carries the same AMQP server, with a certificate issued by its
// local CA. The JS SDK 7.9.5 is given a plain Service Bus connection string (no UseDevelopmentEmulator, so it
// dials TLS) and `customEndpointAddress` pointing at the TLS port; it trusts the CA through NODE_EXTRA_CA_CERTS,
// which Node reads only at start, so the client runs in a child process. The plain AMQP port takes TLS as well
// (told apart by the first byte). Then what a TLS port must survive:
// plain AMQP sent to it and a client that stalls mid-handshake are cut off, and the broker goes on serving.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import net from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { ServiceBusClient } from '@azure/service-bus';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }], {
    store: new MemoryStore(),
    broker: { TlsPort: 0, AuthTimeout: 'PT2S' },
  });
});
afterAll(async () => broker?.dispose());

// The client as a user would write it (docs/clients.md, "Connecting over TLS").
const CLIENT = `
import { ServiceBusClient } from '@azure/service-bus';
const [port] = process.argv.slice(1);
const client = new ServiceBusClient(
  'Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE',
  { customEndpointAddress: 'amqps://localhost:' + port, retryOptions: { maxRetries: 1, timeoutInMs: 10000 } },
);
const out = {};
const sender = client.createSender('q');
await sender.sendMessages([{ body: 'one', messageId: 'm1' }, { body: 'two', messageId: 'm2' }, { body: 'three', messageId: 'm3' }]);
const receiver = client.createReceiver('q');
const got = await receiver.receiveMessages(3, { maxWaitTimeInMs: 5000 });
out.received = got.map((m) => m.body);
const byId = Object.fromEntries(got.map((m) => [m.messageId, m]));
await receiver.completeMessage(byId.m1);
await receiver.abandonMessage(byId.m2);
await receiver.deadLetterMessage(byId.m3, { deadLetterReason: 'bad', deadLetterErrorDescription: 'over tls' });
const again = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
out.redelivered = again.map((m) => ({ id: m.messageId, deliveryCount: m.deliveryCount }));
await receiver.renewMessageLock(again[0]);
await receiver.completeMessage(again[0]);
out.peekAfter = (await receiver.peekMessages(5)).length;
const dlq = client.createReceiver('q', { subQueueType: 'deadLetter' });
const dead = await dlq.receiveMessages(1, { maxWaitTimeInMs: 5000 });
out.dead = dead.map((m) => ({ id: m.messageId, reason: m.deadLetterReason }));
await dlq.completeMessage(dead[0]);
await client.close();
process.stdout.write(JSON.stringify(out) + '\\n');
`;

function runClient(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--input-type=module', '-e', CLIENT, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 50_000);
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Resolves with how long the server took to close a socket that sent `bytes` (or nothing). */
function closedAfter(port: number, bytes: Buffer | null): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1', () => {
      if (bytes) s.write(bytes);
    });
    s.on('data', () => undefined);
    s.on('error', () => undefined);
    s.on('close', () => resolve(Date.now() - t0));
    setTimeout(() => reject(new Error('the socket was not closed within 15 s')), 15_000).unref();
  });
}

describe('amqps', () => {
  it('the JS SDK, trusting the local CA, sends, locks, settles and reads the DLQ over TLS', async () => {
    expect(broker.tlsPort).toBeGreaterThan(0);
    const ca = broker.tls!.caCertPath!;
    const res = await runClient([String(broker.tlsPort)], { ...process.env, NODE_EXTRA_CA_CERTS: ca });
    expect(res.stderr).toBe('');
    const out = JSON.parse(res.stdout);
    expect(out.received.sort()).toEqual(['one', 'three', 'two']);
    expect(out.redelivered).toEqual([{ id: 'm2', deliveryCount: 1 }]);
    expect(out.peekAfter).toBe(0);
    expect(out.dead).toEqual([{ id: 'm3', reason: 'bad' }]);
  });

  it('the JS SDK refuses the broker when it does not trust the CA, and the broker is unaffected', async () => {
    const env = { ...process.env };
    delete env.NODE_EXTRA_CA_CERTS;
    const res = await runClient([String(broker.tlsPort)], env);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/self[- ]signed|unable to (get|verify)|certificate/i);
    expect(await handshake(broker.tlsPort!)).toBe('TLSv1.3');
  });

  it('takes TLS on the plain AMQP port too, by its first byte, while plain AMQP goes on working there', async () => {
    const res = await runClient([String(broker.port)], { ...process.env, NODE_EXTRA_CA_CERTS: broker.tls!.caCertPath! });
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout).dead).toEqual([{ id: 'm3', reason: 'bad' }]);
    const client = new ServiceBusClient(broker.connectionString);
    try {
      await client.createSender('q').sendMessages({ body: 'plain', messageId: 'plain' });
      const receiver = client.createReceiver('q');
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
      expect(m?.body).toBe('plain');
      await receiver.completeMessage(m!);
    } finally {
      await client.close();
    }
  });

  it('closes a connection to the plain port that sends nothing within the auth timeout', async () => {
    const ms = await closedAfter(broker.port, null);
    expect(ms).toBeGreaterThan(1_500);
    expect(ms).toBeLessThan(5_000);
  });

  it('closes plain AMQP sent to the TLS port at once', async () => {
    const ms = await closedAfter(broker.tlsPort!, Buffer.from('AMQP\x03\x01\x00\x00', 'latin1'));
    expect(ms).toBeLessThan(2_000);
    expect(await handshake(broker.tlsPort!)).toBe('TLSv1.3');
  });

  it('closes a client that stalls mid-handshake once the handshake timeout passes', async () => {
    // The first bytes of a TLS ClientHello record, then nothing.
    const ms = await closedAfter(broker.tlsPort!, Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
    expect(ms).toBeGreaterThan(1_000);
    expect(ms).toBeLessThan(5_000);
    expect(await handshake(broker.tlsPort!)).toBe('TLSv1.3');
  });

  it('refuses TLS 1.1', async () => {
    const err = await new Promise<Error>((resolve) => {
      const s = tls.connect({ port: broker.tlsPort!, host: '127.0.0.1', ca: broker.tls!.cert, maxVersion: 'TLSv1.1', minVersion: 'TLSv1' });
      s.on('error', resolve);
      s.on('secureConnect', () => resolve(new Error('connected')));
    });
    expect(err.message).not.toBe('connected');
  });
});

/** Completes a TLS handshake with the broker, trusting its CA; resolves with the protocol version. */
function handshake(port: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ port, host: '127.0.0.1', ca: broker.tls!.cert }, () => {
      resolve(s.getProtocol());
      s.destroy();
    });
    s.on('error', reject);
  });
}
