// Several namespaces in one broker, as a user's tests see them through the real SDK: two namespaces with a queue of
// the same name keep their messages, dead letters, keys and management views apart; namespaces are created and
// deleted at run time (embedded API and HTTP), and a deleted one's connections are closed; in test mode an unknown
// key name gets a namespace of its own; a restart keeps every namespace's messages. `*.localhost` need not resolve:
// the SDK's customEndpointAddress points the socket at 127.0.0.1 while the AMQP open carries the namespace host.

import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import rhea from 'rhea';
import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remoteBroker, startBroker, type EmbeddedBroker } from '../../src/index.js';
import { signSas } from '../../src/auth/sas-token.js';
import { codeOf } from '../helpers/sdk.js';

const ROOT = 'RootManageSharedAccessKey';
const K1 = 'a2V5LW9mLW5hbWVzcGFjZS1vbmU=';
const K2 = 'a2V5LW9mLW5hbWVzcGFjZS10d28=';
const RIGHTS = ['Manage', 'Send', 'Listen'];
const CONFIG = {
  UserConfig: {
    Namespaces: [
      { Name: 'sbemulatorns', Queues: [{ Name: 'shared-only' }] },
      { Name: 'ns1', Queues: [{ Name: 'orders' }], SharedAccessPolicies: [{ Name: ROOT, Key: K1, Rights: RIGHTS }] },
      { Name: 'ns2', Queues: [{ Name: 'orders' }], SharedAccessPolicies: [{ Name: ROOT, Key: K2, Rights: RIGHTS }] },
    ],
  },
};

/** A client for namespace `host` (not resolvable: the socket goes to 127.0.0.1). */
function clientFor(broker: EmbeddedBroker, host: string, key: string, keyName = ROOT, retries = 3): ServiceBusClient {
  return new ServiceBusClient(`Endpoint=sb://${host}:${broker.amqpPort};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`, {
    customEndpointAddress: `sb://127.0.0.1:${broker.amqpPort}`,
    retryOptions: { maxRetries: retries, retryDelayInMs: 50, timeoutInMs: 10_000 },
  });
}

// A fresh client per peek: the SDK continues a client's peeks after the last sequence number it peeked.
async function bodies(connect: () => ServiceBusClient, queue: string, subQueue?: 'deadLetter'): Promise<unknown[]> {
  const client = connect();
  try {
    return (await client.createReceiver(queue, subQueue ? { subQueueType: subQueue } : {}).peekMessages(50)).map((m) => m.body);
  } finally {
    await client.close();
  }
}

