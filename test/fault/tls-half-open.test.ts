// 500 TLS connections that stall mid-handshake: each is cut off by the handshake timeout, plain AMQP clients are
// served meanwhile, and the process's file descriptors return to their baseline.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { ServiceBusClient } from '@azure/service-bus';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const N = 500;
let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q' }], { store: new MemoryStore(), broker: { TlsPort: 0, AuthTimeout: 'PT2S' } });
});
afterAll(async () => broker?.dispose());

const fds = (): number => fs.readdirSync('/proc/self/fd').length;

describe('half-open TLS connections', () => {
  it(`${N} stalled handshakes are closed by the timeout; plain AMQP is served meanwhile; descriptors return`, async () => {
    // A first full handshake so that lazily opened descriptors are in the baseline.
    await new Promise<void>((resolve, reject) => {
      const s = tls.connect({ port: broker.tlsPort!, host: '127.0.0.1', ca: broker.tls!.cert }, () => {
        s.destroy();
        resolve();
      });
      s.on('error', reject);
    });
    await new Promise((r) => setTimeout(r, 100));
    const baseline = fds();
    const t0 = Date.now();
    const closed = await Promise.all(
      Array.from({ length: N }, () =>
        new Promise<number>((resolve) => {
          const s = net.connect(broker.tlsPort!, '127.0.0.1', () => s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00])));
          s.on('error', () => undefined);
          s.on('close', () => resolve(Date.now() - t0));
        }),
      ).concat([
        (async () => {
          // While they stall, a plain AMQP client works as usual.
          const client = new ServiceBusClient(broker.connectionString);
          await client.createSender('q').sendMessages({ body: 'during' });
          const receiver = client.createReceiver('q', { receiveMode: 'receiveAndDelete' });
          const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
          await client.close();
          expect(m?.body).toBe('during');
          return 0;
        })(),
      ]),
    );
    expect(Math.max(...closed)).toBeLessThan(8_000);
    const deadline = Date.now() + 5_000;
    while (fds() > baseline + 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(fds()).toBeLessThanOrEqual(baseline + 5);
  }, 30_000);
});
