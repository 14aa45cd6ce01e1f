// Issue 25, row 4: in test mode an unknown key name creates a namespace, but only once the token (or password)
// verifies against the key that namespace would have; a forged token creates nothing and writes nothing. And
// creating a namespace never deletes a directory already under `<DataDir>/namespaces` (a namespace dropped from
// the config keeps its data there, without a namespace.json).

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import rhea from 'rhea';
import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type EmbeddedBroker } from '../../src/index.js';
import { signSas } from '../../src/auth/sas-token.js';
import { codeOf } from '../helpers/sdk.js';

const ROOT = 'RootManageSharedAccessKey';
const WRONG = 'bm90LXRoZS1rZXk=';

function atomPut(broker: EmbeddedBroker, p: string, auth: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: broker.httpPort, method: 'PUT', path: `${p}?api-version=2021-05`, headers: { authorization: auth, 'content-type': 'application/atom+xml' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"/></content></entry>');
  });
}

// A SASL PLAIN login (user = key name, password = key), resolved once the broker has closed or refused it.
function plainLogin(broker: EmbeddedBroker, user: string, password: string): Promise<void> {
  return new Promise((resolve) => {
    const container = rhea.create_container();
    const conn = container.connect({ host: '127.0.0.1', port: broker.amqpPort, username: user, password, reconnect: false } as never);
    const done = (): void => {
      conn.close();
      resolve();
    };
    conn.on('connection_error', done);
    conn.on('disconnected', done);
    conn.on('connection_open', done);
    setTimeout(done, 3000).unref();
  });
}

describe('auto namespaces are created only after a valid signature', () => {
  let broker: EmbeddedBroker;
  const dirOf = (name: string): string => path.join(broker.dataDir, 'namespaces', name);
  beforeAll(async () => {
    broker = await startBroker({ config: { UserConfig: { Namespaces: [{ Name: 'sbemulatorns' }] }, Broker: { AutoNamespaces: true } } });
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('a $cbs token signed with the wrong key creates nothing', async () => {
    const cs = broker.connectionString.replace(`SharedAccessKeyName=${ROOT}`, 'SharedAccessKeyName=forged-cbs').replace('SAS_KEY_VALUE', WRONG);
    const client = new ServiceBusClient(cs, { retryOptions: { maxRetries: 0 } });
    try {
      expect(codeOf(await client.createSender('q').sendMessages({ body: 'x' }).catch((e: unknown) => e))).toBe('UnauthorizedAccess');
    } finally {
      await client.close();
    }
    expect(fs.existsSync(dirOf('forged-cbs'))).toBe(false);
  });

  it('a management request signed with the wrong key creates nothing', async () => {
    const auth = signSas(`http://127.0.0.1:${broker.httpPort}/`, 'forged-http', WRONG, 600);
    expect(await atomPut(broker, '/work', auth)).toBe(401);
    expect(fs.existsSync(dirOf('forged-http'))).toBe(false);
  });

  it('a SASL PLAIN login with the wrong password creates nothing', async () => {
    await plainLogin(broker, 'forged-plain', WRONG);
    await new Promise((r) => setTimeout(r, 200));
    expect(fs.existsSync(dirOf('forged-plain'))).toBe(false);
  });

  it('a token signed with the key the namespace would have still creates it', async () => {
    const auth = signSas(`http://127.0.0.1:${broker.httpPort}/`, 'honest-suite', 'SAS_KEY_VALUE', 600);
    expect(await atomPut(broker, '/work', auth)).toBe(201);
    expect(fs.existsSync(path.join(dirOf('honest-suite'), 'namespace.json'))).toBe(true);
  });
});

describe('creating a namespace over an existing directory', () => {
  it('refuses, and leaves the directory and its files as they were', async () => {
    const broker = await startBroker();
    try {
      const dir = path.join(broker.dataDir, 'namespaces', 'kept');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'data.mdb'), 'messages of a namespace dropped from the config');
      const err = await broker.createNamespace('kept').catch((e: unknown) => e);
      expect(String(err)).toMatch(/already exists/);
      expect(fs.readFileSync(path.join(dir, 'data.mdb'), 'utf8')).toBe('messages of a namespace dropped from the config');
    } finally {
      await broker.stop();
    }
  });
});
