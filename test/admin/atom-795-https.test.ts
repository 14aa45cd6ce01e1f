// The stable administration client, @azure/service-bus 7.9.5, unmodified: it always dials HTTPS on the port named
// in Endpoint, so it works only because every port sniffs the first byte and terminates TLS with the local CA's
// certificate. It runs in a child process (admin_client_795.mjs) with nothing but NODE_EXTRA_CA_CERTS set, once
// against the AMQP port (one connection string for both planes) and once against the HTTP port 5300-style, where
// .NET and JS 7.10 speak plain HTTP to the same listener.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./admin_client_795.mjs', import.meta.url));

interface Call {
  call: string;
  ok: boolean;
  value?: unknown;
  code?: string;
  statusCode?: number;
}

/** Runs the 7.9.5 admin client against `port`; resolves with its calls by name. */
function runAdmin(b: TestBroker, port: number): Promise<Map<string, Call>> {
  const cs = (policy: string, key: string): string =>
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=${policy};SharedAccessKey=${key};UseDevelopmentEmulator=true`;
  const args = [SCRIPT, cs('RootManageSharedAccessKey', 'SAS_KEY_VALUE'), cs('RootManageSharedAccessKey', 'SAS_KEY_VALUE'), cs('sender', 'sender-key')];
  return new Promise((resolve, reject) => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_EXTRA_CA_CERTS: b.tls!.caCertPath! };
    const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 100_000);
    proc.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`admin client exited ${code}: ${stderr.slice(-2000)}`));
      const calls = JSON.parse(stdout.trim().split('\n').pop()!) as Call[];
      if (process.env.PEEKLOCK_TEST_REPORT) process.stderr.write(`${JSON.stringify(calls, null, 1)}\n`);
      resolve(new Map(calls.map((c) => [c.call, c])));
    });
  });
}

function expectCalls(calls: Map<string, Call>, port: number): void {
  const value = (name: string): unknown => {
    const c = calls.get(name);
    expect(c, name).toBeDefined();
    expect(c, name).toMatchObject({ ok: true });
    return c!.value;
  };
  const error = (name: string): Call => {
    const c = calls.get(name);
    expect(c, name).toMatchObject({ ok: false });
    return c!;
  };
  expect(value('createQueue(q1)')).toEqual({ name: 'q1', lockDuration: 'PT1M', maxDeliveryCount: 10 });
  expect(error('createQueue(q1) again')).toMatchObject({ code: 'MessageEntityAlreadyExistsError', statusCode: 409 });
  expect(value('getQueue(q1)')).toEqual({ name: 'q1', lockDuration: 'PT1M' });
  // As on the service, a GET of a missing entity is a 200 with an empty feed, which the client turns into not-found.
  expect(error('getQueue(missing)')).toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 200 });
  expect(value('queueExists(q1)')).toBe(true);
  expect(value('queueExists(missing)')).toBe(false);
  expect(value('updateQueue(q1, lockDuration PT45S)')).toEqual({ lockDuration: 'PT45S', maxDeliveryCount: 4 });
  expect(value('getQueueRuntimeProperties(q1) after 3 sends, 1 schedule, 1 dead-letter')).toEqual({
    activeMessageCount: 2,
    deadLetterMessageCount: 1,
    scheduledMessageCount: 1,
    totalMessageCount: 4,
  });
  // 249 created + q1 + the configured queue.
  expect(value('listQueues() 250 queues byPage({ maxPageSize: 100 })')).toEqual([100, 100, 51]);
  expect(value('deleteQueue(q1)')).toBe(true);
  expect(error('deleteQueue(q1) again')).toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });

  expect(value('createTopic(t1)')).toEqual({ name: 't1', status: 'Active' });
  expect(error('createTopic(t1) again')).toMatchObject({ code: 'MessageEntityAlreadyExistsError' });
  expect(value('getTopic(t1)')).toEqual({ name: 't1' });
  expect(value('topicExists(t1)')).toBe(true);
  expect(value('updateTopic(t1, ttl PT1H)')).toEqual({ defaultMessageTimeToLive: 'PT1H' });
  expect(value('listTopics()')).toEqual(['t1']);

  expect(value('createSubscription(t1, all)')).toEqual({ subscriptionName: 'all', lockDuration: 'PT1M' });
  expect(value('getRule(t1, all, $Default)')).toMatchObject({ sqlExpression: '1=1' });
  expect(value('createSubscription(t1, red) with a default rule')).toEqual({ subscriptionName: 'red' });
  expect(error('createSubscription(t1, all) again')).toMatchObject({ code: 'MessageEntityAlreadyExistsError' });
  expect(value('getSubscription(t1, all)')).toEqual({ subscriptionName: 'all', topicName: 't1' });
  expect(value('subscriptionExists(t1, all)')).toBe(true);
  expect(value('subscriptionExists(t1, missing)')).toBe(false);
  expect(value('updateSubscription(t1, all, lockDuration PT2M)')).toEqual({ lockDuration: 'PT2M' });
  expect(value('listSubscriptions(t1)')).toEqual(['all', 'red']);
  expect(value('listRules(t1, red)')).toEqual(['only-red']);

  expect(value('deleteRule(t1, all, $Default)')).toBe(true);
  expect(value('createRule(t1, all, big) SQL filter and action')).toEqual({
    name: 'big',
    filter: { sqlExpression: 'size > 10' },
    action: { sqlExpression: "SET tier = 'big'" },
  });
  expect(value('createRule(t1, all, vip) correlation filter')).toMatchObject({ correlationId: 'c1', applicationProperties: { level: 'gold', n: 3, ok: true } });
  // The parameter comes back typed as it was given, and the rule matches neither routed message (sizes 1 and 30).
  expect(value('createRule(t1, all, param) SQL filter with parameters')).toEqual({ sqlExpression: 'size > @min', sqlParameters: { '@min': 100 } });
  expect(value('routing through the rules (sent: size 1, size 30, correlation c1)')).toEqual([
    { body: 'gold', tier: null },
    { body: 'large', tier: 'big' },
  ]);
  expect(error('createRule(t1, all, big) again')).toMatchObject({ code: 'MessageEntityAlreadyExistsError' });
  expect(value('getRule(t1, all, vip)')).toMatchObject({ name: 'vip', filter: { correlationId: 'c1' } });
  expect(value('ruleExists(t1, all, big)')).toBe(true);
  expect(value('updateRule(t1, all, big) filter size > 20')).toMatchObject({ sqlExpression: 'size > 20' });
  expect(value('deleteRule(t1, all, vip)')).toBe(true);
  expect(error('getRule(t1, all, vip) after delete')).toMatchObject({ code: 'MessageEntityNotFoundError' });
  expect(value('deleteSubscription(t1, red)')).toBe(true);
  expect(value('getTopicRuntimeProperties(t1)')).toEqual({ subscriptionCount: 1 });
  expect(value('deleteTopic(t1)')).toBe(true);
  expect(value('topicExists(t1) after delete')).toBe(false);
  expect(value('getNamespaceProperties()')).toEqual({ name: 'sbemulatorns', messagingSku: 'Standard' });

  const at = (name: string): string => `sb://127.0.0.1:${port}/${name}`;
  const both = (name: string): unknown => ({ forwardTo: at(name), forwardDeadLetteredMessagesTo: at(name) });
  expect(value('forwarding: createQueue(fq1) forwardTo a name')).toEqual(both('fwd-target'));
  expect(value('forwarding: createQueue(fq2) forwardTo an absolute URI')).toEqual(both('fwd-target'));
  expect(value('forwarding: updateQueue(fq2) forwardTo a name')).toEqual(both('fwd-target'));
  expect(value('forwarding: createSubscription(ft, s1) forwardTo an upper-case absolute URI')).toEqual(both('FWD-TARGET'));
  expect(value('forwarding: updateSubscription(ft, s1) forwardTo a name')).toEqual(both('fwd-target'));
  const rule = (keyName: string, right: string): unknown => ({
    claimType: 'SharedAccessKey',
    accessRights: [right],
    keyName,
    primaryKey: 'Ua5eLqBFbZhhBvFXvpTzLR1Vr2aDHy2BvOq0Fu4kcRw=',
    secondaryKey: 'm1+4E94Mc7Xm3Pl1DFXsHYgCNzXrcdpJH5Iq+m9QbHo=',
  });
  expect(value('authorizationRules: createQueue(rq) with two rules')).toEqual([rule('allClaims_v2', 'Send'), rule('allClaims_v3', 'Listen')]);
  expect(value('authorizationRules: getQueue(rq)')).toEqual([rule('allClaims_v2', 'Send'), rule('allClaims_v3', 'Listen')]);
  expect(value('authorizationRules: updateQueue(rq) with one rule')).toEqual([rule('allClaims_v3', 'Listen')]);
  expect(value('partitioning: createQueue(pq) partitioned')).toBe(16384);
  expect(error('createQueue(x) without Manage')).toMatchObject({ code: 'UnauthorizedRequestError', statusCode: 401 });
}