/** An HTTP request with a Host header (what a client of `host` sends; the socket goes to 127.0.0.1). */
function hostRequest(broker: EmbeddedBroker, method: string, p: string, host: string, auth: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: broker.httpPort, method, path: p, headers: { host, authorization: auth, 'content-type': 'application/atom+xml' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
/** An Atom management request (what an admin client of `host` sends). */
function atom(broker: EmbeddedBroker, method: string, p: string, host: string, auth: string, body?: string): Promise<{ status: number; text: string }> {
  return hostRequest(broker, method, `${p}?api-version=2021-05`, host, auth, body);
}
const QUEUE_ENTRY =
  '<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"/></content></entry>';

describe('two namespaces from the config, each with a queue named orders', () => {
  let broker: EmbeddedBroker;
  let ns1: ServiceBusClient;
  let ns2: ServiceBusClient;
  const in1 = (): ServiceBusClient => clientFor(broker, 'ns1.localhost', K1);
  const in2 = (): ServiceBusClient => clientFor(broker, 'NS2.localhost', K2);
  beforeAll(async () => {
    broker = await startBroker({ config: CONFIG });
    ns1 = in1();
    ns2 = in2();
  });
  afterAll(async () => {
    await ns1?.close();
    await ns2?.close();
    await broker?.stop();
  });

  it('keeps sends, receives and dead letters of one namespace out of the other', async () => {
    await ns1.createSender('orders').sendMessages({ body: 'for ns1' });
    await ns2.createSender('orders').sendMessages([{ body: 'for ns2 a' }, { body: 'for ns2 b' }]);
    expect(await bodies(in1, 'orders')).toEqual(['for ns1']);
    expect(await bodies(in2, 'orders')).toEqual(['for ns2 a', 'for ns2 b']);

    const r1 = ns1.createReceiver('orders');
    const [m] = await r1.receiveMessages(5, { maxWaitTimeInMs: 2000 });
    expect(m?.body).toBe('for ns1');
    await r1.deadLetterMessage(m!, { deadLetterReason: 'test', deadLetterErrorDescription: 'isolation' });
    await r1.close();
    expect(await bodies(in1, 'orders', 'deadLetter')).toEqual(['for ns1']);
    expect(await bodies(in2, 'orders', 'deadLetter')).toEqual([]);
    // ns2's messages are untouched by ns1's receive and dead-lettering.
    expect(await bodies(in2, 'orders')).toEqual(['for ns2 a', 'for ns2 b']);
  });

  it("makes one namespace's entities unreachable from another", async () => {
    const other = clientFor(broker, 'ns1.localhost', K1, ROOT, 0);
    try {
      const err = await other.createSender('shared-only').sendMessages({ body: 'x' }).catch((e: unknown) => e);
      expect(codeOf(err)).toBe('MessagingEntityNotFound');
    } finally {
      await other.close();
    }
  });

  it("refuses ns1's key on ns2 with UnauthorizedAccess", async () => {
    const wrong = clientFor(broker, 'ns2.localhost', K1, ROOT, 0);
    try {
      const err = await wrong.createSender('orders').sendMessages({ body: 'x' }).catch((e: unknown) => e);
      expect(codeOf(err)).toBe('UnauthorizedAccess');
    } finally {
      await wrong.close();
    }
  });

  it('serves each namespace its own management view, picked by the Host header', async () => {
    const auth = (host: string, key: string): string => signSas(`http://${host}/`, ROOT, key, 600);
    const created = await atom(broker, 'PUT', '/only-in-ns1', 'ns1.localhost', auth('ns1.localhost', K1), QUEUE_ENTRY);
    expect(created.status).toBe(201);
    // A GET of a missing entity is a 200 with an empty feed, as the service answers it.
    expect((await atom(broker, 'GET', '/only-in-ns1', 'ns1.localhost', auth('ns1.localhost', K1))).text).toContain('<entry');
    expect((await atom(broker, 'GET', '/only-in-ns1', 'ns2.localhost', auth('ns2.localhost', K2))).text).not.toContain('<entry');
    const list2 = await atom(broker, 'GET', '/$Resources/Queues', 'ns2.localhost', auth('ns2.localhost', K2));
    expect(list2.text.match(/<title[^>]*>([^<]*)<\/title>/g)?.filter((t) => !/Queues/.test(t))).toEqual([expect.stringContaining('orders')]);
    // ns1's key does not open ns2's management plane.
    expect((await atom(broker, 'GET', '/orders', 'ns2.localhost', auth('ns2.localhost', K1))).status).toBe(401);
    // The admin JSON API answers by Host too.
    const entities = async (host: string, key: string): Promise<string[]> =>
      (JSON.parse((await hostRequest(broker, 'GET', '/api/entities', host, auth(host, key))).text) as { entities: { path: string }[] }).entities.map((e) => e.path).sort();
    expect(await entities('ns1.localhost', K1)).toEqual(['only-in-ns1', 'orders']);
    expect(await entities('ns2.localhost', K2)).toEqual(['orders']);
    expect(await entities('127.0.0.1', 'SAS_KEY_VALUE')).toEqual(['shared-only']);
    // The default namespace (any other host) has neither.
    expect((await atom(broker, 'GET', '/orders', '127.0.0.1', signSas('http://127.0.0.1/', ROOT, 'SAS_KEY_VALUE', 600))).text).not.toContain('<entry');
  });
});

describe('namespaces created and deleted at run time', () => {
  let broker: EmbeddedBroker;
  beforeAll(async () => {
    broker = await startBroker();
  });
  afterAll(async () => broker?.stop());

  it('creates a namespace with the embedded API, reachable by its connection string without DNS', async () => {
    const ns = await broker.createNamespace('tenant-a', { queues: ['jobs'] });
    expect(ns.connectionString).toContain('SharedAccessKeyName=tenant-a;');
    const client = new ServiceBusClient(ns.connectionString, { retryOptions: { maxRetries: 0 } });
    const root = new ServiceBusClient(broker.connectionString, { retryOptions: { maxRetries: 0 } });
    try {
      await client.createSender('jobs').sendMessages({ body: 'job 1' });
      expect(await bodies(() => new ServiceBusClient(ns.connectionString), 'jobs')).toEqual(['job 1']);
      const err = await root.createSender('jobs').sendMessages({ body: 'x' }).catch((e: unknown) => e);
      expect(codeOf(err)).toBe('MessagingEntityNotFound');
      await expect(broker.createNamespace('Tenant-A')).rejects.toThrow(/already exists/);
    } finally {
      await client.close();
      await root.close();
    }
  });

  it("deletes a namespace: its connections are closed with connection:forced and its key stops working", async () => {
    const ns = await broker.createNamespace('tenant-b', { queues: ['jobs'] });
    const key = /SharedAccessKey=([^;]+)/.exec(ns.connectionString)![1]!;
    // A plain AMQP client (SASL PLAIN) on the namespace's host, to see the close frame itself.
    const container = rhea.create_container({ id: 'namespace-delete-test' });
    const conn = container.connect({ host: '127.0.0.1', port: broker.amqpPort, hostname: 'tenant-b.localhost', username: 'tenant-b', password: key, reconnect: false, idle_time_out: 0 } as never);
    await new Promise((resolve, reject) => {
      conn.once('connection_open', resolve);
      conn.once('disconnected', reject);
    });
    const closed = new Promise<string | undefined>((resolve) => conn.once('connection_close', (ctx) => resolve((ctx.connection.error as { condition?: string } | undefined)?.condition)));
    await broker.deleteNamespace('tenant-b');
    expect(await closed).toBe('amqp:connection:forced');
    const client = new ServiceBusClient(ns.connectionString, { retryOptions: { maxRetries: 0 } });
    try {
      const err = await client.createSender('jobs').sendMessages({ body: 'x' }).catch((e: unknown) => e);
      expect(codeOf(err)).toBe('UnauthorizedAccess');
    } finally {
      await client.close();
    }
    await expect(broker.deleteNamespace('tenant-b')).rejects.toThrow(/does not exist/);
    await expect(broker.deleteNamespace('sbemulatorns')).rejects.toThrow(/cannot be deleted/);
  });

  it('creates and deletes a namespace over HTTP with the Manage key of the default namespace', async () => {
    const base = `http://127.0.0.1:${broker.httpPort}`;
    const call = async (method: string, p: string, body?: unknown, key = 'SAS_KEY_VALUE'): Promise<{ status: number; body: any }> => { // eslint-disable-line @typescript-eslint/no-explicit-any
      const res = await fetch(base + p, {
        method,
        headers: { authorization: signSas(`${base}/`, ROOT, key, 600), 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: await res.json() };
    };
    expect((await call('PUT', '/api/namespaces/http-ns', { Queues: [{ Name: 'inbox' }] }, 'wrong')).status).toBe(401);
    const bad = await call('PUT', '/api/namespaces/http-ns', { Queues: [{ Name: '-bad' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('Queues[0].Name');
    const made = await call('PUT', '/api/namespaces/http-ns', { Queues: [{ Name: 'inbox' }] });
    expect(made.status).toBe(201);
    const client = new ServiceBusClient(made.body.connectionString.replace(/Endpoint=sb:\/\/[^;]+/, `Endpoint=sb://127.0.0.1:${broker.amqpPort}`), { retryOptions: { maxRetries: 0 } });
    try {
      await client.createSender('inbox').sendMessages({ body: 'hello' });
      expect(await bodies(() => client, 'inbox')).toEqual(['hello']);
    } finally {
      await client.close();
    }
    expect((await call('PUT', '/api/namespaces/http-ns', {})).status).toBe(409);
    expect((await call('GET', '/api/namespaces')).body.map((n: { name: string }) => n.name)).toContain('http-ns');
    expect((await call('DELETE', '/api/namespaces/http-ns')).status).toBe(200);
    expect((await call('DELETE', '/api/namespaces/http-ns')).status).toBe(404);
  });

  it('creates and deletes a namespace through remoteBroker (a vitest worker talking to a globalSetup broker)', async () => {
    const remote = remoteBroker({ connectionString: broker.connectionString, httpPort: broker.httpPort });
    const made = await remote.createNamespace('worker-1', { Queues: [{ Name: 'jobs' }] });
    await expect(remote.createNamespace('worker-1')).rejects.toThrow(/409/);
    const client = new ServiceBusClient(made.connectionString, { retryOptions: { maxRetries: 0 } });
    try {
      await client.createSender('jobs').sendMessages({ body: 'w1' });
    } finally {
      await client.close();
    }
    expect(await bodies(() => new ServiceBusClient(made.connectionString), 'jobs')).toEqual(['w1']);
    await remote.deleteNamespace('worker-1');
    await expect(remote.deleteNamespace('worker-1')).rejects.toThrow(/404/);
  });
});

describe('auto namespaces (test mode)', () => {
  it('gives an unknown key name a fresh namespace of its own, with the usual key', async () => {
    const broker = await startBroker({ config: { UserConfig: { Namespaces: [{ Name: 'sbemulatorns' }] }, Broker: { AutoNamespaces: true } } });
    const conn = (keyName: string): string => broker.connectionString.replace(`SharedAccessKeyName=${ROOT}`, `SharedAccessKeyName=${keyName}`);
    try {
      for (const suite of ['suite-a', 'suite-b']) {
        // Its management plane is picked by the same key name: create a queue there.
        const auth = signSas(`http://127.0.0.1:${broker.httpPort}/`, suite, 'SAS_KEY_VALUE', 600);
        expect((await atom(broker, 'PUT', '/work', '127.0.0.1', auth, QUEUE_ENTRY)).status).toBe(201);
        const client = new ServiceBusClient(conn(suite), { retryOptions: { maxRetries: 0 } });
        await client.createSender('work').sendMessages({ body: `from ${suite}` });
        expect(await bodies(() => new ServiceBusClient(conn(suite)), 'work')).toEqual([`from ${suite}`]);
        await client.close();
      }
      // The default namespace has no queue 'work'; a wrong key for an auto namespace is refused.
      const root = new ServiceBusClient(broker.connectionString, { retryOptions: { maxRetries: 0 } });
      expect(codeOf(await root.createSender('work').sendMessages({ body: 'x' }).catch((e: unknown) => e))).toBe('MessagingEntityNotFound');
      await root.close();
      const wrong = new ServiceBusClient(conn('suite-a').replace('SAS_KEY_VALUE', 'bm90LXRoZS1rZXk='), { retryOptions: { maxRetries: 0 } });
      expect(codeOf(await wrong.createSender('work').sendMessages({ body: 'x' }).catch((e: unknown) => e))).toBe('UnauthorizedAccess');
      await wrong.close();
    } finally {
      await broker.stop();
    }
  });

  it('is on with the manual clock, and advancing the clock expires locks in every namespace', async () => {
    const broker = await startBroker({ clock: 'manual' });
    try {
      const made = await broker.createNamespace('timed', { queues: [{ Name: 'q', Properties: { LockDuration: 'PT5M' } }] });
      const client = new ServiceBusClient(made.connectionString, { retryOptions: { maxRetries: 0 } });
      await client.createSender('q').sendMessages({ body: 'slow' });
      const [first] = await client.createReceiver('q').receiveMessages(1, { maxWaitTimeInMs: 2000 });
      expect(first?.deliveryCount).toBe(0);
      await broker.advance(5 * 60_000 + 1);
      const [again] = await client.createReceiver('q').receiveMessages(1, { maxWaitTimeInMs: 2000 });
      expect([again?.body, again?.deliveryCount]).toEqual(['slow', 1]);
      await client.close();
      const auto = new ServiceBusClient(broker.connectionString.replace(`SharedAccessKeyName=${ROOT}`, 'SharedAccessKeyName=clock-suite'), { retryOptions: { maxRetries: 0 } });
      // The fresh namespace exists (its key works) and is empty: the send fails on the entity, not on the key.
      expect(codeOf(await auto.createSender('q').sendMessages({ body: 'x' }).catch((e: unknown) => e))).toBe('MessagingEntityNotFound');
      await auto.close();
    } finally {
      await broker.stop();
    }
  });

  it('is off by default: an unknown key name is refused', async () => {
    const broker = await startBroker();
    const client = new ServiceBusClient(broker.connectionString.replace(`SharedAccessKeyName=${ROOT}`, 'SharedAccessKeyName=suite-x'), { retryOptions: { maxRetries: 0 } });
    try {
      expect(codeOf(await client.createSender('q').sendMessages({ body: 'x' }).catch((e: unknown) => e))).toBe('UnauthorizedAccess');
    } finally {
      await client.close();
      await broker.stop();
    }
  });
});

describe('a restart', () => {
  it("keeps each namespace's messages, including a namespace created at run time", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-ns-'));
    try {
      let broker = await startBroker({ config: CONFIG, dataDir });
      const made = await broker.createNamespace('runtime-ns', { queues: ['orders'] });
      const send = async (b: EmbeddedBroker, host: string, key: string, body: string, keyName = ROOT): Promise<void> => {
        const c = clientFor(b, host, key, keyName);
        await c.createSender('orders').sendMessages({ body });
        await c.close();
      };
      await send(broker, 'ns1.localhost', K1, 'kept in ns1');
      await send(broker, 'ns2.localhost', K2, 'kept in ns2');
      const key = /SharedAccessKey=([^;]+)/.exec(made.connectionString)![1]!;
      await send(broker, 'runtime-ns.localhost', key, 'kept in runtime-ns', 'runtime-ns');
      await broker.stop();

      broker = await startBroker({ config: CONFIG, dataDir });
      try {
        const cases = [['ns1.localhost', K1, ROOT, 'kept in ns1'], ['ns2.localhost', K2, ROOT, 'kept in ns2'], ['runtime-ns.localhost', key, 'runtime-ns', 'kept in runtime-ns']] as const;
        for (const [host, k, keyName, body] of cases) {
          expect(await bodies(() => clientFor(broker, host, k, keyName), 'orders')).toEqual([body]);
        }
      } finally {
        await broker.stop();
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
