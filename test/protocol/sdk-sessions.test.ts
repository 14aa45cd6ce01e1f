// Message sessions through the real SDK: acceptSession / acceptNextSession, per-session FIFO across abandon,
// SessionCannotBeLocked, ServiceTimeout, session state (also across a restart), session lock renewal and
// expiry with SessionLockLost.

import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import type { ServiceBusClient } from '@azure/service-bus';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { codeOf, sdkClient } from '../helpers/sdk.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker | undefined;
let client: ServiceBusClient | undefined;
const QUEUES = [{ Name: 'sq', Properties: { RequiresSession: true, LockDuration: 'PT30S', MaxDeliveryCount: 5 } }];

afterEach(async () => {
  await client?.close();
  await broker?.dispose();
  broker = undefined;
  client = undefined;
});


async function start(clock?: FakeClock, dataDir?: string): Promise<ServiceBusClient> {
  broker = await startTestBroker(QUEUES, { clock, store: dataDir ? undefined : new MemoryStore(), dataDir });
  client = sdkClient(broker);
  return client;
}

describe('message sessions with the real SDK', () => {
  it('two session receivers get different sessions, each in order across abandon', async () => {
    const c = await start(new FakeClock(Date.now()));
    await c.createSender('sq').sendMessages([
      { body: 'a1', sessionId: 'A' },
      { body: 'b1', sessionId: 'B' },
      { body: 'a2', sessionId: 'A' },
      { body: 'b2', sessionId: 'B' },
    ]);
    const r1 = await c.acceptNextSession('sq', { maxAutoLockRenewalDurationInMs: 0 });
    const r2 = await c.acceptNextSession('sq', { maxAutoLockRenewalDurationInMs: 0 });
    expect([r1.sessionId, r2.sessionId].sort()).toEqual(['A', 'B']);
    expect(r1.sessionLockedUntilUtc!.getTime()).toBeGreaterThan(Date.now() - 1000);
    const first = await r1.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(first.map((m) => m.body)).toEqual([r1.sessionId === 'A' ? 'a1' : 'b1']);
    await r1.abandonMessage(first[0]!);
    const again = await r1.receiveMessages(2, { maxWaitTimeInMs: 1000 });
    const own = r1.sessionId === 'A' ? ['a1', 'a2'] : ['b1', 'b2'];
    expect(again.map((m) => m.body)).toEqual(own);
    expect(again[0]!.deliveryCount).toBe(1);
    for (const m of again) await r1.completeMessage(m);
    const other = await r2.receiveMessages(2, { maxWaitTimeInMs: 1000 });
    expect(other.every((m) => m.sessionId === r2.sessionId)).toBe(true);
  });

  it('acceptSession on a locked session fails with SessionCannotBeLocked', async () => {
    const c = await start(new FakeClock(Date.now()));
    await c.createSender('sq').sendMessages({ body: 'x', sessionId: 'S' });
    await c.acceptSession('sq', 'S', { maxAutoLockRenewalDurationInMs: 0 });
    const err = await c.acceptSession('sq', 'S').then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('SessionCannotBeLocked');
  });

  it('acceptNextSession with no sessions fails with ServiceTimeout after the timeout', async () => {
    await start();
    const c = sdkClient(broker!, 2_000);
    const t0 = Date.now();
    const err = await c.acceptNextSession('sq', { maxAutoLockRenewalDurationInMs: 0 }).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('ServiceTimeout');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000);
    await c.close();
  }, 30_000);

  it('a plain receiver on a session queue and a send without a session id are refused', async () => {
    const c = await start();
    const serr = await c.createSender('sq').sendMessages({ body: 'no session' }).then(() => null, (e: unknown) => e);
    expect(serr).not.toBeNull();
    const rerr = await c.createReceiver('sq').receiveMessages(1, { maxWaitTimeInMs: 500 }).then(() => null, (e: unknown) => e);
    expect(rerr).not.toBeNull();
  });

  it('session state round-trips and survives a restart', async () => {
    const dir = fs.mkdtempSync('/tmp/peeklock-sess-');
    try {
      const clock = new FakeClock(Date.now());
      let c = await start(clock, dir);
      await c.createSender('sq').sendMessages({ body: 'x', sessionId: 'S' });
      const r = await c.acceptSession('sq', 'S', { maxAutoLockRenewalDurationInMs: 0 });
      expect(await r.getSessionState()).toBeNull();
      await r.setSessionState({ step: 2 });
      expect(await r.getSessionState()).toEqual({ step: 2 });
      await r.close();
      await c.close();
      await broker!.close();
      broker = await startTestBroker(QUEUES, { clock, dataDir: dir });
      c = client = sdkClient(broker);
      const again = await c.acceptSession('sq', 'S', { maxAutoLockRenewalDurationInMs: 0 });
      expect(await again.getSessionState()).toEqual({ step: 2 });
      const [m] = await again.receiveMessages(1, { maxWaitTimeInMs: 1000 });
      expect(m!.body).toBe('x');
    } finally {
      await client?.close();
      await broker?.close();
      client = undefined;
      broker = undefined;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an expired session lock hands the session to another receiver; the first one’s settle fails with SessionLockLost', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start(clock);
    await c.createSender('sq').sendMessages({ body: 'x', sessionId: 'S' });
    const first = await c.acceptSession('sq', 'S', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await first.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    clock.advance(30_001);
    const second = await c.acceptSession('sq', 'S', { maxAutoLockRenewalDurationInMs: 0 });
    const [again] = await second.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    expect(again!.body).toBe('x');
    expect(again!.deliveryCount).toBe(1);
    const err = await first.completeMessage(m!).then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('SessionLockLost');
    await second.completeMessage(again!);
  });

  it('renewSessionLock extends the session lock', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start(clock);
    await c.createSender('sq').sendMessages({ body: 'x', sessionId: 'S' });
    const r = await c.acceptSession('sq', 'S', { maxAutoLockRenewalDurationInMs: 0 });
    clock.advance(20_000);
    const until = await r.renewSessionLock();
    expect(until.getTime()).toBe(clock.now() + 30_000);
    clock.advance(20_000);
    const err = await c.acceptSession('sq', 'S').then(() => null, (e: unknown) => e);
    expect(codeOf(err)).toBe('SessionCannotBeLocked');
  });

  it('the SDK’s automatic session lock renewal keeps a slow session alive (real time, PT5S)', async () => {
    broker = await startTestBroker([{ Name: 'slow', Properties: { RequiresSession: true, LockDuration: 'PT5S' } }], { store: new MemoryStore() });
    client = sdkClient(broker);
    await client.createSender('slow').sendMessages({ body: 'w', sessionId: 'S' });
    const r = await client.acceptSession('slow', 'S');
    const [m] = await r.receiveMessages(1, { maxWaitTimeInMs: 1000 });
    await new Promise((res) => setTimeout(res, 11_000));
    await r.completeMessage(m!);
    expect(broker.broker.counters.lockExpired).toBe(0);
  }, 30_000);
});