let broker: TestBroker | undefined;
afterEach(async () => {
  await broker?.dispose();
  broker = undefined;
});

async function start(): Promise<TestBroker> {
  broker = await startTestBroker([{ Name: 'configured' }], {
    store: new MemoryStore(),
    broker: {
      TlsPort: 0,
      SharedAccessPolicies: [
        { Name: 'RootManageSharedAccessKey', Key: 'SAS_KEY_VALUE', Rights: ['Manage', 'Send', 'Listen'] },
        { Name: 'sender', Key: 'sender-key', Rights: ['Send', 'Listen'] },
      ],
    },
  });
  return broker;
}

describe('ServiceBusAdministrationClient 7.9.5 over HTTPS with only NODE_EXTRA_CA_CERTS', () => {
  it('manages queues, topics, subscriptions and rules through the AMQP port, sharing one connection string with the data plane', async () => {
    const b = await start();
    expectCalls(await runAdmin(b, b.port), b.port);
  }, 120_000);

  it('manages them through the HTTP port too, where plain HTTP clients are served on the same listener', async () => {
    const b = await start();
    expectCalls(await runAdmin(b, b.httpPort), b.httpPort);
    // The same port still answers plain HTTP (.NET, JS 7.10) beside the TLS it just served.
    const res = await fetch(`http://127.0.0.1:${b.httpPort}/health`);
    expect(res.status).toBe(200);
  }, 120_000);
});
