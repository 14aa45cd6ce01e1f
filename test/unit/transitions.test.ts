// The transitions on their own, over a MemoryStore and the fake clock: what happens to a message whose lock
// ended (back to available, dead-lettered at MaxDeliveryCount, still deferred, expired), and a scheduled
// message falling due. The pump is a spy: these tests see which entities a transition wakes.

import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { createContext } from '../../src/broker/runtime/context.js';
import type { QueueState } from '../../src/broker/indexes/queue-state.js';
import { Router } from '../../src/broker/messaging/routing.js';
import { Transitions } from '../../src/broker/messaging/transitions.js';
import type { MessageRow } from '../../src/broker/types.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { MAX_DELIVERY, flush, makeConfig, silentLog } from './helpers.js';

async function rig() {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const ctx = createContext({ config: makeConfig(), store, clock, log: silentLog });
  await ctx.entities.create();
  const pump = vi.fn<(q: QueueState) => void>();
  const t = new Transitions(ctx, new Router(ctx.entities), pump);
  ctx.scheduler.on('scheduled', (d) => t.onScheduledDeadline(d));
  ctx.scheduler.on('ttl', (d) => t.onTtlDeadline(d));
  return { ctx, clock, store, pump, t, q: ctx.entities.resolve('q') };
}

/** A message stored in `q` under `seq` and locked `deliveries` times so far. */
async function lockedRow(store: MemoryStore, q: QueueState, seq: number, now: number, deliveries: number, over: Partial<MessageRow> = {}) {
  const row: MessageRow = {
    seq,
    state: 'locked',
    deliveryCount: deliveries,
    enqueuedAt: now,
    expiresAt: null,
    messageId: `m${seq}`,
    size: 1,
    lock: { token: `t${seq}`, until: now + 1 },
    ...over,
  };
  await store.write([{ op: 'put', qid: q.id, row: { ...row }, body: new Uint8Array([seq]) }]);
  q.addRow(row);
  return row;
}

describe('Transitions', () => {
  it('a lock that ends below MaxDeliveryCount makes the message available again under its own sequence number', async () => {
    const { t, q, store, clock, pump } = await rig();
    const row = await lockedRow(store, q, 5, clock.now(), 1);
    await t.lockEnded(q, row);
    expect(q.takeReady()?.seq).toBe(5);
    expect(row.lock).toBeUndefined();
    expect(store.load(q.id).rows).toMatchObject([{ seq: 5, state: 'active', deliveryCount: 1 }]);
    expect(pump).toHaveBeenCalledWith(q);
  });

  it('a lock that ends at MaxDeliveryCount moves the message to the dead-letter queue in one write', async () => {
    const { t, q, store, clock, ctx } = await rig();
    const row = await lockedRow(store, q, 5, clock.now(), MAX_DELIVERY);
    const write = vi.spyOn(store, 'write');
    await t.lockEnded(q, row);
    const dlq = q.dlq!;
    expect(write).toHaveBeenCalledTimes(1);
    expect(store.load(q.id).rows).toEqual([]);
    expect(store.load(dlq.id).rows).toMatchObject([
      { seq: 5, state: 'active', deliveryCount: MAX_DELIVERY, props: { DeadLetterReason: 'MaxDeliveryCountExceeded' } },
    ]);
    expect(store.readBody(dlq.id, 5)).toEqual(new Uint8Array([5]));
    expect(q.rows.has(5)).toBe(false);
    expect(dlq.takeReady()?.seq).toBe(5);
    expect(ctx.counters.deadLettered).toBe(1);
  });

  it('a deferred message whose lock ends stays deferred', async () => {
    const { t, q, store, clock, pump } = await rig();
    const row = await lockedRow(store, q, 5, clock.now(), 1, { deferred: true });
    await t.lockEnded(q, row);
    expect(row.state).toBe('deferred');
    expect(q.takeReady()).toBeUndefined();
    expect(store.load(q.id).rows).toMatchObject([{ seq: 5, state: 'deferred' }]);
    expect(pump).not.toHaveBeenCalled();
  });

  it('a message past its TTL whose lock ends expires into the dead-letter queue of an entity that asks for it', async () => {
    const { t, ctx, store, clock } = await rig();
    const ttlq = ctx.entities.resolve('ttlq');
    const row = await lockedRow(store, ttlq, 1, clock.now(), 1, { expiresAt: clock.now() + 10 });
    clock.advance(10);
    await t.lockEnded(ttlq, row);
    expect(store.load(ttlq.id).rows).toEqual([]);
    expect(store.load(ttlq.dlq!.id).rows).toMatchObject([{ seq: 1, props: { DeadLetterReason: 'TTLExpiredException' } }]);
  });

  it('a scheduled message is enqueued hidden and becomes available at its time', async () => {
    const { t, q, clock, pump } = await rig();
    const at = clock.now() + 5_000;
    const row: MessageRow = { seq: 1, state: 'scheduled', deliveryCount: 0, enqueuedAt: at, expiresAt: null, messageId: 'm', size: 1, scheduledAt: at };
    t.enqueue(q, row);
    expect(q.takeReady()).toBeUndefined();
    clock.advance(4_999);
    expect(row.state).toBe('scheduled');
    clock.advance(1);
    await flush(); // it becomes available once that is durable
    expect(row.state).toBe('active');
    expect(row.scheduledAt).toBe(at); // still reported as scheduled once visible
    expect(pump).toHaveBeenCalledWith(q);
    expect(q.takeReady()?.seq).toBe(1);
  });
});
