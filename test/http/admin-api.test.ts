// The admin JSON API: SAS auth with the Manage right (401 without or with a bad token, 403 for a policy
// without Manage or a token for another entity), entity counts, peek of every view with lock state, purge,
// and clear 4xx errors for bad input.

import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { signSas } from '../../src/auth/sas-token.js';
import {
  amqpMessage,
  api,
  authHeader,
  CollectingConsumer,
  deadLetterAll,
  startHttpBroker,
  until,
  type HttpBroker,
} from '../helpers/http.js';

const POLICIES = [
  { Name: 'admin', Key: 'admin-key', Rights: ['Manage', 'Send', 'Listen'] },
  { Name: 'reader', Key: 'reader-key', Rights: ['Listen'] },
];
const ADMIN = { name: 'admin', key: 'admin-key' };
let b: HttpBroker;
const clock = new FakeClock();

beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'orders', Properties: { LockDuration: 'PT30S' } }, { Name: 'team/jobs' }], {
    clock,
    broker: { SharedAccessPolicies: POLICIES },
  });
});
afterAll(() => b.close());

const get = (path: string, auth?: string | null) =>
  api(b.base, path, { auth: auth === undefined ? authHeader(ADMIN) : auth });

describe('authorization', () => {
  it('refuses a request without a token with 401 and a JSON error', async () => {
    const r = await get('/api/entities', null);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('Unauthorized');
    expect(r.body.error.message).toMatch(/Authorization header/);
  });

  it('refuses a wrong key, an unknown policy and an expired token with 401', async () => {
    expect((await get('/api/entities', authHeader({ name: 'admin', key: 'wrong' }))).status).toBe(401);
    expect((await get('/api/entities', authHeader({ name: 'nobody', key: 'x' }))).body.error.message).toMatch(
      /Unknown shared access policy/,
    );
    const expired = signSas('http://127.0.0.1/', 'admin', 'admin-key', 60, Date.now() - 3600_000);
    expect((await get('/api/entities', expired)).body.error.message).toMatch(/expired/);
    expect((await get('/api/entities', 'Bearer abc')).status).toBe(401);
  });

  it('refuses a Listen-only policy with 403', async () => {
    const r = await get('/api/entities', authHeader({ name: 'reader', key: 'reader-key' }));
    expect(r.status).toBe(403);
    expect(r.body.error.message).toMatch(/lacks the Manage right/);
  });

  it('limits a token to the entities its sr covers', async () => {
    const forOrders = authHeader(ADMIN, 'http://127.0.0.1/orders');
    expect((await get('/api/entities/orders/messages', forOrders)).status).toBe(200);
    expect((await get('/api/entities/team%2Fjobs/messages', forOrders)).status).toBe(403);
    expect((await get('/api/entities', forOrders)).status).toBe(403);
  });

  it('accepts a Manage policy', async () => {
    const r = await get('/api/entities');
    expect(r.status).toBe(200);
    expect(r.body.entities.map((e: { path: string }) => e.path)).toEqual(['orders', 'team/jobs']);
  });
});

