// Claims-based security with the real SDK and raw AMQP: SAS tokens on $cbs are really checked (key, expiry,
// audience, rights), SharedAccessSignature connection strings work, and SASL PLAIN logs in with a policy.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import rhea from 'rhea';
import { ServiceBusClient } from '@azure/service-bus';
import { MemoryStore } from '../../src/store/memory-store.js';
import { verifySas } from '../../src/auth/sas.js';
import { codeOf } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let broker: TestBroker;
const POLICIES = [
  { Name: 'RootManageSharedAccessKey', Key: 'SAS_KEY_VALUE', Rights: ['Manage', 'Send', 'Listen'] },
  { Name: 'listen-only', Key: 'listen-key', Rights: ['Listen'] },
  { Name: 'send-only', Key: 'send-key', Rights: ['Send'] },
];

function cs(name: string, key: string): string {
  return `Endpoint=sb://127.0.0.1:${broker.port};SharedAccessKeyName=${name};SharedAccessKey=${key};UseDevelopmentEmulator=true`;
}

function sasToken(resource: string, name: string, key: string, expirySec: number): string {
  const sr = encodeURIComponent(resource);
  const sig = encodeURIComponent(createHmac('sha256', key).update(`${sr}\n${expirySec}`).digest('base64'));
  return `SharedAccessSignature sr=${sr}&sig=${sig}&se=${expirySec}&skn=${encodeURIComponent(name)}`;
}


const fast = { retryOptions: { maxRetries: 0, timeoutInMs: 10_000 } };

beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q' }, { Name: 'other' }], {
    store: new MemoryStore(),
    broker: { SharedAccessPolicies: POLICIES },
  });
});

afterAll(async () => broker.dispose());

describe('SAS tokens', () => {
  it('refuses a wrong key with UnauthorizedAccess', async () => {
    const client = new ServiceBusClient(cs('RootManageSharedAccessKey', 'wrong'), fast);
    const err = await client.createSender('q').sendMessages({ body: 1 }).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('UnauthorizedAccess');
    await client.close();
  });

  it('refuses an unknown policy name with UnauthorizedAccess', async () => {
    const client = new ServiceBusClient(cs('nobody', 'SAS_KEY_VALUE'), fast);
    const err = await client.createReceiver('q').receiveMessages(1, { maxWaitTimeInMs: 500 }).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('UnauthorizedAccess');
    await client.close();
  });

  it('a Listen-only policy can receive but not send; a Send-only policy can send but not receive', async () => {
    const listen = new ServiceBusClient(cs('listen-only', 'listen-key'), fast);
    const err = await listen.createSender('q').sendMessages({ body: 1 }).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('UnauthorizedAccess');
    const send = new ServiceBusClient(cs('send-only', 'send-key'), fast);
    await send.createSender('q').sendMessages({ body: 'ok' });
    const rerr = await send.createReceiver('q').receiveMessages(1, { maxWaitTimeInMs: 500 }).then(() => null, (e: unknown) => e);
    expect(codeOf(rerr)).toBe('UnauthorizedAccess');
    const got = await listen.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(got.map((m) => m.body)).toEqual(['ok']);
    await listen.close();
    await send.close();
  });

  it('accepts a SharedAccessSignature connection string for the namespace', async () => {
    const se = Math.floor(Date.now() / 1000) + 600;
    const token = sasToken(`sb://127.0.0.1:${broker.port}/`, 'RootManageSharedAccessKey', 'SAS_KEY_VALUE', se);
    const client = new ServiceBusClient(`Endpoint=sb://127.0.0.1:${broker.port};SharedAccessSignature=${token};UseDevelopmentEmulator=true`, fast);
    await client.createSender('q').sendMessages({ body: 'via-sas' });
    const got = await client.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(got.map((m) => m.body)).toEqual(['via-sas']);
    await client.close();
  });

  it('a token scoped to one entity does not open another', async () => {
    const se = Math.floor(Date.now() / 1000) + 600;
    const token = sasToken(`sb://127.0.0.1:${broker.port}/other`, 'RootManageSharedAccessKey', 'SAS_KEY_VALUE', se);
    const client = new ServiceBusClient(`Endpoint=sb://127.0.0.1:${broker.port};SharedAccessSignature=${token};UseDevelopmentEmulator=true`, fast);
    const err = await client.createSender('q').sendMessages({ body: 1 }).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('UnauthorizedAccess');
    await client.close();
  });

  it('verifySas refuses expired, forged and malformed tokens', () => {
    const policies = [{ name: 'p', key: 'k', rights: ['Send' as const] }];
    const now = Date.now();
    const good = sasToken('sb://h/q', 'p', 'k', Math.floor(now / 1000) + 60);
    expect(verifySas(good, policies, now)).toMatchObject({ policy: 'p', audience: 'q' });
    expect(() => verifySas(sasToken('sb://h/q', 'p', 'k', Math.floor(now / 1000) - 1), policies, now)).toThrow(/expired/);
    expect(() => verifySas(sasToken('sb://h/q', 'p', 'other', Math.floor(now / 1000) + 60), policies, now)).toThrow(/signature/);
    expect(() => verifySas(good.replace('sr=sb%3A%2F%2Fh%2Fq', 'sr=sb%3A%2F%2Fh%2Fx'), policies, now)).toThrow(/signature/);
    expect(() => verifySas('Bearer abc', policies, now)).toThrow(/SharedAccessSignature/);
  });
});

describe('SASL PLAIN', () => {
  function connect(username: string, password: string): Promise<Any> {
    const c = rhea.create_container({ id: 'plain-client' });
    return new Promise((resolve, reject) => {
      const conn = c.connect({ host: '127.0.0.1', port: broker.port, reconnect: false, username, password } as Any);
      c.on('error', (err: Any) => reject(err));
      conn.once('connection_error', (ctx: Any) => reject(ctx.connection?.error ?? new Error('refused')));
      conn.once('connection_open', () => resolve(conn));
      conn.once('disconnected', (ctx: Any) => reject(ctx.error ?? new Error('disconnected')));
    });
  }

  it('logs in with a policy name and key, and refuses a wrong password', async () => {
    const conn = await connect('RootManageSharedAccessKey', 'SAS_KEY_VALUE');
    const sender = conn.open_sender({ target: { address: 'q' } });
    await new Promise((r) => sender.once('sendable', r));
    conn.close();
    await expect(connect('RootManageSharedAccessKey', 'nope')).rejects.toBeTruthy();
  });

  it('refuses links on a connection with neither a login nor a token', async () => {
    const c = rhea.create_container({ id: 'anon' });
    const conn: Any = await new Promise((resolve) => {
      const x = c.connect({ host: '127.0.0.1', port: broker.port, reconnect: false } as Any);
      x.once('connection_open', () => resolve(x));
    });
    const sender = conn.open_sender({ target: { address: 'q' } });
    const ctx: Any = await new Promise((r) => sender.once('sender_error', r));
    expect(ctx.sender.error.condition).toBe('amqp:unauthorized-access');
    conn.close();
  });
});
