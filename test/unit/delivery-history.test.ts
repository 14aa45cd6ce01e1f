// Issue 39: every delivery attempt of a message is recorded in the plans that already change it, kept with the
// message (to the dead-letter queue and back), capped, and closed at a restart; overlaps between a lapsed holder
// and the next one are detected and counted. Broker level: a memory store and a fake clock.

import { describe, expect, it } from 'vitest';
import { attachFake, codeOf, FakeConsumer, flush, Harness, LOCK_MS, MAX_DELIVERY, msg, settings, transactionsOf } from './helpers.js';
import { HISTORY_MAX_ATTEMPTS, HISTORY_MAX_BYTES } from '../../src/broker/indexes/history-image.js';

const DLQ = 'q/$DeadLetterQueue';

describe('delivery history', () => {
  it('records an attempt per lock: who took it, its renewals and how it ended; goes with a complete', async () => {
    const h = await Harness.start();
    const [seq] = await h.send('q', 'm1');
    const a = h.attach('q', 2);
    await flush();
    expect(h.broker.messageHistory('q', seq!)).toMatchObject({ lockedNow: true, deliveries: [{ n: 1, via: 'receive' }] });
    h.clock.advance(1_000);
    await h.broker.renewLock(a.consumer.token());
    h.clock.advance(1_000);
    await h.broker.renewLock(a.consumer.token());
    await h.broker.settle(a.consumer.token(), { kind: 'abandon', props: { why: 'busy' } });
    await flush();
    const view = h.broker.messageHistory('q', seq!)!;
    expect(view.deliveries[0]).toMatchObject({ n: 1, renewCount: 2, renewals: [1_000, 2_000].map((d) => view.deliveries[0]!.lockedAt + d), end: { how: 'abandoned', props: { why: 'busy' } } });
    expect(view.deliveries[1]).toMatchObject({ n: 2 });
    expect(view.deliveries[1]!.end).toBeUndefined();
    await h.broker.settle(a.consumer.token(), { kind: 'complete' });
    await flush();
    expect(h.broker.messageHistory('q', seq!)).toBeNull();
    expect(h.store.readHistory(h.ctx.entities.resolve('q').id, seq!)).toBeUndefined();
  });

  it('MaxDeliveryCount 3 with abandon, expiry, abandon: the dead-letter copy shows the three attempts and the reason', async () => {
    const h = await Harness.start();
    const [seq] = await h.send('q', 'poison');
    const a = h.attach('q', 10);
    await flush();
    await h.broker.settle(a.consumer.token(), { kind: 'abandon' });
    await flush();
    h.clock.advance(LOCK_MS);
    await flush();
    await h.broker.settle(a.consumer.token(), { kind: 'abandon' });
    await flush();
    expect(a.consumer.deliveries).toHaveLength(MAX_DELIVERY);
    expect(h.broker.messageHistory('q', seq!)).toBeNull();
    const view = h.broker.messageHistory(DLQ, seq!)!;
    expect(view.deliveries.map((d) => d.end?.how)).toEqual(['abandoned', 'lockExpired', 'abandoned']);
    expect(view.events).toMatchObject([{ kind: 'deadLettered', detail: 'MaxDeliveryCountExceeded' }]);
    expect(view.pattern).toBe('poison');
  });

  it('a lapsed holder still attached when the next one locks is an overlap; its late complete is recorded', async () => {
    const h = await Harness.start();
    const overlaps: string[] = [];
    h.broker.events.on('overlap', (e) => overlaps.push(e.entity));
    const [seq] = await h.send('q', 'm');
    const a = h.attach('q', 1);
    await flush();
    const lapsed = a.consumer.token();
    h.clock.advance(LOCK_MS);
    await flush();
    const b = h.attach('q', 1);
    await flush();
    expect(b.consumer.deliveries).toHaveLength(1);
    await expect(h.broker.settle(lapsed, { kind: 'complete' })).rejects.toMatchObject({ code: 'LockLost' });
    await flush();
    const view = h.broker.messageHistory('q', seq!)!;
    expect(view.deliveries.map((d) => d.end?.how)).toEqual(['lockExpired', undefined]);
    expect(view.deliveries[0]!.late).toMatchObject([{ action: 'complete' }]);
    expect(view.overlaps).toMatchObject([{ attempts: [1, 2], late: { action: 'complete' } }]);
    expect(view.overlaps[0]!.until).toBeGreaterThanOrEqual(view.overlaps[0]!.from);
    expect(overlaps).toEqual(['q']);
    expect(h.broker.overlapCounts()).toEqual({ q: 1 });
  });

  it('a lapsed holder\'s complete inside a transaction rolls the commit back and is recorded late, as an overlap', async () => {
    const h = await Harness.start();
    const [seq] = await h.send('q', 'm');
    const a = h.attach('q', 1);
    await flush();
    const lapsed = a.consumer.token();
    const txns = transactionsOf(h.broker);
    const id = txns.declare({ connection: 'c1', link: 'ctl' });
    txns.stage(id, 'c1', { kind: 'settle', token: lapsed, settlement: { kind: 'complete' } });
    h.clock.advance(LOCK_MS);
    await flush();
    const b = h.attach('q', 1);
    await flush();
    expect(await codeOf(txns.discharge(id, 'c1', false))).toBe('TransactionRolledBack');
    await flush();
    const view = h.broker.messageHistory('q', seq!)!;
    expect(view.deliveries[0]!.late).toMatchObject([{ action: 'complete' }]);
    expect(view.overlaps).toMatchObject([{ attempts: [1, 2], late: { action: 'complete' } }]);
    expect(b.consumer.deliveries).toHaveLength(1);
  });

  it('a holder whose link dropped before its lock lapsed is the poison pattern, not an overlap', async () => {
    const h = await Harness.start();
    const [seq] = await h.send('q', 'm');
    for (let i = 0; i < 2; i++) {
      const a = h.attach('q', 1);
      await flush();
      a.consumer.open = false;
      a.handle.detach();
      h.clock.advance(LOCK_MS);
      await flush();
    }
    const view = h.broker.messageHistory('q', seq!)!;
    expect(view.deliveries.map((d) => [d.end?.how, d.end?.holderGone])).toEqual([['lockExpired', true], ['lockExpired', true]]);
    expect(view.pattern).toBe('poison');
    expect(h.broker.overlapCounts()).toEqual({});
  });

  it('defer, receive-deferred, abandon; schedule then due then receive', async () => {
    const h = await Harness.start();
    const [seq] = await h.send('q', 'd');
    const a = h.attach('q', 1);
    await flush();
    await h.broker.settle(a.consumer.token(), { kind: 'defer' });
    await flush();
    const [m] = await h.broker.receiveDeferred('q', [seq!], 'peekLock');
    await h.broker.settle(m!.row.lock!.token, { kind: 'abandon' });
    await flush();
    expect(h.broker.messageHistory('q', seq!)!.deliveries).toMatchObject([
      { n: 1, via: 'receive', end: { how: 'deferred' } },
      { n: 2, via: 'receiveDeferred', end: { how: 'abandoned' } },
    ]);
    const due = h.clock.now() + 60_000;
    const [s2] = await h.broker.send('q', [msg('later', { scheduledAt: due })]);
    await flush();
    expect(h.broker.messageHistory('q', s2!)!.events).toMatchObject([{ kind: 'scheduled', detail: due }]);
    h.clock.advance(60_000);
    await flush();
    const b = h.attach('q', 1);
    await flush();
    expect(b.consumer.ids()).toEqual(['later']);
    const view = h.broker.messageHistory('q', s2!)!;
    expect(view.events.map((e) => e.kind)).toEqual(['scheduled', 'due']);
    expect(view.deliveries).toHaveLength(1);
  });

  it('redrive moves the history back with the message, with an event', async () => {
    const h = await Harness.start();
    const [seq] = await h.send('q', 'dl');
    const a = h.attach('q', 1);
    await flush();
    await h.broker.settle(a.consumer.token(), { kind: 'deadLetter', reason: 'Bad', description: 'bad input' });
    await flush();
    a.handle.detach();
    const dead = h.broker.messageHistory(DLQ, seq!)!;
    expect(dead.deliveries).toMatchObject([{ end: { how: 'deadLettered', reason: 'Bad', description: 'bad input' } }]);
    await h.broker.redrive(DLQ);
    await flush();
    const [back] = h.broker.browse('q', { count: 1 });
    const view = h.broker.messageHistory('q', back!.row.seq)!;
    expect(view.deliveries).toHaveLength(1);
    expect(view.events.map((e) => e.kind)).toEqual(['deadLettered', 'redriven']);
  });

  it('keeps the first attempt and the last ones, within the byte cap', async () => {
    const h = await Harness.start();
    h.config.queues[0]!.settings.maxDeliveryCount = 100;
    await h.restart();
    const [seq] = await h.send('q', 'busy');
    const a = h.attach('q', 40);
    await flush();
    const big = 'x'.repeat(1_000);
    for (let i = 0; i < 30; i++) {
      await h.broker.settle(a.consumer.token(), { kind: 'abandon', props: { big } });
      await flush();
    }
    const view = h.broker.messageHistory('q', seq!)!;
    expect(view.deliveries.length).toBeLessThanOrEqual(HISTORY_MAX_ATTEMPTS);
    expect(view.deliveries[0]!.n).toBe(1);
    expect(view.deliveries[view.deliveries.length - 1]!.n).toBe(31);
    expect(view.droppedDeliveries).toBe(31 - view.deliveries.length);
    const stored = h.store.readHistory(h.ctx.entities.resolve('q').id, seq!);
    expect(Buffer.byteLength(JSON.stringify(stored))).toBeLessThanOrEqual(HISTORY_MAX_BYTES);
  });

  it('a restart closes every open attempt as broker restarted while locked', async () => {
    const h = await Harness.start();
    const [seq] = await h.send('q', 'r');
    h.attach('q', 1);
    await flush();
    await flush();
    await h.restart();
    await flush();
    const view = h.broker.messageHistory('q', seq!)!;
    expect(view.deliveries).toMatchObject([{ n: 1, end: { how: 'brokerRestarted' } }]);
    expect(view.lockedNow).toBe(false);
    // A second restart while the same lock still runs adds nothing: that attempt is already closed.
    await h.restart();
    await flush();
    expect(h.broker.messageHistory('q', seq!)!.deliveries).toHaveLength(1);
  });

  it('a session lock lost ends its messages\' attempts as sessionLockLost', async () => {
    const h = new Harness();
    h.config.queues.push({ name: 'sq', settings: settings({ requiresSession: true }) });
    await h.boot();
    const [seq] = await h.broker.send('sq', [msg('s1', { sessionId: 'a' })]);
    await flush();
    const consumer = new FakeConsumer(1);
    await h.broker.acceptSession('sq', 'a', 1000, consumer);
    attachFake(h.broker, 'sq', consumer);
    await flush();
    expect(consumer.ids()).toEqual(['s1']);
    h.clock.advance(LOCK_MS);
    await flush();
    expect(h.broker.messageHistory('sq', seq!)!.deliveries).toMatchObject([{ n: 1, via: 'session', end: { how: 'sessionLockLost' } }]);
  });

  it('an entity deleted while a message is locked, then created again, does not show its old lock', async () => {
    const h = await Harness.start();
    await h.broker.createQueue('again', {});
    const [seq] = await h.send('again', 'x');
    const a = h.attach('again', 1);
    await flush();
    expect(a.consumer.ids()).toEqual(['x']);
    await h.broker.deleteQueue('again');
    await flush();
    await h.broker.createQueue('again', {});
    // A scheduled message under the same sequence number: it has a history, and no lock.
    const [seq2] = await h.broker.send('again', [msg('y', { scheduledAt: h.clock.now() + 60_000 })]);
    await flush();
    expect(seq2).toBe(seq);
    expect(h.broker.messageHistory('again', seq2!)).toMatchObject({ lockedNow: false, deliveries: [], events: [{ kind: 'scheduled' }] });
  });
});
