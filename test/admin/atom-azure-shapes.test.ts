// The administration API answered as Azure answers it, with the JS admin client (7.10.0-beta.2, plain HTTP) and
// the expectations of the SDK's own atomManagement tests: ForwardTo / ForwardDeadLetteredMessagesTo come back as
// `sb://<the host the client addressed>/<name>` (the name's case kept) whether the request named the target or gave
// an absolute URI; a queue's or topic's AuthorizationRules are stored and echoed back, with keys generated when the
// request leaves them out; a partitioned entity on Standard reports 16 × its configured MaxSizeInMegabytes.

import { afterEach, describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient, type AuthorizationRule } from '@azure/service-bus-beta';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker | undefined;
afterEach(async () => {
  await broker?.dispose();
  broker = undefined;
});

async function start(): Promise<{ admin: ServiceBusAdministrationClient; endpoint: string }> {
  broker = await startTestBroker([], { store: new MemoryStore() });
  const cs = `Endpoint=sb://127.0.0.1:${broker.httpPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`;
  return { admin: new ServiceBusAdministrationClient(cs, { retryOptions: { maxRetries: 0 } }), endpoint: `sb://127.0.0.1:${broker.httpPort}/` };
}

const KEY_A = 'Ua5eLqBFbZhhBvFXvpTzLR1Vr2aDHy2BvOq0Fu4kcRw=';
const KEY_B = 'm1+4E94Mc7Xm3Pl1DFXsHYgCNzXrcdpJH5Iq+m9QbHo=';

