// Entity-level SAS rules, as Service Bus scopes them: a key declared on a queue (Config.json
// `Properties.AuthorizationRules`, or the management plane's `<AuthorizationRules>`) opens that queue and its
// subqueues with the rights it has, a topic's key opens the topic and its subscriptions, and nothing else: not
// another queue, not the entity's management operations without the right they need, not the management plane
// without Manage, not another namespace. The namespace's own keys keep working. A rotated key refuses new tokens
// signed with the old one. The same one check serves `$cbs` put-token, SASL PLAIN and HTTP.

import http from 'node:http';
import rhea from 'rhea';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceBusClient } from '@azure/service-bus';
import { ServiceBusAdministrationClient } from '@azure/service-bus-beta';
import { startBroker, type EmbeddedBroker } from '../../src/index.js';
import { signSas } from '../../src/auth/sas-token.js';
import { codeOf } from '../helpers/sdk.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = 'RootManageSharedAccessKey';
const ROOT_KEY = 'SAS_KEY_VALUE';
const NS2_KEY = 'a2V5LW9mLW5hbWVzcGFjZS10d28=';
const SEND_KEY = 'b3JkZXJzLXNlbmQta2V5LWZvci10ZXN0cy0wMDAwMDA=';
const SEND_KEY_2 = 'c2Vjb25kYXJ5LXNlbmQta2V5LWZvci10ZXN0cy0wMDA=';
const LISTEN_KEY = 'ZXZlbnRzLWxpc3Rlbi1rZXktZm9yLXRlc3RzLTAwMDA=';
const MANAGE_KEY = 'b3JkZXJzLW1hbmFnZS1rZXktZm9yLXRlc3RzLTAwMDA=';
const RIGHTS = ['Manage', 'Send', 'Listen'];

const CONFIG = {
  UserConfig: {
    Namespaces: [
      {
        Name: 'sbemulatorns',
        Queues: [
          {
            Name: 'orders',
            Properties: {
              AuthorizationRules: [
                { KeyName: 'orders-send', PrimaryKey: SEND_KEY, SecondaryKey: SEND_KEY_2, Rights: ['Send'] },
                { KeyName: 'orders-admin', PrimaryKey: MANAGE_KEY, Rights: ['Manage', 'Send', 'Listen'] },
              ],
            },
          },
          { Name: 'billing' },
        ],
        Topics: [
          {
            Name: 'events',
            Properties: { AuthorizationRules: [{ KeyName: 'events-listen', PrimaryKey: LISTEN_KEY, Rights: ['Listen'] }] },
            Subscriptions: [{ Name: 'audit' }],
          },
        ],
      },
      // Another namespace with a queue of the same name and no entity rules.
      { Name: 'ns2', Queues: [{ Name: 'orders' }], SharedAccessPolicies: [{ Name: ROOT, Key: NS2_KEY, Rights: RIGHTS }] },
    ],
  },
};

let broker: EmbeddedBroker;
const clients: ServiceBusClient[] = [];
beforeAll(async () => {
  broker = await startBroker({ config: CONFIG });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await broker?.stop();
});

/** A data-plane client with one key (no retries); `host` names the namespace (the socket goes to 127.0.0.1). */
function client(keyName: string, key: string, host = '127.0.0.1'): ServiceBusClient {
  const c = new ServiceBusClient(`Endpoint=sb://${host}:${broker.amqpPort};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`, {
    customEndpointAddress: `sb://127.0.0.1:${broker.amqpPort}`,
    retryOptions: { maxRetries: 0, timeoutInMs: 10_000 },
  });
  clients.push(c);
  return c;
}

function admin(keyName: string, key: string): ServiceBusAdministrationClient {
  return new ServiceBusAdministrationClient(
    `Endpoint=sb://127.0.0.1:${broker.httpPort};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`,
    { retryOptions: { maxRetries: 0 } },
  );
}

async function failure(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(
    () => 'succeeded',
    (e: unknown) => codeOf(e) ?? String((e as { statusCode?: number }).statusCode ?? e),
  );
}

async function peekBodies(queue: string): Promise<unknown[]> {
  const c = client(ROOT, ROOT_KEY);
  return (await c.createReceiver(queue).peekMessages(50)).map((m) => m.body);
}

