// Issue 25, row 7: the HTTP port holds no socket for a client that trickles: a request's headers and body must
// arrive within Broker.HttpRequestTimeout (Node answers 408 and closes), and a JSON body within BODY_TIMEOUT_MS
// whatever the server. HTTP sockets count against Broker.MaxConnections until they close (keep-alive included):
// one over the cap is answered 503.

import net from 'node:net';
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import rhea from 'rhea';
import { BODY_TIMEOUT_MS, readJsonObject } from '../../src/http/http-util.js';
import { authHeader, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await b?.close();
  b = undefined;
});

// Writes `text` on a fresh socket; resolves with what came back and when the socket closed (or 'open' at `waitMs`).
function raw(port: number, text: string, waitMs: number): Promise<{ reply: string; closedAfterMs: number | 'open'; socket: net.Socket }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const t0 = Date.now();
    let reply = '';
    socket.on('data', (c: Buffer) => (reply += c.toString()));
    socket.on('error', () => undefined);
    const timer = setTimeout(() => resolve({ reply, closedAfterMs: 'open', socket }), waitMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ reply, closedAfterMs: Date.now() - t0, socket });
    });
    socket.write(text);
  });
}

describe('slow requests', () => {
  it('cuts off a JSON body that trickles in, after Broker.HttpRequestTimeout, with 408', async () => {
    b = await startHttpBroker([{ Name: 'q' }], { broker: { HttpRequestTimeout: 'PT1S' } });
    const r = await raw(b.httpPort, `POST /api/entities/q/purge HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authHeader()}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"vi`, 6000);
    r.socket.destroy();
    expect(r.closedAfterMs).not.toBe('open');
    expect(r.closedAfterMs).toBeLessThan(4000);
    expect(r.reply).toMatch(/^HTTP\/1\.1 408/);
  }, 15_000);

  it('gives a JSON body BODY_TIMEOUT_MS to arrive, then refuses it with 408', async () => {
    vi.useFakeTimers();
    const body = new PassThrough();
    body.write('{"view"');
    const outcome = readJsonObject(body as unknown as IncomingMessage).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(BODY_TIMEOUT_MS + 1);
    const got = await Promise.race([outcome, Promise.resolve('still waiting')]);
    expect(got).toMatchObject({ status: 408 });
  });
});

describe('the connection cap', () => {
  it('counts open HTTP sockets against Broker.MaxConnections until they close', async () => {
    b = await startHttpBroker([{ Name: 'q' }], { broker: { MaxConnections: 2 } });
    const get = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    // Two keep-alive sockets, each served once and left open.
    const first = await raw(b.httpPort, get, 300);
    const second = await raw(b.httpPort, get, 300);
    expect([first.reply.slice(0, 12), second.reply.slice(0, 12)]).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    const third = await raw(b.httpPort, get, 1500);
    expect(third.reply.slice(0, 12)).toBe('HTTP/1.1 503');
    expect(third.reply).toContain('MaxConnections');
    third.socket.destroy();
    first.socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const fourth = await raw(b.httpPort, get, 300);
    expect(fourth.reply.slice(0, 12)).toBe('HTTP/1.1 200');
    second.socket.destroy();
    fourth.socket.destroy();
  });

  it('counts HTTP and AMQP sockets as one: open HTTP sockets leave MaxConnections less them for AMQP', async () => {
    b = await startHttpBroker([{ Name: 'q' }], { broker: { MaxConnections: 4 } });
    const get = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const held = [await raw(b.httpPort, get, 300), await raw(b.httpPort, get, 300)];
    expect(held.map((h) => h.reply.slice(0, 12))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    // Four AMQP connections tried one after the other: two fit beside the two HTTP sockets, the others are refused.
    const outcomes: string[] = [];
    const conns: Any[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await amqpOutcome(b.port);
      outcomes.push(r.outcome);
      conns.push(r.conn);
    }
    expect(outcomes).toEqual(['open', 'open', 'amqp:resource-limit-exceeded', 'amqp:resource-limit-exceeded']);
    for (const c of conns) c.close();
    for (const h of held) h.socket.destroy();
  });
});

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

// Opens an AMQP connection and says how it went within 500 ms of its open: still open, or the condition it was
// closed with (the broker refuses a connection over the cap with an open then a close).
function amqpOutcome(port: number): Promise<{ outcome: string; conn: Any }> {
  const c = rhea.create_container({ id: `cap-${Math.random().toString(36).slice(2)}` });
  return new Promise((resolve) => {
    const conn = c.connect({ host: '127.0.0.1', port, reconnect: false, username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE', idle_time_out: 0 } as Any);
    let settled = false;
    const done = (outcome: string): void => {
      if (settled) return;
      settled = true;
      resolve({ outcome, conn });
    };
    conn.on('connection_close', (ctx: Any) => done(String(ctx.connection.error?.condition ?? 'closed')));
    conn.on('connection_error', (ctx: Any) => done(String(ctx.connection.error?.condition ?? 'error')));
    conn.on('disconnected', () => done('disconnected'));
    conn.once('connection_open', () => setTimeout(() => done('open'), 500));
  });
}
