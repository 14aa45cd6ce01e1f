// AMQP over WebSockets on the HTTP port: the real @azure/service-bus SDK with `webSocketOptions` (the `ws`
// package) runs the core Peek-Lock flows through `GET /$servicebus/websocket`, subprotocol AMQPWSB10; a wrong
// key is refused as over TCP; and hostile upgrades (wrong path, wrong subprotocol, garbage after the upgrade,
// a message over the frame size, an upgraded socket that stays silent) are refused or closed while a normal
// WebSocket client keeps working; WebSocket connections count against the connection cap and are closed with
// connection:forced on shutdown. The block between the README markers is the snippet of docs/clients.md, verbatim.

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';
import { pino } from 'pino';
import rhea from 'rhea';
import WebSocket from 'ws';
import { startPeeklock } from '../../src/app/app.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { testConfig } from '../helpers/config.js';
import { docSection, fencedBlocks, readDoc } from '../helpers/docs.js';
import { codeOf } from '../helpers/sdk.js';

const QUEUES = [
  { Name: 'orders', Properties: { LockDuration: 'PT30S', MaxDeliveryCount: 2 } },
  { Name: 'carts', Properties: { RequiresSession: true } },
];
const AUTH_TIMEOUT_MS = 1500;

let broker: TestBroker;
let client: ServiceBusClient;

/** The client of docs/clients.md's "AMQP over WebSockets" section, for a connection string and an HTTP port. */
function webSocketClient(connectionString: string, httpPort: number): ServiceBusClient {
  // README:begin
  // The SDK always dials wss://<host>:<port>/$servicebus/websocket; the HTTP port speaks plain ws.
  class PlainWebSocket extends WebSocket {
    constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
      super(url.replace(/^wss:/, 'ws:'), protocols, options);
    }
  }

  const client = new ServiceBusClient(connectionString, {
    webSocketOptions: { webSocket: PlainWebSocket },
    customEndpointAddress: `ws://127.0.0.1:${httpPort}`,
  });
  // README:end
  return client;
}

async function receive(receiver: ReturnType<ServiceBusClient['createReceiver']>, n: number): Promise<ServiceBusReceivedMessage[]> {
  const got: ServiceBusReceivedMessage[] = [];
  for (let i = 0; i < 10 && got.length < n; i++) got.push(...(await receiver.receiveMessages(n - got.length, { maxWaitTimeInMs: 1000 })));
  return got;
}

