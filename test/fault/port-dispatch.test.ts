// Every port the broker binds goes through one dispatcher that reads the first byte: AMQP, TLS (then AMQP or
// HTTP inside), or plain HTTP. Checked here from the wire: each port answers each protocol it should and
// refuses the rest quickly, a dedicated HTTPS port (Broker.HttpsPort) takes TLS only, TLS on a broker with TLS
// off is cut at once, a failed handshake is logged once without key material, and a TLS client that goes
// silent after its handshake is closed by the deadline.

import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { ServiceBusClient } from '@azure/service-bus';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startPeeklock, type RunningBroker } from '../../src/app/app.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { testConfig } from '../helpers/config.js';

let running: RunningBroker | undefined;
let dataDir: string | undefined;
let lines: string[] = [];
afterEach(async () => {
  await running?.close();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  running = undefined;
  dataDir = undefined;
});

async function start(broker: Record<string, unknown>): Promise<RunningBroker> {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-ports-'));
  lines = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  running = await startPeeklock({ config: testConfig([{ Name: 'q' }], { DataDir: dataDir, AuthTimeout: 'PT2S', ...broker }), store: new MemoryStore(), log });
  return running;
}

/** GET /health over HTTP or HTTPS; resolves with the status, or the error code. */
function health(port: number, secure: boolean, ca?: string): Promise<number | string> {
  return new Promise((resolve) => {
    const opts = { host: '127.0.0.1', port, path: '/health', servername: 'localhost', ca, agent: false, timeout: 5000 };
    const req = (secure ? https : http).request(opts, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/** Resolves with how long the broker took to close a socket that sent `bytes` (-1: not within `ms`). */
function closedAfter(port: number, bytes: Buffer, ms = 5000): Promise<number> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1', () => s.write(bytes));
    const t = setTimeout(() => (s.destroy(), resolve(-1)), ms);
    s.on('error', () => undefined);
    s.on('data', () => undefined);
    s.on('close', () => (clearTimeout(t), resolve(Date.now() - t0)));
  });
}

const CLIENT_HELLO_START = Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00]);

async function amqpRoundTrip(port: number): Promise<string | undefined> {
  const client = new ServiceBusClient(
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
    { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } },
  );
  try {
    await client.createSender('q').sendMessages({ body: `via ${port}` });
    const [m] = await client.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(1, { maxWaitTimeInMs: 3000 });
    return m?.body as string | undefined;
  } finally {
    await client.close();
  }
}

describe('one dispatcher behind every port', () => {
  it('serves AMQP, HTTP and HTTPS on the AMQP and HTTP ports, and HTTPS only on the amqps and HTTPS ports', async () => {
    const b = await start({ TlsPort: 0, HttpsPort: 0 });
    const ca = fs.readFileSync(b.tls!.caCertPath!, 'utf8');
    for (const port of [b.port, b.httpPort]) {
      expect(await health(port, false)).toBe(200);
      expect(await health(port, true, ca)).toBe(200);
      expect(await amqpRoundTrip(port)).toBe(`via ${port}`);
    }
    for (const port of [b.tlsPort!, b.httpsPort!]) {
      expect(await health(port, true, ca)).toBe(200);
      // Plain HTTP on a TLS-only port fails its "handshake" and is cut, not served.
      expect(await health(port, false)).not.toBe(200);
    }
  }, 60_000);

  it('logs a failed handshake once, naming no key material, and keeps serving', async () => {
    const b = await start({ TlsPort: 0 });
    expect(await closedAfter(b.tlsPort!, Buffer.from('GET /health HTTP/1.1\r\n\r\n'))).toBeGreaterThanOrEqual(0);
    await new Promise((r) => setTimeout(r, 100));
    const failures = lines.filter((l) => l.includes('tls handshake failed'));
    expect(failures).toHaveLength(1);
    expect(lines.join('\n')).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE/);
    expect(await health(b.httpPort, false)).toBe(200);
  }, 30_000);

  it('closes a TLS client that says nothing after its handshake, within the deadline', async () => {
    const b = await start({ TlsPort: 0 });
    const t0 = Date.now();
    const closedIn = await new Promise<number>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port: b.port, servername: 'localhost', ca: fs.readFileSync(b.tls!.caCertPath!) });
      s.on('error', () => undefined);
      s.on('close', () => resolve(Date.now() - t0));
      setTimeout(() => (s.destroy(), resolve(-1)), 8000);
    });
    expect(closedIn).toBeGreaterThan(1000);
    expect(closedIn).toBeLessThan(5000);
  }, 30_000);

  it('cuts a TLS handshake at once when TLS is off, and still serves HTTP and AMQP on the AMQP port', async () => {
    const b = await start({ TlsPort: -1 });
    const ms = await closedAfter(b.port, CLIENT_HELLO_START);
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(ms).toBeLessThan(1000);
    expect(lines.some((l) => l.includes('TLS is off'))).toBe(true);
    expect(await health(b.port, false)).toBe(200);
    expect(await amqpRoundTrip(b.port)).toBe(`via ${b.port}`);
  }, 30_000);
});
