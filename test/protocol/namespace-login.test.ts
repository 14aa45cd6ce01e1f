// A connection belongs to one namespace, the one its login was checked in (Service Bus: a namespace's keys open
// that namespace alone). SASL PLAIN names a host in its init frame and the AMQP open names one again: a key checked
// in one namespace must not open another, whether the open names another namespace or none; and a put-token signed
// with another namespace's key must not move or widen a connection already bound.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPeeklock, type RunningBroker } from '../../src/app/app.js';
import { parseConfig } from '../../src/config/load.js';
import { signSas } from '../../src/auth/sas-token.js';
import { RawSession, outcomeOf, waitFor, type Login } from '../helpers/raw-session.js';

const ROOT = 'RootManageSharedAccessKey';
const K1 = 'a2V5LW9mLW5hbWVzcGFjZS1vbmU=';
const K2 = 'a2V5LW9mLW5hbWVzcGFjZS10d28=';
const RIGHTS = ['Manage', 'Send', 'Listen'];

let running: RunningBroker;
let dataDir: string;
const sessions: RawSession[] = [];

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-nslogin-'));
  const config = parseConfig(
    JSON.stringify({
      UserConfig: {
        Namespaces: [
          { Name: 'sbemulatorns', Queues: [{ Name: 'orders' }] },
          { Name: 'ns1', Queues: [{ Name: 'orders' }], SharedAccessPolicies: [{ Name: ROOT, Key: K1, Rights: RIGHTS }] },
          { Name: 'ns2', Queues: [{ Name: 'orders' }], SharedAccessPolicies: [{ Name: ROOT, Key: K2, Rights: RIGHTS }] },
        ],
        Logging: { Type: 'Console' },
      },
      Broker: { Host: '127.0.0.1', Port: 0, LogLevel: 'silent', DataDir: dataDir },
    }),
    'test',
  );
  running = await startPeeklock({ config, log: pino({ level: 'silent' }) });
});
afterAll(async () => {
  for (const s of sessions) s.conn.destroy();
  await running?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const count = (ns: string): number => running.namespaces.get(ns)!.broker.peek('orders', 1, 100).length;

/** Logs in with `login`, opens naming `host`, and sends one message to `orders`; resolves with its outcome. */
async function trySend(login: Login, host: string): Promise<string | undefined> {
  const s = new RawSession(running.port);
  sessions.push(s);
  await s.conn.ready();
  const send = s.sends(0, 1, 'crossing');
  await s.conn.write(Buffer.concat([s.start(login, host), s.attachSender(0, 'orders'), send.bytes]));
  const answer = await waitFor(() => s.disposition(send.ids[0]!) ?? s.closed() ?? (s.conn.closed ? s.conn.seen.at(-1) : undefined), 3_000);
  return outcomeOf(s.disposition(send.ids[0]!))?.outcome ?? (answer ? 'closed' : undefined);
}

describe('a login belongs to the namespace its key was checked in', () => {
  it("refuses ns1's key checked by SASL in ns1 on an open that names ns2", async () => {
    const before = count('ns2');
    const got = await trySend({ user: ROOT, password: K1, saslHost: 'ns1.localhost' }, 'ns2.localhost');
    expect(got).not.toBe('accepted');
    expect(count('ns2')).toBe(before);
  });

  it("refuses ns1's key checked by SASL in ns1 on an open that names no namespace (the default one)", async () => {
    const before = count('sbemulatorns');
    const got = await trySend({ user: ROOT, password: K1, saslHost: 'ns1.localhost' }, '127.0.0.1');
    expect(count('sbemulatorns')).toBe(before);
    // Bound to ns1, where the key was checked: the message lands there, never in the default namespace.
    if (got === 'accepted') expect(count('ns1')).toBeGreaterThan(0);
  });

  it('still serves a login whose SASL host and open host agree', async () => {
    const before = count('ns1');
    expect(await trySend({ user: ROOT, password: K1, saslHost: 'ns1.localhost' }, 'ns1.localhost')).toBe('accepted');
    expect(count('ns1')).toBe(before + 1);
  });

  it("does not move or widen a PLAIN-bound connection with a put-token signed by another namespace's key", async () => {
    const s = new RawSession(running.port);
    sessions.push(s);
    await s.conn.ready();
    const token = signSas('sb://ns2.localhost/orders', ROOT, K2, 600);
    const put = s.putToken(0, token, 'sb://ns2.localhost/orders', 'cbs-reply');
    await s.conn.write(
      Buffer.concat([s.start({ user: ROOT, password: K1, saslHost: 'ns1.localhost' }, 'ns1.localhost'), s.attachReceiver(1, '$cbs', 'cbs-reply'), s.attachSender(0, '$cbs'), s.flow(1, 10), put.bytes]),
    );
    const reply = await waitFor(() => s.replies('r1')[0]);
    expect(reply?.['status-code']).toBe(401);
    const before2 = count('ns2');
    const send = s.sends(2, 1, 'widen');
    await s.conn.write(Buffer.concat([s.attachSender(2, 'orders'), send.bytes]));
    expect(outcomeOf(await waitFor(() => s.disposition(send.ids[0]!)))?.outcome).toBe('accepted');
    expect(count('ns2')).toBe(before2);
  });
});