/** A raw WebSocket to the HTTP port; resolves when open, rejects with the HTTP status of a refused upgrade. */
function rawWs(path: string, protocol: string | undefined): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${broker.httpPort}${path}`, protocol ? [protocol] : []);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      reject(new Error(`HTTP ${res.statusCode}`));
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

/** Resolves with the close code once the WebSocket is closed (or the time is up: -1). */
function closed(ws: WebSocket, withinMs: number): Promise<number> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve(0);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(-1), withinMs);
    ws.once('close', (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

/** Sends one message and takes it back with the WebSocket client: proof the endpoint still serves. */
async function roundTrip(body: string): Promise<void> {
  await client.createSender('orders').sendMessages({ body });
  const receiver = client.createReceiver('orders');
  const [m] = await receive(receiver, 1);
  expect(m?.body).toBe(body);
  await receiver.completeMessage(m!);
  await receiver.close();
}

beforeAll(async () => {
  broker = await startTestBroker(QUEUES, { broker: { AuthTimeout: `PT${AUTH_TIMEOUT_MS / 1000}S`, MaxMessageSizeBytes: 1_048_576 } });
  client = webSocketClient(broker.connectionString, broker.httpPort);
});

afterAll(async () => {
  await client?.close();
  await broker?.dispose();
});

describe('the SDK over WebSockets', () => {
  it('sends, receives in peek-lock, completes, and a completed message never comes back', async () => {
    await client.createSender('orders').sendMessages([{ body: 'a' }, { body: 'b' }]);
    const receiver = client.createReceiver('orders');
    const msgs = await receive(receiver, 2);
    expect(msgs.map((m) => m.body).sort()).toEqual(['a', 'b']);
    expect(msgs.every((m) => m.lockToken && m.deliveryCount === 0)).toBe(true);
    for (const m of msgs) await receiver.completeMessage(m);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 300 })).toEqual([]);
    await receiver.close();
  });

  it('redelivers an abandoned message, renews a lock, and dead-letters past the max delivery count', async () => {
    await client.createSender('orders').sendMessages({ body: 'again', messageId: 'm-abandon' });
    const receiver = client.createReceiver('orders', { maxAutoLockRenewalDurationInMs: 0 });
    const [first] = await receive(receiver, 1);
    const until = first!.lockedUntilUtc!.getTime();
    await new Promise((r) => setTimeout(r, 20));
    const renewed = await receiver.renewMessageLock(first!);
    expect(renewed.getTime()).toBeGreaterThan(until);
    await receiver.abandonMessage(first!);
    const [second] = await receive(receiver, 1);
    expect(second?.messageId).toBe('m-abandon');
    expect(second?.deliveryCount).toBe(1);
    await receiver.deadLetterMessage(second!, { deadLetterReason: 'bad', deadLetterErrorDescription: 'over ws' });
    const dlq = client.createReceiver('orders', { subQueueType: 'deadLetter' });
    const [dead] = await receive(dlq, 1);
    expect(dead?.messageId).toBe('m-abandon');
    expect(dead?.deadLetterReason).toBe('bad');
    await dlq.completeMessage(dead!);
    await dlq.close();
    await receiver.close();
  });

  it('carries a message of several full-size frames both ways (each WebSocket message stays within the frame size)', async () => {
    const body = Buffer.alloc(900_000, 7);
    await client.createSender('orders').sendMessages({ body, messageId: 'big' });
    const receiver = client.createReceiver('orders');
    const [m] = await receive(receiver, 1);
    expect(m?.messageId).toBe('big');
    expect(Buffer.compare(Buffer.from(m!.body as Uint8Array), body)).toBe(0);
    await receiver.completeMessage(m!);
    await receiver.close();
  });

  it('accepts a session and receives only its messages', async () => {
    await client.createSender('carts').sendMessages([
      { body: 'one', sessionId: 's1' },
      { body: 'other', sessionId: 's2' },
      { body: 'two', sessionId: 's1' },
    ]);
    const session = await client.acceptSession('carts', 's1');
    const msgs = await receive(session, 2);
    expect(msgs.map((m) => m.body)).toEqual(['one', 'two']);
    await session.setSessionState('seen');
    expect(await session.getSessionState()).toBe('seen');
    for (const m of msgs) await session.completeMessage(m);
    await session.close();
  });

  it('refuses a wrong key with UnauthorizedAccess', async () => {
    const bad = broker.connectionString.replace('SAS_KEY_VALUE', 'wrong-key');
    const c = new ServiceBusClient(bad, {
      webSocketOptions: { webSocket: PlainWebSocketForTests },
      customEndpointAddress: `ws://127.0.0.1:${broker.httpPort}`,
      retryOptions: { maxRetries: 0, timeoutInMs: 5000 },
    });
    const err = await c
      .createSender('orders')
      .sendMessages({ body: 'x' })
      .then(() => null, (e: unknown) => e);
    await c.close();
    expect(codeOf(err)).toBe('UnauthorizedAccess');
  });
});

