// GET /health (503 until the entities exist, 200 then, 503 once closing) and GET /metrics scraped after a
// dead-letter made with the real @azure/service-bus SDK.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceBusClient } from '@azure/service-bus';
import { pino } from 'pino';
import { Broker } from '../../src/broker/broker.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { HttpServer } from '../../src/http/server.js';
import { filterFields, messageDetail, messageView, storedAppProperties } from '../../src/amqp/message-view.js';
import { composeMessage, reparseStored } from '../../src/amqp/compose.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { testConfig } from '../helpers/config.js';
import { startHttpBroker, type HttpBroker } from '../helpers/http.js';

/** The value of one sample line (`name{labels} value`), or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /health', () => {
  it('is 503 until the configured entities exist, then 200, and 503 while closing', async () => {
    const config = testConfig([{ Name: 'orders' }, { Name: 'jobs' }]);
    const store = new MemoryStore();
    const broker = new Broker({ config, store, clock: new FakeClock(), log: pino({ level: 'silent' }) });
    const http = new HttpServer({
      host: '127.0.0.1',
      port: 0,
      broker,
      config,
      log: pino({ level: 'silent' }),
      messages: { view: messageView, detail: messageDetail, appProperties: storedAppProperties, filterFields, compose: composeMessage, reparse: reparseStored },
    });
    const { port } = await http.listen();
    const before = await fetch(`http://127.0.0.1:${port}/health`);
    expect(before.status).toBe(503);
    expect(await before.json()).toMatchObject({ status: 'unavailable', missing: ['orders', 'jobs'] });

    await store.open();
    await broker.start();
    const after = await fetch(`http://127.0.0.1:${port}/health`);
    expect(after.status).toBe(200);
    expect(after.headers.get('content-type')).toMatch(/application\/json/);
    expect(await after.json()).toEqual({ status: 'ok', entities: 2 });

    const closing = http.close();
    expect(http.health().status).toBe(503);
    await closing;
    await broker.stop();
    await store.close();
  });
});

describe('GET /metrics', () => {
  let b: HttpBroker;
  let client: ServiceBusClient;
  beforeAll(async () => {
    b = await startHttpBroker([{ Name: 'orders', Properties: { LockDuration: 'PT30S' } }, { Name: 'jobs' }]);
    client = new ServiceBusClient(
      `Endpoint=sb://127.0.0.1:${b.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
      { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } },
    );
  });
  afterAll(async () => {
    await client.close();
    await b.close();
  });

  it('shows the dead-letter depth, counters and latency histograms after a dead-letter through the SDK', async () => {
    const before = await (await fetch(b.base + '/metrics')).text();
    expect(sample(before, 'peeklock_dead_letter_messages{entity="orders"}')).toBe(0);

    await client.createSender('orders').sendMessages([{ body: { n: 1 } }, { body: { n: 2 } }, { body: { n: 3 } }]);
    const receiver = client.createReceiver('orders', { maxAutoLockRenewalDurationInMs: 0 });
    const got = [];
    for (let i = 0; i < 10 && got.length < 3; i++)
      got.push(...(await receiver.receiveMessages(3 - got.length, { maxWaitTimeInMs: 1000 })));
    expect(got).toHaveLength(3);
    await receiver.deadLetterMessage(got[0]!, {
      deadLetterReason: 'PoisonPayload',
      deadLetterErrorDescription: 'cannot parse',
    });
    await receiver.deadLetterMessage(got[1]!, {
      deadLetterReason: 'PoisonPayload',
      deadLetterErrorDescription: 'cannot parse',
    });
    await receiver.abandonMessage(got[2]!);
    await receiver.close();

    const res = await fetch(b.base + '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const expected: Record<string, number> = {
      'peeklock_dead_letter_messages{entity="orders"}': 2,
      'peeklock_dead_letter_messages{entity="jobs"}': 0,
      'peeklock_dead_lettered_total{entity="orders",reason="PoisonPayload"}': 2,
      'peeklock_messages{entity="orders",state="active"}': 1,
      'peeklock_messages_sent_total{entity="orders"}': 3,
      'peeklock_deliveries_total{entity="orders"}': 3,
      'peeklock_settlements_total{outcome="deadLetter"}': 2,
      'peeklock_settlements_total{outcome="abandon"}': 1,
      'peeklock_send_duration_seconds_count{entity="orders"}': 1,
      'peeklock_settle_duration_seconds_count{outcome="deadLetter"}': 2,
      'peeklock_dead_letter_alert{entity="orders"}': 1,
      'peeklock_dead_letter_threshold{entity="orders"}': 1,
    };
    for (const [series, value] of Object.entries(expected)) expect(sample(text, series), series).toBe(value);
    expect(sample(text, 'peeklock_message_bytes{entity="orders",subqueue="deadletter"}')).toBeGreaterThan(0);

    // The abandoned message comes back: a redelivery.
    const again = client.createReceiver('orders', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await again.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m).toBeDefined();
    const locked = await (await fetch(b.base + '/metrics')).text();
    expect(sample(locked, 'peeklock_redeliveries_total{entity="orders"}')).toBe(1);
    expect(sample(locked, 'peeklock_locks_held{entity="orders"}')).toBe(1);
    await again.completeMessage(m!);
    await again.close();
  });

  it('answers unknown paths and methods with a JSON error', async () => {
    const nf = await fetch(b.base + '/nope');
    expect(nf.status).toBe(404);
    expect(await nf.json()).toMatchObject({ error: { code: 'NotFound' } });
    const post = await fetch(b.base + '/metrics', { method: 'POST' });
    expect(post.status).toBe(405);
  });
});
