// The explorer's admin routes over HTTP: GET /api/tree (queues, topics with their subscriptions, rules as
// text, counts) and GET /api/history (the sampled last hour, per entity and for the namespace), both behind
// the Manage right like the rest of /api.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import { amqpMessage, api, authHeader, startHttpBroker, type HttpBroker } from '../helpers/http.js';
import { EVENTS_TOPIC } from '../helpers/topics.js';

const POLICIES = [
  { Name: 'admin', Key: 'admin-key', Rights: ['Manage', 'Send', 'Listen'] },
  { Name: 'reader', Key: 'reader-key', Rights: ['Listen'] },
];
const ADMIN = { name: 'admin', key: 'admin-key' };
const READER = { name: 'reader', key: 'reader-key' };
let b: HttpBroker;
beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'orders' }], {
    broker: { SharedAccessPolicies: POLICIES },
    topics: [EVENTS_TOPIC],
  });
});
afterAll(() => b?.close());

const get = (path: string, policy = ADMIN, resource?: string) => api(b.base, path, { auth: authHeader(policy, resource) });

describe('GET /api/tree', () => {
  it('lists queues and each topic with its subscriptions, their rules as text and their counts', async () => {
    await b.broker.send('events', [parseIncoming(amqpMessage('m1', 'x', { amount: 5000 }))]);
    const r = await get('/api/tree');
    expect(r.status).toBe(200);
    expect(r.body.namespace).toBe('sbemulatorns');
    expect(r.body.queues.map((q: { path: string }) => q.path)).toEqual(['orders']);
    expect(r.body.queues[0]).toMatchObject({ kind: 'queue', active: 0, deadLettered: 0, deadLetterAlert: false });
    expect(r.body.topics).toHaveLength(1);
    const [topic] = r.body.topics;
    expect(topic.path).toBe('events');
    expect(topic.subscriptions).toEqual([
      expect.objectContaining({
        path: 'events/Subscriptions/big',
        name: 'big',
        kind: 'subscription',
        active: 1,
        deadLettered: 0,
        rules: ["over-1000: amount > 1000 | SET priority = 'high'"],
      }),
      expect.objectContaining({
        path: 'events/Subscriptions/eu',
        name: 'eu',
        active: 0,
        rules: ['eu-only: correlation(label="OrderPaid", region="eu")'],
      }),
    ]);
  });

  it('refuses a policy without Manage (403) and a token scoped to one entity (403)', async () => {
    const r = await get('/api/tree', READER);
    expect(r.status).toBe(403);
    expect(r.body.error.message).toMatch(/lacks the Manage right/);
    expect((await get('/api/tree', ADMIN, 'http://127.0.0.1/orders')).status).toBe(403);
    expect((await api(b.base, '/api/tree', { method: 'POST', auth: authHeader(ADMIN) })).status).toBe(405);
  });
});

describe('GET /api/history', () => {
  it('returns the samples of one entity, and the namespace summed with its busiest entities', async () => {
    await b.broker.send('orders', [1, 2, 3].map((i) => parseIncoming(amqpMessage(`o${i}`, 'x'))));
    b.http.history.sample();
    const one = await get('/api/history?entity=ORDERS'); // paths match case-insensitively, as Service Bus's do
    expect(one.status).toBe(200);
    expect(one.body.entity).toBe('orders');
    expect(one.body.intervalMs).toBeGreaterThan(0);
    expect(one.body.series.sent.at(-1)).toBe(3);
    expect(one.body.series.active.at(-1)).toBe(3);
    expect(one.body.times).toHaveLength(one.body.series.sent.length);

    const ns = await get('/api/history');
    expect(ns.body.entity).toBeNull();
    expect(ns.body.series.active.at(-1)).toBe(4); // orders' three and the subscription's one
    expect(ns.body.busiest[0]).toEqual({ path: 'orders', traffic: 3, depth: 3 });
  });

  it('names an unknown entity (404) and an empty one (400)', async () => {
    const r = await get('/api/history?entity=nope');
    expect(r.status).toBe(404);
    expect(r.body.error.message).toMatch(/nope/);
    expect((await get('/api/history?entity=')).status).toBe(400);
  });

  it('refuses a policy without Manage with 403, and a token outside its sr', async () => {
    const r = await get('/api/history', READER);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('Forbidden');
    expect((await get('/api/history?entity=orders', READER)).status).toBe(403);
    const forOrders = 'http://127.0.0.1/orders';
    expect((await get('/api/history?entity=orders', ADMIN, forOrders)).status).toBe(200);
    expect((await get('/api/history?entity=events', ADMIN, forOrders)).status).toBe(403);
    expect((await get('/api/history', ADMIN, forOrders)).status).toBe(403);
  });
});

describe('GET /api/message', () => {
  it('returns one message in full with its property types, and a dead letter by view', async () => {
    const r = await get('/api/message?entity=orders&seq=1');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ entity: 'orders', lockRemainingMs: null });
    expect(r.body.message).toMatchObject({ sequenceNumber: 1, messageId: 'o1', body: 'x', bodyEncoding: 'text' });
    const sub = await get('/api/message?entity=events%2FSubscriptions%2Fbig&seq=1');
    expect(sub.body.message.applicationPropertyTypes).toMatchObject({ amount: 'integer', priority: 'string' }); // the rule's action set priority
    const dead = await get('/api/message?entity=orders&seq=1&view=deadletter');
    expect(dead.status).toBe(404);
    expect(dead.body.error.message).toBe("No message with sequence number 1 in 'orders/$DeadLetterQueue'.");
  });

  it('names the bad field (400) and refuses a policy without Manage (403)', async () => {
    expect((await get('/api/message?entity=orders&seq=0')).body.error.message).toMatch(/^seq = "0": must be an integer/);
    expect((await get('/api/message?seq=1')).body.error.message).toMatch(/^entity: required/);
    expect((await get('/api/message?entity=orders&seq=1&view=x')).body.error.message).toMatch(/^view = "x"/);
    expect((await get('/api/message?entity=nope&seq=1')).status).toBe(404);
    expect((await get('/api/message?entity=orders&seq=1', READER)).status).toBe(403);
  });
});