describe('hostile WebSocket clients', () => {
  it('refuses a wrong path with 404 and a missing AMQPWSB10 subprotocol with 400, before upgrading', async () => {
    await expect(rawWs('/socket', 'AMQPWSB10')).rejects.toThrow('HTTP 404');
    await expect(rawWs('/$servicebus/websocket', 'mqtt')).rejects.toThrow('HTTP 400');
    await expect(rawWs('/$servicebus/websocket', undefined)).rejects.toThrow('HTTP 400');
    await roundTrip('after bad upgrades');
  });

  it('answers the AMQP header on both spellings of the path', async () => {
    for (const path of ['/$servicebus/websocket', '/$servicebus/websocket/']) {
      const ws = await rawWs(path, 'AMQPWSB10');
      expect(ws.protocol).toBe('AMQPWSB10');
      const first = new Promise<Buffer>((r) => ws.once('message', (d) => r(d as Buffer)));
      ws.send(Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0])); // AMQP SASL header
      expect((await first).subarray(0, 8)).toEqual(Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0]));
      ws.terminate();
    }
  });

  it('answers garbage instead of the AMQP header with the header it expects, then closes (the frame guard)', async () => {
    const ws = await rawWs('/$servicebus/websocket', 'AMQPWSB10');
    const got: Buffer[] = [];
    ws.on('message', (d) => got.push(d as Buffer));
    ws.send(Buffer.from('GET / HTTP/1.1\r\n\r\nnot amqp at all'));
    expect(await closed(ws, 3000)).toBeGreaterThan(0);
    expect(Buffer.concat(got)).toEqual(Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0]));
    await roundTrip('after garbage');
  });

  it('closes a WebSocket message larger than the max frame size (1009) without reading it', async () => {
    const ws = await rawWs('/$servicebus/websocket', 'AMQPWSB10');
    ws.send(Buffer.alloc(262_144 + 1));
    expect(await closed(ws, 3000)).toBe(1009);
    await roundTrip('after an oversized message');
  });

  it('closes an upgraded WebSocket that never sends a byte after the authentication deadline', async () => {
    const ws = await rawWs('/$servicebus/websocket', 'AMQPWSB10');
    const started = Date.now();
    expect(await closed(ws, AUTH_TIMEOUT_MS + 3000)).toBeGreaterThan(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(AUTH_TIMEOUT_MS - 100);
    await roundTrip('after a silent socket');
  });

  it('closes 100 WebSockets stalled mid-frame after the authentication deadline and gives back every descriptor', async () => {
    const fds = (): number => fs.readdirSync('/proc/self/fd').length;
    await roundTrip('warm');
    const baseline = fds();
    const stalled = await Promise.all(Array.from({ length: 100 }, () => rawWs('/$servicebus/websocket', 'AMQPWSB10')));
    // The SASL header, then the first 3 bytes of a frame header: the guard waits for the rest.
    for (const ws of stalled) ws.send(Buffer.from([0x41, 0x4d, 0x51, 0x50, 3, 1, 0, 0, 0, 0, 0]));
    const codes = await Promise.all(stalled.map((ws) => closed(ws, AUTH_TIMEOUT_MS + 4000)));
    expect(codes.filter((c) => c <= 0)).toEqual([]);
    await roundTrip('after 100 stalled WebSockets');
    for (let i = 0; i < 40 && fds() > baseline + 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(fds()).toBeLessThanOrEqual(baseline + 2);
  });

  it('closes a socket whose upgrade request never completes', async () => {
    const sock = net.connect(broker.httpPort, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write('GET /$servicebus/websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n');
    const gone = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), AUTH_TIMEOUT_MS + 4000);
      sock.once('close', () => {
        clearTimeout(t);
        resolve(true);
      });
      sock.on('error', () => undefined);
      sock.resume();
    });
    sock.destroy();
    expect(gone).toBe(true);
    await roundTrip('after a stalled upgrade');
  });
});

