// The admin API's message actions: send (typed application properties, session, message-id, schedule) as the
// SDK receives it; resubmit, delete and dead-letter by sequence number or by filter in every view, each
// answering the count and logged with the policy that asked; 403 without Manage, 400 naming the field, 404 for
// a missing entity or message.

import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import { amqpMessage, api, authHeader, CollectingConsumer, deadLetterAll, startHttpBroker, until, type HttpBroker } from '../helpers/http.js';
import { EVENTS_TOPIC } from '../helpers/topics.js';

const POLICIES = [
  { Name: 'ops', Key: 'ops-key', Rights: ['Manage', 'Send', 'Listen'] },
  { Name: 'reader', Key: 'reader-key', Rights: ['Listen'] },
];
const OPS = { name: 'ops', key: 'ops-key' };
let b: HttpBroker;
let client: ServiceBusClient;

beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'orders' }, { Name: 'jobs' }, { Name: 'sessions', Properties: { RequiresSession: true } }], {
    broker: { SharedAccessPolicies: POLICIES },
    topics: [EVENTS_TOPIC],
  });
  client = new ServiceBusClient(
    `Endpoint=sb://127.0.0.1:${b.port};SharedAccessKeyName=ops;SharedAccessKey=ops-key;UseDevelopmentEmulator=true`,
    { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } },
  );
});
afterAll(async () => {
  await client?.close();
  await b?.close();
});

const post = (path: string, body: unknown, auth: string | null = authHeader(OPS)) => api(b.base, path, { method: 'POST', body, auth });
const counts = (path: string) => b.broker.listEntities().find((e) => e.path === path)!;
const seqsOf = (path: string, state?: 'active' | 'deferred' | 'scheduled') =>
  b.broker.browse(path, { state, count: 1000 }).map((m) => m.row.seq);
const auditLines = (action: string) => b.logs.filter((l) => l.msg === 'message action' && l.action === action);

async function receiveOne(queue: string, sessionId?: string) {
  const receiver = sessionId ? await client.acceptSession(queue, sessionId) : client.createReceiver(queue);
  try {
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 3000 });
    if (m) await receiver.completeMessage(m);
    return m;
  } finally {
    await receiver.close();
  }
}

