// Topics, subscriptions and rules created at run time are real entities: fan-out through their rules, durable
// definitions and rules, deletes that take everything they hold.

import { describe, expect, it } from 'vitest';
import { filterMessage } from '../../src/filters/index.js';
import type { IncomingMessage } from '../../src/broker/types.js';
import { attachFake, codeOf, FakeConsumer, flush, Harness } from './helpers.js';

/** A topic message with application properties the rules see. */
function m(id: string, props: Record<string, string | number> = {}): IncomingMessage {
  return { body: new TextEncoder().encode(id), messageId: id, view: () => filterMessage({ properties: props }) };
}

class EndingConsumer extends FakeConsumer {
  ended: Error | null = null;
  entityDeleted(err: Error): void {
    this.ended = err;
    this.open = false;
  }
}

describe('topics and subscriptions created at run time', () => {
  it('fan out to a $Default subscription and one with its own default rule, and count per subscription', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('events', {});
    const all = await h.broker.createSubscription('events', 'all', {});
    expect(all.description).toMatchObject({ deadLetteringOnFilterEvaluationExceptions: true, status: 'Active' });
    expect(all.description.settings).toMatchObject({ lockDurationMs: 60_000, maxDeliveryCount: 10 });
    await h.broker.createSubscription('events', 'red', { settings: { maxDeliveryCount: 2 } }, {
      name: 'only-red',
      filter: { type: 'sql', expression: "color = 'red'" },
      action: null,
    });
    expect(h.broker.subscriptionRules('events', 'all').map((r) => r.description.name)).toEqual(['$Default']);
    expect(h.broker.subscriptionRules('events', 'red').map((r) => r.description.name)).toEqual(['only-red']);
    await h.broker.send('events', [m('a', { color: 'red' }), m('b', { color: 'blue' })]);
    await flush();
    expect(h.broker.getSubscription('events', 'all')!.counts.active).toBe(2);
    expect(h.broker.getSubscription('events', 'red')!.counts.active).toBe(1);
    expect(h.broker.getTopic('events')!.subscriptionCount).toBe(2);
    expect(h.broker.listSubscriptions('events', 0, 10).map((s) => s.name)).toEqual(['all', 'red']);
  });

  it('refuse duplicates with EntityAlreadyExists and a missing topic with EntityNotFound', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('t', {});
    expect(await codeOf(h.broker.createTopic('T', {}))).toBe('EntityAlreadyExists');
    expect(await codeOf(h.broker.createTopic('q', {}))).toBe('EntityAlreadyExists');
    await h.broker.createSubscription('t', 's', {});
    expect(await codeOf(h.broker.createSubscription('t', 'S', {}))).toBe('EntityAlreadyExists');
    expect(await codeOf(h.broker.createSubscription('nope', 's', {}))).toBe('EntityNotFound');
    expect(await codeOf(h.broker.createSubscription('t', 'bad/name', {}))).toBe('InvalidOperation');
    expect(await codeOf(h.broker.deleteSubscription('t', 'nope'))).toBe('EntityNotFound');
  });

  it('refuse a queue and a topic created at once under one name: the second gets EntityAlreadyExists', async () => {
    // Queues and topics share a namespace's names; Service Bus answers 409 to a create while another of that name is
    // under way, whatever its kind.
    const h = await Harness.start();
    const [queue, topic] = await Promise.allSettled([h.broker.createQueue('same', {}), h.broker.createTopic('same', {})]);
    expect([queue.status, topic.status]).toEqual(['fulfilled', 'rejected']);
    expect(await codeOf(Promise.reject((topic as PromiseRejectedResult).reason))).toBe('EntityAlreadyExists');
    await h.restart();
    expect(h.broker.getQueue('same')).toBeDefined();
    expect(h.broker.getTopic('same')).toBeUndefined();
  });

  it('survive a restart with their settings, rules and messages', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('t', { userMetadata: 'tm' });
    await h.broker.createSubscription('t', 's', { settings: { lockDurationMs: 20_000 } }, {
      name: 'r',
      filter: { type: 'sql', expression: 'n > 1' },
      action: null,
    });
    await h.broker.send('t', [m('x', { n: 2 })]);
    await flush();
    await h.restart();
    expect(h.broker.getTopic('t')!.description.userMetadata).toBe('tm');
    const s = h.broker.getSubscription('t', 's')!;
    expect(s.description.settings.lockDurationMs).toBe(20_000);
    expect(s.counts.active).toBe(1);
    expect(h.broker.subscriptionRules('t', 's').map((r) => r.description.name)).toEqual(['r']);
  });

  it('apply a rule update to the next send, and keep it across a restart', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('t', {});
    await h.broker.createSubscription('t', 's', {});
    await h.broker.updateRule('t', 's', { name: '$Default', filter: { type: 'false' }, action: null });
    await h.broker.send('t', [m('x')]);
    await flush();
    expect(h.broker.getSubscription('t', 's')!.counts.active).toBe(0);
    expect(await codeOf(h.broker.updateRule('t', 's', { name: 'missing', filter: { type: 'true' }, action: null }))).toBe('EntityNotFound');
    await h.restart();
    expect(h.broker.getRule('t', 's', '$default')!.description.filter).toEqual({ type: 'false' });
  });

  it('delete a subscription with its messages and end its receivers; delete a topic with all its subscriptions', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('t', {});
    await h.broker.createSubscription('t', 'a', {});
    await h.broker.createSubscription('t', 'b', {});
    await h.broker.send('t', [m('x')]);
    await flush();
    const receiver = new EndingConsumer(1);
    attachFake(h.broker, 't/Subscriptions/a', receiver);
    await flush();
    const qidA = h.qid('t/Subscriptions/a');
    const qidB = h.qid('t/Subscriptions/b');
    await h.broker.deleteSubscription('t', 'a');
    expect(receiver.ended?.message).toMatch(/could not be found/);
    expect(h.store.load(qidA).rows).toEqual([]);
    expect(h.broker.getTopic('t')!.subscriptionCount).toBe(1);
    await h.broker.deleteTopic('t');
    expect(h.store.load(qidB).rows).toEqual([]);
    expect(await codeOf(h.broker.send('t', []))).toBe('EntityNotFound');
    await h.restart();
    expect(h.broker.getTopic('t')).toBeUndefined();
    expect(h.broker.getSubscription('t', 'b')).toBeUndefined();
  });

  it('apply a subscription update to the next lock', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('t', {});
    await h.broker.createSubscription('t', 's', { settings: { lockDurationMs: 30_000 } });
    await h.broker.updateSubscription('t', 's', { settings: { lockDurationMs: 70_000 } });
    await h.broker.send('t', [m('x')]);
    await flush();
    const { consumer } = h.attach('t/Subscriptions/s', 1);
    await flush();
    expect(consumer.last().row.lock!.until - h.clock.now()).toBe(70_000);
  });
});