describe('ForwardTo and ForwardDeadLetteredMessagesTo as Azure writes them', () => {
  it('answers a queue created with a target name, or an absolute URI, with sb://<host>/<name>', async () => {
    const { admin, endpoint } = await start();
    await admin.createTopic('fwd-target');
    const byName = await admin.createQueue('by-name', { forwardTo: 'fwd-target', forwardDeadLetteredMessagesTo: 'fwd-target' });
    expect({ f: byName.forwardTo, d: byName.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}fwd-target`, d: `${endpoint}fwd-target` });
    const byUri = await admin.createQueue('by-uri', { forwardTo: `${endpoint}fwd-target`, forwardDeadLetteredMessagesTo: `${endpoint}fwd-target` });
    expect({ f: byUri.forwardTo, d: byUri.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}fwd-target`, d: `${endpoint}fwd-target` });
    // A GET answers the same.
    expect((await admin.getQueue('by-name')).forwardTo).toBe(`${endpoint}fwd-target`);
  });

  it('answers a queue updated with a target name, or an absolute URI, with sb://<host>/<name>', async () => {
    const { admin, endpoint } = await start();
    await admin.createTopic('fwd-target');
    await admin.createQueue('q');
    const byName = await admin.updateQueue({ ...(await admin.getQueue('q')), forwardTo: 'fwd-target', forwardDeadLetteredMessagesTo: 'fwd-target' });
    expect({ f: byName.forwardTo, d: byName.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}fwd-target`, d: `${endpoint}fwd-target` });
    const byUri = await admin.updateQueue({ ...(await admin.getQueue('q')), forwardTo: `${endpoint}fwd-target`, forwardDeadLetteredMessagesTo: `${endpoint}fwd-target` });
    expect({ f: byUri.forwardTo, d: byUri.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}fwd-target`, d: `${endpoint}fwd-target` });
  });

  it('answers subscriptions created and updated with a name, or an upper-case absolute URI, keeping the name as given', async () => {
    const { admin, endpoint } = await start();
    await admin.createQueue('fwdq');
    await admin.createTopic('t');
    const byName = await admin.createSubscription('t', 'by-name', { forwardTo: 'fwdq', forwardDeadLetteredMessagesTo: 'fwdq' });
    expect({ f: byName.forwardTo, d: byName.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}fwdq`, d: `${endpoint}fwdq` });
    // The SDK test sends the whole URI upper-cased and expects the endpoint as the client has it, the name as sent.
    const upper = `${endpoint}fwdq`.toUpperCase();
    const byUri = await admin.createSubscription('t', 'by-uri', { forwardTo: upper, forwardDeadLetteredMessagesTo: upper });
    expect({ f: byUri.forwardTo, d: byUri.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}FWDQ`, d: `${endpoint}FWDQ` });
    await admin.createSubscription('t', 'upd');
    const updName = await admin.updateSubscription({ ...(await admin.getSubscription('t', 'upd')), forwardTo: 'fwdq', forwardDeadLetteredMessagesTo: 'fwdq' });
    expect({ f: updName.forwardTo, d: updName.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}fwdq`, d: `${endpoint}fwdq` });
    const updUri = await admin.updateSubscription({ ...(await admin.getSubscription('t', 'upd')), forwardTo: `${endpoint}fwdq`, forwardDeadLetteredMessagesTo: `${endpoint}fwdq` });
    expect({ f: updUri.forwardTo, d: updUri.forwardDeadLetteredMessagesTo }).toEqual({ f: `${endpoint}fwdq`, d: `${endpoint}fwdq` });
  });
});

describe('AuthorizationRules on queues and topics', () => {
  const rules: AuthorizationRule[] = [
    { claimType: 'SharedAccessKey', accessRights: ['Send'], keyName: 'allClaims_v2', primaryKey: KEY_A, secondaryKey: KEY_B },
    { claimType: 'SharedAccessKey', accessRights: ['Listen'], keyName: 'allClaims_v3', primaryKey: KEY_A, secondaryKey: KEY_B },
  ];

  it('stores a queue created with two rules and echoes them back on create, get and list', async () => {
    const { admin } = await start();
    const created = await admin.createQueue('q', { authorizationRules: rules });
    expect(created.authorizationRules).toEqual(rules);
    expect((await admin.getQueue('q')).authorizationRules).toEqual(rules);
    const listed = [];
    for await (const q of admin.listQueues()) listed.push(q);
    expect(listed.find((q) => q.name === 'q')?.authorizationRules).toEqual(rules);
  });

  it('replaces the rules on update, and generates the keys a rule is given without', async () => {
    const { admin } = await start();
    await admin.createQueue('q', { authorizationRules: rules });
    const updated = await admin.updateQueue({
      ...(await admin.getQueue('q')),
      authorizationRules: [{ claimType: 'SharedAccessKey', accessRights: ['Manage', 'Send', 'Listen'], keyName: 'fresh' }],
    });
    expect(updated.authorizationRules).toHaveLength(1);
    const [fresh] = updated.authorizationRules!;
    expect(fresh).toMatchObject({ keyName: 'fresh', accessRights: ['Manage', 'Send', 'Listen'], claimType: 'SharedAccessKey' });
    // Azure's generated keys: 32 random bytes, base64 (44 characters).
    expect(fresh!.primaryKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(fresh!.secondaryKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(fresh!.primaryKey).not.toBe(fresh!.secondaryKey);
    expect((await admin.getQueue('q')).authorizationRules).toEqual(updated.authorizationRules);
    // An update that leaves the rules out keeps them.
    const { authorizationRules: _dropped, ...rest } = await admin.getQueue('q');
    void _dropped;
    expect((await admin.updateQueue({ ...rest, maxDeliveryCount: 3 })).authorizationRules).toEqual(updated.authorizationRules);
  });

  it('stores a topic created with rules and echoes them back', async () => {
    const { admin } = await start();
    const created = await admin.createTopic('t', { authorizationRules: rules });
    expect(created.authorizationRules).toEqual(rules);
    expect((await admin.getTopic('t')).authorizationRules).toEqual(rules);
  });

  it('refuses a duplicate key name and more than 12 rules with 400', async () => {
    const { admin } = await start();
    const bad = (authorizationRules: AuthorizationRule[]): Promise<unknown> => admin.createQueue('bad', { authorizationRules }).catch((e: unknown) => e);
    const dup = [rules[0]!, { ...rules[1]!, keyName: 'allClaims_v2' }];
    const many = Array.from({ length: 13 }, (_, i) => ({ ...rules[0]!, keyName: `k${i}` }));
    for (const set of [dup, many]) expect(await bad(set)).toMatchObject({ statusCode: 400 });
    expect(await admin.queueExists('bad')).toBe(false);
  });
});

describe('partitioned entities on Standard', () => {
  it('report MaxSizeInMegabytes as 16 × the configured size, and keep it through an update', async () => {
    const { admin } = await start();
    const q = await admin.createQueue('pq', { enablePartitioning: true });
    expect(q.maxSizeInMegabytes).toBe(16384);
    expect((await admin.updateQueue({ ...(await admin.getQueue('pq')), lockDuration: 'PT50S' })).maxSizeInMegabytes).toBe(16384);
    const t = await admin.createTopic('pt', { enablePartitioning: true, maxSizeInMegabytes: 2048 });
    expect(t.maxSizeInMegabytes).toBe(32768);
    expect((await admin.updateTopic({ ...(await admin.getTopic('pt')), status: 'SendDisabled' })).maxSizeInMegabytes).toBe(32768);
    // An unpartitioned entity reports what it was given.
    expect((await admin.createQueue('plain', { maxSizeInMegabytes: 2048 })).maxSizeInMegabytes).toBe(2048);
  });
});