describe('send', () => {
  it('sends a message the SDK receives with its body, properties and typed application properties', async () => {
    const r = await post('/api/entities/orders/send', {
      body: '{"id":7}',
      contentType: 'application/json',
      subject: 'order.created',
      correlationId: 'corr-7',
      messageId: 'order-7',
      timeToLiveSeconds: 3600,
      applicationProperties: {
        tenant: 'contoso',
        attempt: 3,
        ratio: 0.5,
        urgent: true,
        big: { type: 'long', value: '9007199254740991' },
        small: { type: 'int', value: 12 },
        due: { type: 'timestamp', value: '2030-01-02T03:04:05Z' },
      },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ entity: 'orders', count: 1, messageId: 'order-7' });
    const m = await receiveOne('orders');
    expect(m?.body).toEqual({ id: 7 }); // a data section of JSON text, which the SDK parses
    expect(m).toMatchObject({ messageId: 'order-7', contentType: 'application/json', subject: 'order.created', correlationId: 'corr-7', timeToLive: 3_600_000 });
    expect(m?.applicationProperties).toMatchObject({ tenant: 'contoso', attempt: 3, ratio: 0.5, urgent: true, big: 9007199254740991, small: 12 });
    // A timestamp: the SDK hands application property timestamps over as epoch milliseconds.
    expect(m?.applicationProperties?.due).toBe(Date.parse('2030-01-02T03:04:05Z'));
    const [line] = auditLines('send');
    expect(line).toMatchObject({ policy: 'ops', entity: 'orders', count: 1 });
  });

  it('sends to a session-enabled queue with a session id, and schedules a message for later', async () => {
    expect((await post('/api/entities/sessions/send', { body: 'hi', sessionId: 's-1' })).status).toBe(200);
    const m = await receiveOne('sessions', 's-1');
    expect(m?.sessionId).toBe('s-1');
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const r = await post('/api/entities/jobs/send', { body: 'later', scheduledEnqueueTimeUtc: at });
    expect(r.status).toBe(200);
    expect(counts('jobs').scheduled).toBe(1);
    expect(b.broker.browse('jobs', { state: 'scheduled' })[0]!.row.scheduledAt).toBe(Date.parse(at));
    await post('/api/entities/jobs/delete', { view: 'scheduled', filter: {} });
  });

  it('sends to a topic, which routes the message through its rules', async () => {
    const before = counts('events/Subscriptions/big').active;
    const r = await post('/api/entities/events/send', { body: 'x', applicationProperties: { amount: 5000, region: 'us' } });
    expect(r.status).toBe(200);
    expect(counts('events/Subscriptions/big').active).toBe(before + 1);
  });

  it('refuses bad input with a 400 that names the field, and a subscription as a target', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /^body/],
      [{ body: 1 }, /^body/],
      [{ body: 'x', bodyEncoding: 'hex' }, /^bodyEncoding/],
      [{ body: '***', bodyEncoding: 'base64' }, /^body: not valid base64/],
      [{ body: 'x', sessionId: '' }, /^sessionId/],
      [{ body: 'x', messageId: 'm'.repeat(129) }, /^messageId/],
      [{ body: 'x', timeToLiveSeconds: -1 }, /timeToLiveSeconds/],
      [{ body: 'x', scheduledEnqueueTimeUtc: 'tomorrow' }, /^scheduledEnqueueTimeUtc/],
      [{ body: 'x', applicationProperties: { a: { type: 'uuid', value: 1 } } }, /^applicationProperties\.a\.type/],
      [{ body: 'x', applicationProperties: { a: { type: 'int', value: 2 ** 40 } } }, /^applicationProperties\.a\.value/],
      [{ body: 'x', applicationProperties: { a: null } }, /^applicationProperties\.a /],
      [{ body: 'x', colour: 'red' }, /Unknown field 'colour'/],
    ];
    for (const [body, message] of cases) {
      const r = await post('/api/entities/jobs/send', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.message).toMatch(message);
    }
    const sub = await post('/api/entities/events%2FSubscriptions%2Fbig/send', { body: 'x' });
    expect(sub.status).toBe(400);
    expect(sub.body.error.message).toMatch(/^entity = .*only receives/);
    expect(counts('jobs').active).toBe(0);
  });

  it('answers 404 for a missing entity, 403 without Manage and 401 without a token', async () => {
    expect((await post('/api/entities/nope/send', { body: 'x' })).status).toBe(404);
    const reader = await post('/api/entities/jobs/send', { body: 'x' }, authHeader({ name: 'reader', key: 'reader-key' }));
    expect(reader.status).toBe(403);
    expect((await post('/api/entities/jobs/send', { body: 'x' }, null)).status).toBe(401);
    expect(counts('jobs').active).toBe(0);
  });
});

