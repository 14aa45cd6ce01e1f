// Queues created, updated and deleted at run time are real entities: service defaults, durable definitions,
// updates that apply to the next lock, deletes that take their messages and end their receivers.

import { describe, expect, it } from 'vitest';
import type { Consumer } from '../../src/broker/types.js';
import { attachFake, codeOf, FakeConsumer, flush, Harness } from './helpers.js';

class EndingConsumer extends FakeConsumer implements Consumer {
  ended: Error | null = null;
  entityDeleted(err: Error): void {
    this.ended = err;
    this.open = false;
  }
}

describe('queues created at run time', () => {
  it('get the real service defaults when created with no options', async () => {
    const h = await Harness.start();
    const v = await h.broker.createQueue('fresh', {});
    expect(v.description.settings).toMatchObject({
      lockDurationMs: 60_000,
      maxDeliveryCount: 10,
      defaultMessageTtlMs: null,
      duplicateDetectionWindowMs: 600_000,
      requiresSession: false,
      maxSizeBytes: 1024 * 1024 * 1024,
    });
    expect(v.description).toMatchObject({ status: 'Active', enableBatchedOperations: true, maxMessageSizeInKilobytes: 256 });
  });

  it('take sends and peek-lock receives like a configured queue, and count them live', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('Orders', { settings: { maxDeliveryCount: 1 } });
    await h.send('orders', 'a', 'b');
    const { consumer } = h.attach('ORDERS', 1);
    await flush();
    expect(consumer.ids()).toEqual(['a']);
    expect(h.broker.getQueue('orders')!.counts).toMatchObject({ active: 2, deadLetter: 0, total: 2 });
    await h.broker.settle(consumer.token(), { kind: 'deadLetter' });
    await flush();
    expect(h.broker.getQueue('orders')!.counts).toMatchObject({ active: 1, deadLetter: 1, total: 2 });
  });

  it('refuse a taken name (a configured queue too) with EntityAlreadyExists, and bad names and ranges', async () => {
    const h = await Harness.start();
    expect(await codeOf(h.broker.createQueue('Q', {}))).toBe('EntityAlreadyExists');
    await h.broker.createQueue('x', {});
    expect(await codeOf(h.broker.createQueue('x', {}))).toBe('EntityAlreadyExists');
    expect(await codeOf(h.broker.createQueue('a'.repeat(261), {}))).toBe('InvalidOperation');
    expect(await codeOf(h.broker.createQueue('bad name', {}))).toBe('InvalidOperation');
    expect(await codeOf(h.broker.createQueue('y', { settings: { lockDurationMs: 600_000 } }))).toBe('ArgumentOutOfRange');
    expect(await codeOf(h.broker.createQueue('z', { settings: { forwardTo: 'nowhere' } }))).toBe('InvalidOperation');
    expect(h.broker.getQueue('y')).toBeUndefined();
  });

  it('survive a restart with their settings, dates and messages', async () => {
    const h = await Harness.start();
    const created = await h.broker.createQueue('kept', { settings: { lockDurationMs: 45_000 }, userMetadata: 'm' });
    await h.send('kept', 'a');
    await h.restart();
    const v = h.broker.getQueue('kept')!;
    expect(v.description.settings.lockDurationMs).toBe(45_000);
    expect(v.description.userMetadata).toBe('m');
    expect(v.createdAt).toBe(created.createdAt);
    expect(v.counts.active).toBe(1);
  });

  it('apply an update to the next lock, and keep it across a restart', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('u', { settings: { lockDurationMs: 30_000 } });
    await h.send('u', 'a', 'b');
    const { consumer } = h.attach('u', 1);
    await flush();
    expect(consumer.last().row.lock!.until - h.clock.now()).toBe(30_000);
    await h.broker.updateQueue('u', { settings: { lockDurationMs: 90_000 } });
    const again = h.attach('u', 1);
    await flush();
    expect(again.consumer.ids()).toEqual(['b']);
    expect(again.consumer.last().row.lock!.until - h.clock.now()).toBe(90_000);
    expect(await codeOf(h.broker.updateQueue('u', { settings: { requiresSession: true } }))).toBe('InvalidOperation');
    expect(await codeOf(h.broker.updateQueue('missing', {}))).toBe('EntityNotFound');
    await h.restart();
    expect(h.broker.getQueue('u')!.description.settings.lockDurationMs).toBe(90_000);
  });

  it('are deleted with their messages in one write, end their receivers with not-found, and stay gone', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('d', {});
    await h.send('d', 'a', 'b');
    const receiver = new EndingConsumer(1);
    attachFake(h.broker, 'd', receiver);
    await flush();
    const dlqReceiver = new EndingConsumer(1);
    attachFake(h.broker, 'd/$DeadLetterQueue', dlqReceiver);
    const qid = h.qid('d');
    await h.broker.deleteQueue('d');
    expect(receiver.ended?.message).toMatch(/could not be found/);
    expect(dlqReceiver.ended).not.toBeNull();
    expect(h.store.load(qid).rows).toEqual([]);
    expect(await codeOf(h.broker.send('d', []))).toBe('EntityNotFound');
    expect(await codeOf(h.broker.settle(receiver.token(), { kind: 'complete' }))).toBe('LockLost');
    expect(await codeOf(h.broker.deleteQueue('d'))).toBe('EntityNotFound');
    await h.restart();
    expect(h.broker.getQueue('d')).toBeUndefined();
    // The name can be used again, and starts empty.
    await h.broker.createQueue('d', {});
    expect(h.broker.getQueue('d')!.counts.total).toBe(0);
  });

  it('list in name order, paged', async () => {
    const h = await Harness.start();
    for (const n of ['c', 'a', 'b']) await h.broker.createQueue(n, {});
    expect(h.broker.listQueues(0, 100).map((v) => v.name)).toEqual(['a', 'b', 'c', 'q', 'ttlq']);
    expect(h.broker.listQueues(1, 2).map((v) => v.name)).toEqual(['b', 'c']);
  });

  it('a configured queue changed at run time keeps the change across restarts until Config.json is edited', async () => {
    const h = await Harness.start();
    await h.broker.updateQueue('q', { settings: { maxDeliveryCount: 7 } });
    await h.restart();
    expect(h.broker.getQueue('q')!.description.settings.maxDeliveryCount).toBe(7);
    h.config.queues[0]!.settings.maxDeliveryCount = 5;
    await h.restart();
    expect(h.broker.getQueue('q')!.description.settings.maxDeliveryCount).toBe(5);
  });

  it('follow their Status: SendDisabled refuses sends, ReceiveDisabled holds deliveries until re-enabled', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('st', {});
    await h.send('st', 'a');
    await h.broker.updateQueue('st', { status: 'SendDisabled' });
    expect(await codeOf(h.broker.send('st', []))).toBe('EntityDisabled');
    const { consumer } = h.attach('st', 1);
    await flush();
    expect(consumer.ids()).toEqual(['a']);
    await h.broker.settle(consumer.token(), { kind: 'abandon' });
    await h.broker.updateQueue('st', { status: 'ReceiveDisabled' });
    await flush();
    expect(consumer.ids()).toEqual(['a']);
    expect(await codeOf(() => h.broker.attach('st', new FakeConsumer(1)))).toBe('EntityDisabled');
    await h.send('st', 'b');
    consumer.credit = 3;
    await h.broker.updateQueue('st', { status: 'Active' });
    await flush();
    expect(consumer.ids()).toEqual(['a', 'a', 'b']);
    await h.broker.updateQueue('st', { status: 'Disabled' });
    expect(await codeOf(h.broker.send('st', []))).toBe('EntityDisabled');
    expect(await codeOf(() => h.broker.attach('st/$DeadLetterQueue', new FakeConsumer(1)))).toBe('EntityDisabled');
    await h.restart();
    expect(await codeOf(h.broker.send('st', []))).toBe('EntityDisabled');
  });
});