describe('the connection cap, logs and shutdown', () => {
  /** Opens a plain rhea client over WebSockets with SASL PLAIN; resolves with how its connection ended. */
  function rheaOverWs(port: number): { opened: Promise<boolean>; ended: Promise<string>; close(): void } {
    const container = rhea.create_container();
    const connect = container.websocket_connect(WebSocket as never);
    const conn = container.connect({
      connection_details: connect(`ws://127.0.0.1:${port}/$servicebus/websocket`, ['AMQPWSB10'], {}),
      username: 'RootManageSharedAccessKey',
      password: 'SAS_KEY_VALUE',
      reconnect: false,
    } as never);
    let opened!: (v: boolean) => void;
    const openedP = new Promise<boolean>((r) => (opened = r));
    const ended = new Promise<string>((resolve) => {
      const done = (): void => {
        const e = (conn.error ?? {}) as { condition?: string };
        opened(false);
        resolve(e.condition ?? 'closed');
      };
      conn.on('connection_close', done);
      conn.on('connection_error', done);
      conn.on('disconnected', done);
    });
    conn.on('connection_open', () => opened(true));
    return { opened: openedP, ended, close: () => conn.close() };
  }

  /** A raw WebSocket that misbehaves as `how` says, resolved once the broker has closed it. */
  async function misbehave(port: number, how: 'garbage' | 'oversized' | 'text'): Promise<void> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/$servicebus/websocket`, ['AMQPWSB10']);
    await new Promise((r) => ws.once('open', r));
    if (how === 'garbage') ws.send(Buffer.from('not amqp'));
    else if (how === 'oversized') ws.send(Buffer.alloc(300_000));
    else ws.send('AMQP\x03\x01\x00\x00');
    expect(await closed(ws, 3000), how).toBeGreaterThan(0);
  }

  it('counts WebSocket connections against MaxConnections, frees the slot of each refused one, logs a bad upgrade once, and closes them on shutdown', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-ws-'));
    const running = await startPeeklock({ config: testConfig(QUEUES, { DataDir: dataDir, MaxConnections: 1 }), store: new MemoryStore(), log });
    try {
      const first = rheaOverWs(running.httpPort);
      expect(await first.opened).toBe(true);
      const second = rheaOverWs(running.httpPort);
      expect(await second.ended).toBe('amqp:resource-limit-exceeded');

      const before = lines.length;
      await expect(
        new Promise((resolve, reject) => {
          const ws = new WebSocket(`ws://127.0.0.1:${running.httpPort}/$servicebus/websocket`, ['mqtt']);
          ws.once('unexpected-response', (_q, res) => resolve(res.statusCode));
          ws.once('open', () => reject(new Error('upgraded')));
        }),
      ).resolves.toBe(400);
      await new Promise((r) => setTimeout(r, 100));
      expect(lines.slice(before).filter((l) => l.includes('websocket upgrade refused'))).toHaveLength(1);

      // Each hostile WebSocket takes the one free slot in turn and gives it back when closed.
      first.close();
      expect(await first.ended).toBe('closed');
      for (const how of ['garbage', 'oversized', 'text'] as const) await misbehave(running.httpPort, how);
      const third = rheaOverWs(running.httpPort);
      expect(await third.opened).toBe(true);

      const started = Date.now();
      await running.close();
      expect(Date.now() - started).toBeLessThan(2500);
      expect(await third.ended).toBe('amqp:connection:forced');
    } finally {
      await running.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('docs/clients.md', () => {
  it('shows the WebSocket client this test runs, verbatim', () => {
    const self = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8');
    const block = self.split('// README:begin\n')[1]!.split('  // README:end')[0]!;
    const snippet = block
      .split('\n')
      .map((l) => l.replace(/^ {2}/, ''))
      .join('\n')
      .trim();
    const blocks = fencedBlocks(docSection(readDoc('docs/clients.md'), '## AMQP over WebSockets'), 'ts');
    expect(snippet.length).toBeGreaterThan(100);
    expect(blocks.some((b) => b.includes(snippet)), `docs/clients.md lacks this snippet:\n${snippet}`).toBe(true);
  });
});

/** The documented client class, for the test that builds its own client with a wrong key. */
class PlainWebSocketForTests extends WebSocket {
  constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
    super(url.replace(/^wss:/, 'ws:'), protocols, options);
  }
}