describe('resubmit, delete and dead-letter', () => {
  it('resubmits a dead-lettered message to its queue, removing the original in the same write', async () => {
    await deadLetterAll(b.broker, 'orders', [{ id: 'poison-1', reason: 'Poison', props: { tenant: 'a' } }]);
    const [seq] = seqsOf('orders/$DeadLetterQueue');
    const r = await post('/api/entities/orders/resubmit', { view: 'deadletter', sequenceNumbers: [seq] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ entity: 'orders/$DeadLetterQueue', to: 'orders', count: 1, skipped: 0 });
    expect(counts('orders').deadLettered).toBe(0);
    const m = await receiveOne('orders');
    expect(m).toMatchObject({ messageId: 'poison-1', body: 'body of poison-1', deliveryCount: 0 });
    expect(m?.deadLetterReason).toBeUndefined();
    expect(m?.applicationProperties).toMatchObject({ tenant: 'a' });
    expect(auditLines('resubmit').at(-1)).toMatchObject({ policy: 'ops', entity: 'orders/$DeadLetterQueue', to: 'orders', count: 1 });
  });

  it("resubmits a subscription's dead letter to its topic, and keeps the original when asked", async () => {
    const sub = 'events/Subscriptions/big';
    await b.broker.purge(sub);
    await b.broker.send('events', [parseIncoming(amqpMessage('big-1', 'b', { amount: 2000 }))]);
    const consumer = new CollectingConsumer(10);
    const h = b.broker.attach(sub, consumer);
    h.setCredit(consumer.credit);
    await until(() => consumer.got.length === 1);
    h.detach();
    await b.broker.settle(consumer.got[0]!.row.lock!.token, { kind: 'deadLetter', reason: 'Bad' });
    const eu = counts('events/Subscriptions/eu').active;
    const r = await post(`/api/entities/${encodeURIComponent(sub)}/resubmit`, { view: 'deadletter', filter: { reason: 'Bad' }, keepOriginal: true });
    expect(r.body).toMatchObject({ to: 'events', count: 1 });
    expect(counts(sub)).toMatchObject({ active: 1, deadLettered: 1 });
    expect(counts('events/Subscriptions/eu').active).toBe(eu); // routed by the rules again: amount 2000, no region
  });

  it('deletes chosen messages and skips locked ones; a missing message is a 404', async () => {
    await b.broker.send('jobs', ['a', 'b', 'c'].map((id) => parseIncoming(amqpMessage(id, id))));
    const [first, second, third] = seqsOf('jobs');
    const consumer = new CollectingConsumer(1);
    const h = b.broker.attach('jobs', consumer);
    h.setCredit(consumer.credit);
    await until(() => consumer.got.length === 1); // locks the first
    h.detach();
    const r = await post('/api/entities/jobs/delete', { sequenceNumbers: [first, second] });
    expect(r.body).toMatchObject({ count: 1 });
    expect(seqsOf('jobs')).toEqual([first, third]);
    const missing = await post('/api/entities/jobs/delete', { sequenceNumbers: [999_999] });
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toMatch(/999999/);
    await b.broker.settle(consumer.got[0]!.row.lock!.token, { kind: 'complete' });
    await post('/api/entities/jobs/delete', { filter: {} });
    expect(counts('jobs').active).toBe(0);
  });

  it('dead-letters a deferred message with the reason given', async () => {
    await b.broker.send('jobs', [parseIncoming(amqpMessage('d-1', 'd'))]);
    const consumer = new CollectingConsumer(1);
    const h = b.broker.attach('jobs', consumer);
    h.setCredit(consumer.credit);
    await until(() => consumer.got.length === 1);
    h.detach();
    await b.broker.settle(consumer.got[0]!.row.lock!.token, { kind: 'defer' });
    const r = await post('/api/entities/jobs/dead-letter', {
      view: 'deferred',
      filter: {},
      deadLetterReason: 'Stuck',
      deadLetterErrorDescription: 'deferred for too long',
    });
    expect(r.body).toMatchObject({ entity: 'jobs', count: 1 });
    const [m] = b.broker.browse('jobs/$DeadLetterQueue');
    expect(m!.row.props).toMatchObject({ DeadLetterReason: 'Stuck', DeadLetterErrorDescription: 'deferred for too long' });
    expect(counts('jobs')).toMatchObject({ deferred: 0, deadLettered: 1 });
    await post('/api/entities/jobs/delete', { view: 'deadletter', filter: {} });
  });

  it('acts on a filtered selection (reason, subject, age, property), answering the count; a dry run acts on nothing', async () => {
    await deadLetterAll(b.broker, 'orders', [
      { id: 'p1', reason: 'Poison', props: { tenant: 'a' } },
      { id: 'p2', reason: 'Poison', props: { tenant: 'b' } },
      { id: 'p3', reason: 'Timeout', props: { tenant: 'a' } },
    ]);
    const dry = await post('/api/entities/orders/delete', { view: 'deadletter', filter: { reason: 'Poison' }, dryRun: true });
    expect(dry.body).toMatchObject({ count: 2, dryRun: true });
    expect(counts('orders').deadLettered).toBe(3);
    const young = await post('/api/entities/orders/delete', { view: 'deadletter', filter: { olderThanSeconds: 3600 }, dryRun: true });
    expect(young.body.count).toBe(0);
    const byProp = await post('/api/entities/orders/delete', { view: 'deadletter', filter: { reason: 'Poison', property: 'tenant=a' } });
    expect(byProp.body).toMatchObject({ count: 1, dryRun: false });
    expect(counts('orders').deadLettered).toBe(2);
    expect(auditLines('delete').at(-1)).toMatchObject({ policy: 'ops', entity: 'orders/$DeadLetterQueue', count: 1 });
    await post('/api/entities/orders/send', { body: 'x', subject: 'refund' });
    await post('/api/entities/orders/send', { body: 'y', subject: 'order' });
    const bySubject = await post('/api/entities/orders/dead-letter', { filter: { subject: 'refund' } });
    expect(bySubject.body).toMatchObject({ count: 1 });
    expect(counts('orders')).toMatchObject({ active: 1, deadLettered: 3 });
    expect(b.broker.browse('orders/$DeadLetterQueue').some((m) => m.row.props?.DeadLetterReason === 'ManuallyDeadLettered')).toBe(true);
    await post('/api/entities/orders/delete', { view: 'deadletter', filter: {} });
    await post('/api/entities/orders/delete', { filter: {} });
  });

  it('selects across pages of a deeper queue, in sequence order', async () => {
    await b.broker.send('jobs', Array.from({ length: 1200 }, (_, i) => parseIncoming(amqpMessage(`m-${i}`, 'x', { n: i % 2 }))));
    const odd = await post('/api/entities/jobs/dead-letter', { filter: { property: 'n=1' }, deadLetterReason: 'Odd' });
    expect(odd.body).toMatchObject({ count: 600, skipped: 0 });
    expect(counts('jobs')).toMatchObject({ active: 600, deadLettered: 600 });
    const all = await post('/api/entities/jobs/delete', { filter: {} });
    expect(all.body.count).toBe(600);
    await post('/api/entities/jobs/purge', { view: 'deadletter' });
    // Purge and redrive name the policy in their log lines too.
    expect(b.logs.filter((l) => l.msg === 'purged').at(-1)).toMatchObject({ policy: 'ops', entity: 'jobs/$DeadLetterQueue', purged: 600 });
    expect(counts('jobs')).toMatchObject({ active: 0, deadLettered: 0 });
  });

  it('refuses bad selections with a 400 naming the field, without Manage with 403, and a missing entity with 404', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['delete', {}, /^sequenceNumbers or filter/],
      ['delete', { sequenceNumbers: [1], filter: {} }, /^sequenceNumbers or filter/],
      ['delete', { sequenceNumbers: [] }, /^sequenceNumbers/],
      ['delete', { sequenceNumbers: ['x'] }, /sequenceNumbers\[0\]/],
      ['delete', { view: 'locked', filter: {} }, /^view/],
      ['delete', { filter: { colour: 'red' } }, /^filter\.colour/],
      ['delete', { filter: { olderThanSeconds: -5 } }, /filter\.olderThanSeconds/],
      ['delete', { filter: { property: 'novalue' } }, /^filter\.property/],
      ['delete', { filter: {}, dryRun: 'yes' }, /^dryRun/],
      ['resubmit', { filter: {}, to: 'events/Subscriptions/big' }, /^to: /],
      ['resubmit', { filter: {}, keepOriginal: 1 }, /^keepOriginal/],
      ['dead-letter', { view: 'deadletter', filter: {} }, /^view = "deadletter"/],
      ['dead-letter', { filter: {}, deadLetterReason: '' }, /^deadLetterReason/],
    ];
    for (const [action, body, message] of cases) {
      const r = await post(`/api/entities/orders/${action}`, body);
      expect(r.status, `${action} ${JSON.stringify(body)}`).toBe(400);
      expect(r.body.error.message).toMatch(message);
    }
    expect((await post('/api/entities/orders/resubmit', { filter: {}, to: 'nowhere' })).status).toBe(404);
    expect((await post('/api/entities/nope/delete', { filter: {} })).status).toBe(404);
    for (const action of ['resubmit', 'delete', 'dead-letter']) {
      const r = await post(`/api/entities/orders/${action}`, { filter: {} }, authHeader({ name: 'reader', key: 'reader-key' }));
      expect(r.status).toBe(403);
    }
    expect((await api(b.base, '/api/entities/orders/delete', { auth: authHeader(OPS) })).status).toBe(405);
  });
});
