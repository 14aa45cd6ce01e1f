// AccessedAt and AutoDeleteOnIdle on the fake clock: what counts as activity, when an idle entity is deleted (the
// same delete as the management plane's), and what a restart keeps.

import { describe, expect, it } from 'vitest';
import { ACTIVITY_SWEEP_MS } from '../../src/broker/catalog/activity.js';
import type { Consumer } from '../../src/broker/types.js';
import { codeOf, FakeConsumer, flush, Harness, msg } from './helpers.js';

const MIN = 60_000;

class EndingConsumer extends FakeConsumer implements Consumer {
  ended: Error | null = null;
  entityDeleted(err: Error): void {
    this.ended = err;
    this.open = false;
  }
}

async function advance(h: Harness, ms: number): Promise<void> {
  // In sweep-sized steps, so each sweep's delete lands before the next one runs.
  for (let left = ms; left > 0; left -= ACTIVITY_SWEEP_MS) {
    h.clock.advance(Math.min(ACTIVITY_SWEEP_MS, left));
    await flush(12);
  }
}

describe('AccessedAt', () => {
  it('is null until the entity is used, then the broker-clock time of the last send, receive or settlement', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('work', {});
    expect(h.broker.getQueue('work')!.accessedAt).toBeNull();
    const t0 = h.clock.now();
    await h.send('work', 'a');
    expect(h.broker.getQueue('work')!.accessedAt).toBe(t0);
    await advance(h, MIN);
    const { consumer } = h.attach('work', 1);
    await flush();
    expect(h.broker.getQueue('work')!.accessedAt).toBe(t0 + MIN);
    await advance(h, 20_000);
    await h.broker.settle(consumer.token(), { kind: 'complete' });
    expect(h.broker.getQueue('work')!.accessedAt).toBe(t0 + MIN + 20_000);
  });

  it("counts a subscription's receive for its topic too, and survives a restart once a sweep has written it", async () => {
    const h = await Harness.start();
    await h.broker.createTopic('t', {});
    await h.broker.createSubscription('t', 's', {});
    await h.send('t', 'a');
    const sent = h.clock.now();
    await advance(h, MIN);
    h.attach('t/Subscriptions/s', 1);
    await flush();
    expect(h.broker.getSubscription('t', 's')!.accessedAt).toBe(sent + MIN);
    expect(h.broker.getTopic('t')!.accessedAt).toBe(sent + MIN);
    await advance(h, ACTIVITY_SWEEP_MS);
    await h.restart();
    expect(h.broker.getTopic('t')!.accessedAt).toBe(sent + MIN);
    expect(h.broker.getSubscription('t', 's')!.accessedAt).toBe(sent + MIN);
  });

  it('leaves UpdatedAt at the creation time until an update, then the time of the update', async () => {
    const h = await Harness.start();
    const created = await h.broker.createQueue('u', {});
    await advance(h, 3 * MIN);
    const updated = await h.broker.updateQueue('u', { userMetadata: 'x' });
    expect(updated.createdAt).toBe(created.createdAt);
    expect(updated.updatedAt).toBe(created.createdAt + 3 * MIN);
  });
});

describe('AutoDeleteOnIdle', () => {
  it('refuses less than five minutes, as Service Bus does', async () => {
    const h = await Harness.start();
    expect(await codeOf(h.broker.createQueue('short', { autoDeleteOnIdleMs: 4 * MIN }))).toBe('ArgumentOutOfRange');
  });

  it('deletes a queue idle for its interval with its messages, durably; a send restarts the count', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('temp', { autoDeleteOnIdleMs: 5 * MIN });
    await h.broker.createQueue('kept', {});
    await advance(h, 4 * MIN);
    await h.send('temp', 'a');
    await advance(h, 4 * MIN);
    expect(h.broker.getQueue('temp')).toBeDefined();
    const qid = h.qid('temp');
    await advance(h, MIN + ACTIVITY_SWEEP_MS);
    expect(h.broker.getQueue('temp')).toBeUndefined();
    expect(h.store.load(qid).rows).toHaveLength(0);
    expect(h.broker.getQueue('kept')).toBeDefined();
    await h.restart();
    expect(h.broker.getQueue('temp')).toBeUndefined();
  });

  it('keeps a queue with a receiver attached or a scheduled message pending; deletes it once neither holds', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('listened', { autoDeleteOnIdleMs: 5 * MIN });
    await h.broker.createQueue('scheduled', { autoDeleteOnIdleMs: 5 * MIN });
    const consumer = new EndingConsumer(0);
    const handle = h.broker.attach('listened', consumer);
    await h.broker.send('scheduled', [msg('later', { scheduledAt: h.clock.now() + 20 * MIN })]);
    await advance(h, 10 * MIN);
    expect(h.broker.getQueue('listened')).toBeDefined();
    expect(h.broker.getQueue('scheduled')).toBeDefined();
    handle.detach();
    await advance(h, 6 * MIN);
    expect(h.broker.getQueue('listened')).toBeUndefined();
    // Once the scheduled message is due nothing holds the queue, and it has been idle since the send.
    await advance(h, 10 * MIN);
    expect(h.broker.getQueue('scheduled')).toBeUndefined();
  });

  it('refuses sends to a queue deleted for idleness with not-found', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('gone', { autoDeleteOnIdleMs: 5 * MIN });
    await advance(h, 5 * MIN + ACTIVITY_SWEEP_MS);
    expect(await codeOf(h.broker.send('gone', [msg('late')]))).toBe('EntityNotFound');
  });

  it('deletes an idle topic with its subscriptions; receives on a subscription keep the topic', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('t', { autoDeleteOnIdleMs: 5 * MIN });
    await h.broker.createSubscription('t', 's', {});
    await h.broker.createSubscription('t', 'idle-sub', { autoDeleteOnIdleMs: 5 * MIN });
    await advance(h, 4 * MIN);
    h.broker.peek('t/Subscriptions/s', 1, 1);
    await advance(h, 4 * MIN);
    expect(h.broker.getTopic('t')).toBeDefined();
    expect(h.broker.getSubscription('t', 'idle-sub')).toBeUndefined();
    await advance(h, 2 * MIN);
    expect(h.broker.getTopic('t')).toBeUndefined();
    expect(() => h.broker.listSubscriptions('t', 0, 10)).toThrow();
  });

  it('counts idleness from the broker start at the earliest, so a restart never deletes early', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('temp', { autoDeleteOnIdleMs: 5 * MIN });
    await advance(h, 4 * MIN);
    await h.restart();
    await advance(h, 2 * MIN);
    expect(h.broker.getQueue('temp')).toBeDefined();
    await advance(h, 3 * MIN + ACTIVITY_SWEEP_MS);
    expect(h.broker.getQueue('temp')).toBeUndefined();
  });
});
