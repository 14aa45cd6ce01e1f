// Issue 25, row 6: a web page the developer happens to visit must not reach the broker. Browsers send `Origin` on
// a WebSocket upgrade and on any state-changing request (SDKs send none): a foreign origin is refused (403) unless
// Broker.AllowedOrigins lists it. DNS rebinding (a page of evil.example whose name now resolves to 127.0.0.1)
// shows in `Host`: only loopback names, IP literals, single labels and configured names are served. A broker
// reachable from other machines with the emulator's well-known key says so at start.

import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { defaultKeyWarning } from '../../src/app/exposure.js';
import { authHeader, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;
beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'q' }], { broker: { AllowedOrigins: ['http://localhost:3000'], AllowedHosts: ['broker.test'] } });
});
afterAll(async () => {
  await b?.close();
});

function request(method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: b.httpPort, method, path, headers: { connection: 'close', ...headers } });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    // A 101 comes as 'upgrade', not 'response'.
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const upgrade = (extra: Record<string, string> = {}) =>
  request('GET', '/$servicebus/websocket', {
    connection: 'Upgrade',
    upgrade: 'websocket',
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'sec-websocket-version': '13',
    'sec-websocket-protocol': 'AMQPWSB10',
    ...extra,
  });
const purge = (extra: Record<string, string>) =>
  request('POST', '/api/entities/q/purge', { authorization: authHeader(), 'content-type': 'application/json', ...extra }, '{}');

describe('browser origins', () => {
  it('refuses a WebSocket upgrade from a foreign origin with 403', async () => {
    expect((await upgrade({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await upgrade({ origin: 'null' })).status).toBe(403);
  });

  it('upgrades without an Origin (the SDKs) and from a configured origin', async () => {
    expect((await upgrade()).status).toBe(101);
    expect((await upgrade({ origin: 'http://localhost:3000' })).status).toBe(101);
  });

  it('refuses a state-changing request from a foreign origin with 403, and serves the page its own', async () => {
    expect((await purge({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await purge({ origin: `http://127.0.0.1:${b.httpPort}` })).status).toBe(200);
    expect((await purge({})).status).toBe(200);
  });
});

describe('Host (DNS rebinding)', () => {
  it('refuses a name this broker does not serve with 403, on pages, the API and upgrades', async () => {
    expect((await request('GET', '/', { host: `evil.example:${b.httpPort}` })).status).toBe(403);
    expect((await request('GET', '/api/entities', { host: 'rebind.attacker.example', authorization: authHeader() })).status).toBe(403);
    expect((await upgrade({ host: `evil.example:${b.httpPort}` })).status).toBe(403);
  });

  it('serves loopback names, IP literals, single labels, configured names and their namespace subdomains', async () => {
    for (const host of [`127.0.0.1:${b.httpPort}`, `[::1]:${b.httpPort}`, 'localhost', `ns1.localhost:${b.httpPort}`, 'emulator:5300', 'broker.test', 'ns1.broker.test:5300', 'host.docker.internal']) {
      expect([host, (await request('GET', '/health', { host })).status]).toEqual([host, 200]);
    }
  });
});

describe('configuration', () => {
  const cfg = (broker: Record<string, unknown>) => JSON.stringify({ UserConfig: { Namespaces: [{ Name: 'sbemulatorns' }] }, Broker: broker });

  it('refuses an origin with a path in one line naming the key', () => {
    expect(() => parseConfig(cfg({ AllowedOrigins: ['http://localhost:3000/app'] }), 't')).toThrow(/Broker\.AllowedOrigins\[0\].*origin/);
  });

  it('warns when a broker reachable from other machines keeps the well-known key', () => {
    expect(defaultKeyWarning(parseConfig(cfg({ Host: '0.0.0.0' }), 't'))).toMatch(/0\.0\.0\.0 is reachable .*RootManageSharedAccessKey.*well-known default key/);
    expect(defaultKeyWarning(parseConfig(cfg({ Host: '127.0.0.1' }), 't'))).toBeNull();
    const own = { Host: '0.0.0.0', SharedAccessPolicies: [{ Name: 'RootManageSharedAccessKey', Key: 'b3duLWtleQ==', Rights: ['Manage', 'Send', 'Listen'] }] };
    expect(defaultKeyWarning(parseConfig(cfg(own), 't'))).toBeNull();
  });
});