function httpGet(path: string, auth: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: broker.httpPort, path, headers: { authorization: auth } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('a Send rule declared on a queue in Config.json', () => {
  it('sends to that queue with the JS SDK, with either of its keys', async () => {
    await client('orders-send', SEND_KEY).createSender('orders').sendMessages({ body: 'primary' });
    await client('orders-send', SEND_KEY_2).createSender('orders').sendMessages({ body: 'secondary' });
    expect(await peekBodies('orders')).toEqual(['primary', 'secondary']);
  });

  it('is refused with UnauthorizedAccess on another queue, a topic, and with a token for the whole namespace', async () => {
    const c = client('orders-send', SEND_KEY);
    expect(await failure(c.createSender('billing').sendMessages({ body: 'x' }))).toBe('UnauthorizedAccess');
    expect(await failure(c.createSender('events').sendMessages({ body: 'x' }))).toBe('UnauthorizedAccess');
    expect(await peekBodies('billing')).toEqual([]);
    // The rule is the queue's: a token signed with it for the namespace's root names no entity that has it.
    const nsToken = signSas(`sb://127.0.0.1:${broker.amqpPort}/`, 'orders-send', SEND_KEY);
    expect(await httpGet('/api/entities/orders', nsToken)).toBe(401);
  });

  it('does not receive, peek or read the management plane of its queue without Listen or Manage', async () => {
    const c = client('orders-send', SEND_KEY);
    expect(await failure(c.createReceiver('orders').receiveMessages(1, { maxWaitTimeInMs: 2000 }))).toBe('UnauthorizedAccess');
    expect(await failure(c.createReceiver('orders').peekMessages(1))).toBe('UnauthorizedAccess');
    expect(await failure(admin('orders-send', SEND_KEY).getQueue('orders'))).toBe('UnauthorizedRequestError');
    // The JSON admin API answers a valid key without Manage with its documented 403 (a bad or foreign token: 401).
    expect(await httpGet('/api/entities/orders', signSas(`http://127.0.0.1:${broker.httpPort}/orders`, 'orders-send', SEND_KEY))).toBe(403);
  });

  it('is refused in another namespace, where the queue of that name has no such rule', async () => {
    const other = client('orders-send', SEND_KEY, 'ns2.localhost');
    expect(await failure(other.createSender('orders').sendMessages({ body: 'x' }))).toBe('UnauthorizedAccess');
    // The namespace's own key still opens ns2.
    await client(ROOT, NS2_KEY, 'ns2.localhost').createSender('orders').sendMessages({ body: 'ns2' });
  });

  it('opens the queue to a SASL PLAIN login with the rule name and key, and nothing else', async () => {
    const conn = await plain('orders-send', SEND_KEY);
    try {
      expect(await attach(conn, 'orders')).toBe('attached');
      expect(await attach(conn, 'billing')).toBe('amqp:unauthorized-access');
    } finally {
      conn.close();
    }
    await expect(plain('orders-send', 'wrong-key')).rejects.toBeTruthy();
  });
});

describe('other entity rules', () => {
  it('a Listen rule on a topic receives from its subscriptions, and not from a queue', async () => {
    await client(ROOT, ROOT_KEY).createSender('events').sendMessages({ body: 'evt' });
    const c = client('events-listen', LISTEN_KEY);
    const r = c.createReceiver('events', 'audit', { receiveMode: 'receiveAndDelete' });
    const got = await r.receiveMessages(1, { maxWaitTimeInMs: 3000 });
    expect(got.map((m) => m.body)).toEqual(['evt']);
    expect(await failure(c.createSender('events').sendMessages({ body: 'x' }))).toBe('UnauthorizedAccess');
    expect(await failure(c.createReceiver('orders').peekMessages(1))).toBe('UnauthorizedAccess');
  });

  it("a Manage rule on a queue manages that queue (ATOM and admin API) and its dead-letter queue, and no other", async () => {
    const a = admin('orders-admin', MANAGE_KEY);
    expect((await a.getQueue('orders')).name).toBe('orders');
    expect(await failure(a.getQueue('billing'))).toBe('UnauthorizedRequestError');
    expect(await failure(a.createQueue('new-one'))).toBe('UnauthorizedRequestError');
    // A queue named under it is another entity, not one of the queue's own nodes.
    expect(await failure(a.createQueue('orders/new'))).toBe('UnauthorizedRequestError');
    expect(await httpGet('/api/entities/orders', signSas(`http://127.0.0.1:${broker.httpPort}/orders`, 'orders-admin', MANAGE_KEY))).toBe(200);
    const dlq = client('orders-admin', MANAGE_KEY).createReceiver('orders', { subQueueType: 'deadLetter' });
    expect(await dlq.peekMessages(1)).toEqual([]);
  });

  it('a namespace key keeps working on every entity', async () => {
    const c = client(ROOT, ROOT_KEY);
    await c.createSender('billing').sendMessages({ body: 'root' });
    expect(await peekBodies('billing')).toEqual(['root']);
  });
});

describe('rules created and rotated through the management plane', () => {
  it('authorises a key created with a queue, and refuses new tokens signed with it once the key is rotated', async () => {
    const root = admin(ROOT, ROOT_KEY);
    const created = await root.createQueue('rotating', { authorizationRules: [{ claimType: 'SharedAccessKey', keyName: 'app', accessRights: ['Send'] }] });
    const oldKey = created.authorizationRules![0]!.primaryKey!;
    await client('app', oldKey).createSender('rotating').sendMessages({ body: 'old key' });
    const q = await root.getQueue('rotating');
    await root.updateQueue({ ...q, authorizationRules: [{ ...q.authorizationRules![0]!, primaryKey: SEND_KEY, secondaryKey: SEND_KEY_2 }] });
    expect(await failure(client('app', oldKey).createSender('rotating').sendMessages({ body: 'x' }))).toBe('UnauthorizedAccess');
    await client('app', SEND_KEY).createSender('rotating').sendMessages({ body: 'new key' });
    expect(await peekBodies('rotating')).toEqual(['old key', 'new key']);
  });
});

function plain(username: string, password: string): Promise<Any> {
  const c = rhea.create_container({ id: `plain-${Math.random().toString(36).slice(2)}` });
  return new Promise((resolve, reject) => {
    const conn = c.connect({ host: '127.0.0.1', port: broker.amqpPort, reconnect: false, username, password } as Any);
    c.on('error', (err: Any) => reject(err));
    conn.once('connection_error', (ctx: Any) => reject(ctx.connection?.error ?? new Error('refused')));
    conn.once('connection_open', () => resolve(conn));
    conn.once('disconnected', (ctx: Any) => reject(ctx.error ?? new Error('disconnected')));
  });
}

function attach(conn: Any, address: string): Promise<string> {
  const sender = conn.open_sender({ target: { address } });
  return new Promise((resolve) => {
    sender.once('sendable', () => resolve('attached'));
    sender.once('sender_error', (ctx: Any) => resolve(String(ctx.sender.error?.condition)));
  });
}