describe('entities and peek', () => {
  it('shows counts and every view with its lock state', async () => {
    await deadLetterAll(b.broker, 'orders', [{ id: 'dead-1', reason: 'Poison' }]);
    const future = clock.now() + 3600_000;
    await b.broker.send('orders', [
      parseIncoming(amqpMessage('live-1', { order: 1 }, { tenant: 'a' })),
      parseIncoming(amqpMessage('live-2', Buffer.from([0xff, 0x00, 0xfe]))),
      { ...parseIncoming(amqpMessage('later-1', 'soon')), scheduledAt: future },
    ]);
    const consumer = new CollectingConsumer(1, 'conn-7/receiver-1');
    const handle = b.broker.attach('orders', consumer);
    handle.setCredit(consumer.credit);
    await until(() => consumer.got.length === 1);
    handle.detach();

    const { body } = await get('/api/entities');
    expect(body.entities[0]).toMatchObject({
      path: 'orders',
      active: 1,
      locked: 1,
      scheduled: 1,
      deadLettered: 1,
      deadLetterAlert: true,
    });

    const active = (await get('/api/entities/orders/messages')).body.messages;
    expect(active.map((m: { messageId: string }) => m.messageId)).toEqual(['live-1', 'live-2']);
    const locked = active[0];
    expect(locked).toMatchObject({
      state: 'locked',
      deliveryCount: 1,
      lockHolder: 'conn-7/receiver-1',
      bodyEncoding: 'json',
      bodyPreview: '{"order":1}',
    });
    expect(locked.applicationProperties).toEqual({ tenant: 'a' });
    expect(Date.parse(locked.lockedUntilUtc)).toBe(clock.now() + 30_000);
    expect(locked.enqueuedTimeUtc).toBe(new Date(clock.now()).toISOString());
    expect(locked.expiresAtUtc).toBeNull(); // no time to live anywhere: never expires
    expect(active[1]).toMatchObject({
      state: 'active',
      lockedUntilUtc: null,
      lockHolder: null,
      bodyEncoding: 'base64',
      bodyPreview: '/wD+',
    });

    const dlq = (await get('/api/entities/orders/messages?view=deadletter')).body.messages;
    expect(dlq).toHaveLength(1);
    expect(dlq[0]).toMatchObject({
      messageId: 'dead-1',
      deadLetterReason: 'Poison',
      deadLetterErrorDescription: 'because Poison',
      bodyPreview: 'body of dead-1',
    });

    const scheduled = (await get('/api/entities/orders/messages?view=scheduled')).body.messages;
    expect(scheduled).toMatchObject([
      { messageId: 'later-1', state: 'scheduled', scheduledEnqueueTimeUtc: new Date(future).toISOString() },
    ]);
    expect((await get('/api/entities/orders/messages?view=deferred')).body.messages).toEqual([]);
    expect((await get('/api/entities/orders/messages?count=1')).body.messages).toHaveLength(1);
    expect((await get('/api/entities/ORDERS')).body).toMatchObject({ path: 'orders', locked: 1 });
  });

  it('answers bad input with 400, unknown entities with 404 and wrong methods with 405', async () => {
    const bad = await get('/api/entities/orders/messages?view=dead');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe('view = "dead": must be one of active, deadletter, scheduled, deferred.');
    expect((await get('/api/entities/orders/messages?count=0')).body.error.message).toMatch(
      /count = "0": must be an integer from 1 to 1000/,
    );
    expect((await get('/api/entities/nope/messages')).status).toBe(404);
    expect((await get('/api/entities/orders/bogus')).status).toBe(404);
    expect((await get('/api/entities/orders/purge')).status).toBe(405);
    const unknownField = await api(b.base, '/api/entities/orders/redrive', {
      method: 'POST',
      body: { maxx: 1 },
      auth: authHeader(ADMIN),
    });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error.message).toMatch(/Unknown field 'maxx'/);
    const notJson = await fetch(b.base + '/api/entities/orders/purge', {
      method: 'POST',
      headers: { authorization: authHeader(ADMIN) },
      body: '{',
    });
    expect(notJson.status).toBe(400);
    const badTarget = await api(b.base, '/api/entities/orders/redrive', {
      method: 'POST',
      body: { to: 'missing' },
      auth: authHeader(ADMIN),
    });
    expect(badTarget.status).toBe(404);
  });
});

/** Every field the admin API shows for a message, under the SDK's ServiceBusReceivedMessage names. */
const SDK_FIELDS = [
  'messageId',
  'correlationId',
  'contentType',
  'subject',
  'to',
  'replyTo',
  'replyToSessionId',
  'sessionId',
  'timeToLive',
  'scheduledEnqueueTimeUtc',
  'partitionKey',
  'applicationProperties',
  'deliveryCount',
  'sequenceNumber',
  'enqueuedTimeUtc',
  'expiresAtUtc',
  'lockedUntilUtc',
  'deadLetterReason',
  'deadLetterErrorDescription',
  'deadLetterSource',
  'state',
];
const AMQP_NAMES = ['message_id', 'correlation_id', 'content_type', 'reply_to', 'reply_to_group_id', 'group_id'];

/** A received message's fields as JSON would carry them (Long and Date as number and ISO text). */
function sdkJson(m: ServiceBusReceivedMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) {
    if (k === 'body' || k === '_rawAmqpMessage' || k === 'lockToken') continue;
    out[k] = v instanceof Date ? v.toISOString() : k === 'sequenceNumber' ? Number(v) : (v ?? null);
  }
  return out;
}

