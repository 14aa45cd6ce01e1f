// Issue 37, item 4, with the real @azure/service-bus SDK: `subscribe()` with its defaults (credit 1, auto-complete)
// completes message k and then grants credit again; the broker locks k+1 for it in the complete's write and sends it
// when the credit comes. Competing subscribers must each get messages, none twice, none redelivered.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusReceiver } from '@azure/service-bus';
import { sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const QUEUE = 'work';
const N = 200;

let broker: TestBroker;
const clients: ServiceBusClient[] = [];

beforeEach(async () => {
  broker = await startTestBroker([{ Name: QUEUE, Properties: { LockDuration: 'PT30S', MaxDeliveryCount: 10 } }]);
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await broker.dispose();
});

async function sendAll(n: number): Promise<string[]> {
  const c = sdkClient(broker);
  clients.push(c);
  const ids = Array.from({ length: n }, (_, i) => `m${i}`);
  const sender = c.createSender(QUEUE);
  for (let i = 0; i < n; i += 100) await sender.sendMessages(ids.slice(i, i + 100).map((messageId) => ({ body: messageId, messageId })));
  await sender.close();
  return ids;
}

/** A default `subscribe()` on its own connection, recording what it is given. */
function subscriber(seen: ServiceBusReceivedMessage[], errors: unknown[]): ServiceBusReceiver {
  const c = sdkClient(broker);
  clients.push(c);
  const receiver = c.createReceiver(QUEUE, { maxAutoLockRenewalDurationInMs: 0 });
  receiver.subscribe({
    processMessage: async (m) => void seen.push(m),
    processError: async (args) => void errors.push(args.error),
  });
  return receiver;
}

/** Waits (bounded) until `done` holds. */
async function until(done: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

describe('lock ahead with the SDK subscribe()', () => {
  it('one subscriber takes every message once, in order, with about one commit per message', async () => {
    const ids = await sendAll(N);
    let commits = 0;
    broker.broker.events.on('committed', () => void commits++);
    const seen: ServiceBusReceivedMessage[] = [];
    const errors: unknown[] = [];
    const r = subscriber(seen, errors);
    // The last complete is answered after the message reaches the handler: wait until the queue is empty.
    await until(() => seen.length >= N && broker.broker.counters.completed >= N);
    await r.close();
    expect(errors).toEqual([]);
    expect(seen.map((m) => m.messageId)).toEqual(ids);
    expect(seen.every((m) => m.deliveryCount === 0)).toBe(true);
    // Without lock ahead each message costs two commits in a row (its lock, then its complete).
    const { lockedAhead, lockAheadReturned } = broker.broker.counters;
    console.log(`subscribe() credit 1: ${(commits / N).toFixed(2)} commits per message; locked ahead ${lockedAhead}, given back ${lockAheadReturned}`);
    expect(commits / N).toBeLessThan(1.5);
  });

  it('two competing subscribers both get messages; none is delivered twice or redelivered', async () => {
    const ids = await sendAll(N);
    const a: ServiceBusReceivedMessage[] = [];
    const b: ServiceBusReceivedMessage[] = [];
    const errors: unknown[] = [];
    const ra = subscriber(a, errors);
    const rb = subscriber(b, errors);
    await until(() => a.length + b.length >= N && broker.broker.counters.completed >= N);
    await ra.close();
    await rb.close();
    expect(errors).toEqual([]);
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    const got = [...a, ...b].map((m) => m.messageId as string);
    expect(new Set(got).size).toBe(got.length);
    expect(got.sort()).toEqual([...ids].sort());
    expect([...a, ...b].every((m) => m.deliveryCount === 0)).toBe(true);
    // Nothing left locked or available once both have gone.
    const peek = clients[0]!.createReceiver(QUEUE);
    expect(await peek.peekMessages(10)).toHaveLength(0);
  });

});
