// The protocol fuzzer reads the broker back through its admin API on a keep-alive agent (test/helpers/protocol-runner.ts).
// An HTTP server may close an idle persistent connection at any time (RFC 9112 §9.3.1; the broker closes one after
// its `Keep-Alive: timeout=5`), so a request the agent writes on a pooled socket just as the server closes it is
// reset: Node's agent does not drop the socket early on that hint, and its documentation says to retry such a
// request (`request.reusedSocket`). This server resets the socket of any second request on one connection, which
// is that race made certain; the helper must answer from a fresh connection, not fail the batch with ECONNRESET.

import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchRunner } from '../helpers/protocol-runner.js';

describe('fuzzer admin reads on a keep-alive socket the server resets', () => {
  let server: http.Server;
  let port = 0;
  const served = new Map<net.Socket, number>();
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      // The second request on a pooled socket: reset it unanswered, as a server closing it idle does.
      if (n > 1) return void req.socket.resetAndDestroy();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ path: req.url, n }));
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('answers a request whose reused socket was reset, on a fresh connection', async () => {
    const target = { amqpPort: 0, httpPort: port, now: () => new Date(), advance: async () => new Date(), deleteNamespace: async () => undefined };
    const runner = new BatchRunner(target, 'keepalive');
    const first = await runner.admin('default', 'GET', '/api/namespaces');
    expect(first).toEqual({ status: 200, json: { path: '/api/namespaces', n: 1 } });
    const second = await runner.admin('default', 'POST', '/api/entities/orders/purge', { view: 'active' });
    expect(second).toEqual({ status: 200, json: { path: '/api/entities/orders/purge', n: 1 } });
  });
});
