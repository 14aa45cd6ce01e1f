// Issue 39 through the JS SDK and a 5 s lock, on the manual clock (no test sleeps): every delivery attempt is
// visible in startBroker().messageHistory, GET /api/message and /metrics, and a lapsed holder that settles while
// another holds the message is named late and overlapping, while it still gets MessageLockLost as today.

import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type EmbeddedBroker } from '../../src/index.js';
import { authHeader } from '../helpers/http.js';
import { codeOf } from '../helpers/sdk.js';

let broker: EmbeddedBroker;
let client: ServiceBusClient;

beforeAll(async () => {
  broker = await startBroker({
    clock: 'manual',
    config: {
      UserConfig: {
        Namespaces: [
          {
            Name: 'ns',
            Queues: [
              { Name: 'jobs', Properties: { LockDuration: 'PT5S' } },
              { Name: 'poison', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 3 } },
            ],
          },
        ],
      },
    },
  });
  client = new ServiceBusClient(broker.connectionString);
});
afterAll(async () => {
  await client?.close();
  await broker?.stop();
});

async function overlapCounter(entity: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${broker.httpPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`peeklock_overlapping_deliveries_total{entity="${entity}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function apiMessage(entity: string, seq: number, view = 'active'): Promise<Record<string, unknown>> {
  const url = `http://127.0.0.1:${broker.httpPort}/api/message?entity=${entity}&seq=${seq}&view=${view}`;
  const res = await fetch(url, { headers: { authorization: authHeader() } });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe('delivery history through the JS SDK', () => {
  it('A lapses, B receives: two attempts while B holds it; A\'s complete fails, is marked late and overlapping, and counted', async () => {
    const before = await overlapCounter('jobs');
    await client.createSender('jobs').sendMessages({ body: 'job', messageId: 'job-1' });
    const a = client.createReceiver('jobs', { maxAutoLockRenewalDurationInMs: 0, identifier: 'receiver-A' });
    const [m1] = await a.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    const seq = m1!.sequenceNumber!.toNumber();
    await broker.advance(5_001);
    const b = client.createReceiver('jobs', { maxAutoLockRenewalDurationInMs: 0, identifier: 'receiver-B' });
    const [m2] = await b.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    expect(m2?.messageId).toBe('job-1');

    const stale = await a.completeMessage(m1!).then(() => 'completed', (e: unknown) => codeOf(e));
    expect(stale).toBe('MessageLockLost');
    await broker.advance(0);

    const h = broker.messageHistory('jobs', m2!.sequenceNumber!)!;
    expect(h.lockedNow).toBe(true);
    expect(h.deliveries).toHaveLength(2);
    expect(h.deliveries[0]).toMatchObject({ n: 1, holder: { receiver: 'receiver-A' }, end: { how: 'lockExpired' }, late: [{ action: 'complete' }] });
    expect(h.deliveries[0]!.holder!.container).toEqual(expect.any(String));
    expect(h.deliveries[1]).toMatchObject({ n: 2, holder: { receiver: 'receiver-B' } });
    expect(h.deliveries[1]!.end).toBeUndefined();
    expect(h.overlaps).toMatchObject([{ attempts: [1, 2], late: { action: 'complete' } }]);
    expect(await overlapCounter('jobs')).toBe(before + 1);

    const body = await apiMessage('jobs', seq);
    expect(body.deliveries).toEqual(JSON.parse(JSON.stringify(h.deliveries)));
    expect(body.overlaps).toEqual(JSON.parse(JSON.stringify(h.overlaps)));

    await b.completeMessage(m2!);
    expect(broker.messageHistory('jobs', seq)).toBeNull();
    await a.close();
    await b.close();
  });

  it('MaxDeliveryCount 3 with abandon, expiry, abandon: the dead-letter copy shows all three and the reason, over HTTP too', async () => {
    await client.createSender('poison').sendMessages({ body: 'p', messageId: 'p-1' });
    const r = client.createReceiver('poison', { maxAutoLockRenewalDurationInMs: 0 });
    const [m1] = await r.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    await r.abandonMessage(m1!, { tried: 1 });
    await r.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    await broker.advance(5_001);
    const [m3] = await r.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    await r.abandonMessage(m3!);
    const seq = m1!.sequenceNumber!.toNumber();
    const h = broker.messageHistory('poison/$DeadLetterQueue', seq)!;
    expect(h.deliveries.map((d) => d.end?.how)).toEqual(['abandoned', 'lockExpired', 'abandoned']);
    // The properties the abandon modified, as the client sent them: plain values, not the store's typed form.
    expect(h.deliveries[0]!.end!.props).toEqual({ tried: 1 });
    expect(h.events).toMatchObject([{ kind: 'deadLettered', detail: 'MaxDeliveryCountExceeded' }]);
    const body = await apiMessage('poison', seq, 'deadletter');
    expect((body.deliveries as unknown[]).length).toBe(3);
    expect(body.pattern).toBe('poison');
    await r.close();
  });
});