describe('message fields', () => {
  it('names and values every field as the SDK received message does, in the queue and its dead-letter queue', async () => {
    const sb = await startHttpBroker([{ Name: 'props' }]);
    const client = new ServiceBusClient(
      `Endpoint=sb://127.0.0.1:${sb.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
      { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } },
    );
    try {
      const full = {
        body: { n: 1 },
        correlationId: 'corr-1',
        contentType: 'application/json',
        subject: 'order.created',
        to: 'billing',
        replyTo: 'replies',
        replyToSessionId: 'reply-session',
        partitionKey: 'pk-1',
        timeToLive: 3_600_000,
        applicationProperties: { tenant: 'contoso', attempt: 2 },
      };
      await client.createSender('props').sendMessages([
        { ...full, messageId: 'full-1' },
        { ...full, messageId: 'full-2' },
      ]);
      const receiver = client.createReceiver('props');
      const [got] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
      await receiver.deadLetterMessage(got!, { deadLetterReason: 'Poison', deadLetterErrorDescription: 'bad total' });
      const [peeked] = await receiver.peekMessages(1);
      const [dlqPeeked] = await client.createReceiver('props', { subQueueType: 'deadLetter' }).peekMessages(1);

      const [view] = (await api(sb.base, '/api/entities/props/messages')).body.messages;
      const [dlqView] = (await api(sb.base, '/api/entities/props/messages?view=deadletter')).body.messages;
      expect(view.messageId).toBe('full-2');
      expect(dlqView.messageId).toBe('full-1');
      for (const [sdk, ours] of [
        [peeked!, view],
        [dlqPeeked!, dlqView],
      ] as const) {
        expect(Object.keys(ours)).toEqual(expect.arrayContaining(SDK_FIELDS));
        for (const name of AMQP_NAMES) expect(ours).not.toHaveProperty(name);
        expect(ours).not.toHaveProperty('properties');
        // Every field the SDK reads off the message has the same name and value here.
        const expected = sdkJson(sdk);
        expect(Object.keys(expected).length).toBeGreaterThan(15);
        // The SDK computes expiresAtUtc as enqueued time + time to live even for a dead letter, which Service
        // Bus never expires; the API says when the broker will really expire it (null: never).
        if (ours === dlqView) expected.expiresAtUtc = null;
        expect(ours).toMatchObject(expected);
      }
      expect(view).toMatchObject({ correlationId: 'corr-1', partitionKey: 'pk-1', timeToLive: 3_600_000 });
      expect(Date.parse(view.expiresAtUtc) - Date.parse(view.enqueuedTimeUtc)).toBe(3_600_000);
      expect(dlqView).toMatchObject({ deadLetterReason: 'Poison', deadLetterErrorDescription: 'bad total' });
    } finally {
      await client.close();
      await sb.close();
    }
  });
});

describe('purge', () => {
  it('empties the dead-letter queue or the whole queue', async () => {
    await deadLetterAll(b.broker, 'team/jobs', [{ id: 'j3', reason: 'r' }]);
    await b.broker.send('team/jobs', [parseIncoming(amqpMessage('j1', 'x')), parseIncoming(amqpMessage('j2', 'y'))]);
    const dlq = await api(b.base, '/api/entities/team%2Fjobs/purge', {
      method: 'POST',
      body: { view: 'deadletter' },
      auth: authHeader(ADMIN),
    });
    expect(dlq.body).toEqual({ entity: 'team/jobs/$DeadLetterQueue', purged: 1 });
    const all = await api(b.base, '/api/entities/team%2Fjobs/purge', { method: 'POST', auth: authHeader(ADMIN) });
    expect(all.body).toEqual({ entity: 'team/jobs', purged: 2 });
    const { body } = await get('/api/entities/team%2Fjobs');
    expect(body).toMatchObject({ active: 0, deadLettered: 0 });
    const scheduledPurge = await api(b.base, '/api/entities/orders/purge', {
      method: 'POST',
      body: { view: 'scheduled' },
      auth: authHeader(ADMIN),
    });
    expect(scheduledPurge.status).toBe(400);
  });
});
