import { describe, it, expect } from 'vitest';
import { BrokerError, entityNotFound } from '../../src/broker/errors.js';
import { reportedState } from '../../src/broker/types.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { Harness, LOCK_MS, MAX_SIZE, codeOf, flush, msg } from './helpers.js';
import { prng } from '../helpers/prng.js';

const DLQ = 'q/$DeadLetterQueue';

describe('delivery order and credit', () => {
  it('delivers in sequence-number order (FIFO)', async () => {
    const h = await Harness.start();
    const seqs1 = await h.send('q', 'a', 'b', 'c');
    const seqs2 = await h.send('q', 'd');
    const seqs3 = await h.send('q', 'e', 'f');
    expect([...seqs1, ...seqs2, ...seqs3]).toEqual([1, 2, 3, 4, 5, 6]);

    const { consumer } = h.attach('q', 10);
    await flush();
    expect(consumer.ids()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(consumer.deliveries.map((d) => d.row.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const d of consumer.deliveries) {
      expect(d.entityPath).toBe('q');
      expect(d.row.deliveryCount).toBe(1);
      expect(d.row.state).toBe('locked');
      expect(new TextDecoder().decode(d.body)).toBe(d.row.messageId);
    }
  });

  it('honours credit: exactly 2 with credit 2, more after more credit is pushed', async () => {
    const h = await Harness.start();
    const { consumer } = h.attach('q', 2);
    await h.send('q', 'a', 'b', 'c', 'd', 'e');
    await flush();
    expect(consumer.ids()).toEqual(['a', 'b']);
    // Time passing alone (short of lock expiry) does not hand out more.
    await h.advance(1000);
    expect(consumer.deliveries).toHaveLength(2);

    consumer.credit += 2;
    expect(consumer.pending).toBe(2); // reserved, lock not committed yet
    await flush();
    expect(consumer.pending).toBe(0);
    expect(consumer.ids()).toEqual(['a', 'b', 'c', 'd']);

    consumer.credit += 5;
    await flush();
    expect(consumer.ids()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('serves two consumers round-robin (one batch)', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 10).consumer;
    const b = h.attach('q', 10).consumer;
    await h.send('q', 'm1', 'm2', 'm3', 'm4');
    expect(a.ids()).toEqual(['m1', 'm3']);
    expect(b.ids()).toEqual(['m2', 'm4']);
  });

  it('serves two consumers round-robin (messages arriving one at a time)', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 10).consumer;
    const b = h.attach('q', 10).consumer;
    for (const id of ['m1', 'm2', 'm3', 'm4']) await h.send('q', id);
    expect(a.ids()).toEqual(['m1', 'm3']);
    expect(b.ids()).toEqual(['m2', 'm4']);
  });

  it('skips a consumer without credit and never delivers to a closed one', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 0).consumer;
    const b = h.attach('q', 10).consumer;
    const c = h.attach('q', 10).consumer;
    c.open = false;
    await h.send('q', 'm1', 'm2', 'm3');
    expect(a.deliveries).toHaveLength(0);
    expect(c.deliveries).toHaveLength(0);
    expect(b.ids()).toEqual(['m1', 'm2', 'm3']);
  });
});

describe('settlement', () => {
  it('complete deletes the message; it is not redelivered after the lock time passes', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    expect(h.stored('q')).toHaveLength(1);
    await h.broker.settle(a.token(), { kind: 'complete' });
    expect(h.stored('q')).toHaveLength(0);

    const b = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS * 3);
    expect(b.deliveries).toHaveLength(0);
    expect(a.deliveries).toHaveLength(1);
  });

  it('abandon releases at once: redelivered before later messages, deliveryCount 2, props merged', async () => {
    const h = await Harness.start();
    const { consumer: c } = h.attach('q', 1);
    await h.send('q', 'a', 'b', 'c');
    expect(c.ids()).toEqual(['a']);

    await h.broker.settle(c.token(), { kind: 'abandon', props: { reason: 'busy', tries: 1, dropped: null } });
    c.credit += 3;
    await flush();
    expect(c.ids()).toEqual(['a', 'a', 'b', 'c']);
    const again = c.deliveries[1]!;
    expect(again.row.deliveryCount).toBe(2);
    expect(again.row.props).toEqual({ reason: 'busy', tries: 1 });
    expect(again.row.lock!.token).not.toBe(c.token(0));
    expect(c.deliveries[2]!.row.deliveryCount).toBe(1);

    // A second abandon merges into (not replaces) the props.
    c.credit += 1;
    await h.broker.settle(again.row.lock!.token, { kind: 'abandon', props: { tries: 2 } });
    await flush();
    const third = c.last();
    expect(third.row.messageId).toBe('a');
    expect(third.row.deliveryCount).toBe(3);
    expect(third.row.props).toEqual({ reason: 'busy', tries: 2 });
  });

  it('defer sets the message aside: never delivered again', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    await h.broker.settle(a.token(), { kind: 'defer', props: { why: 'later' } });
    const rows = h.stored('q');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.state).toBe('deferred');
    expect(rows[0]!.lock).toBeUndefined();
    expect(rows[0]!.props).toEqual({ why: 'later' });

    const b = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS * 5);
    expect(b.deliveries).toHaveLength(0);
    expect(a.deliveries).toHaveLength(1);
    // The old lock is gone.
    expect(await codeOf(h.broker.settle(a.token(), { kind: 'complete' }))).toBe('LockLost');
  });

  it('dead-letter moves the message to q/$DeadLetterQueue with reason and description', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    await h.broker.settle(a.token(), {
      kind: 'deadLetter',
      reason: 'Poison',
      description: 'could not parse',
      props: { extra: 42 },
    });
    expect(h.stored('q')).toHaveLength(0);
    expect(h.stored(DLQ)).toHaveLength(1);

    const d = h.attach(DLQ, 10).consumer;
    await flush();
    expect(d.ids()).toEqual(['a']);
    expect(d.last().entityPath).toBe(DLQ);
    expect(d.last().row.seq).toBe(1);
    expect(d.last().row.props).toEqual({
      extra: 42,
      DeadLetterReason: 'Poison',
      DeadLetterErrorDescription: 'could not parse',
    });
    expect(new TextDecoder().decode(d.last().body)).toBe('a');

    // Not back on q, ever.
    const b = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS * 2);
    expect(b.deliveries).toHaveLength(0);
  });

  it('dead-letter drops null reason values', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    await h.broker.settle(a.token(), {
      kind: 'deadLetter',
      props: { DeadLetterReason: null, DeadLetterErrorDescription: null, keep: 'v' },
    });
    const d = h.attach(DLQ, 10).consumer;
    await flush();
    expect(d.last().row.props).toEqual({ keep: 'v' });
    expect(d.last().row.props).not.toHaveProperty('DeadLetterReason');
    expect(d.last().row.props).not.toHaveProperty('DeadLetterErrorDescription');
  });

  it('dead-lettering a dead-letter queue message fails without losing the lock', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    await h.broker.settle(a.token(), { kind: 'deadLetter', reason: 'r' });
    const d = h.attach(DLQ, 1).consumer;
    await flush();
    expect(await codeOf(h.broker.settle(d.token(), { kind: 'deadLetter', reason: 'again' }))).toBe(
      'InvalidOperation',
    );
    // The holder still holds the lock and can complete it.
    await h.broker.settle(d.token(), { kind: 'complete' });
    expect(h.stored(DLQ)).toHaveLength(0);
  });

  it('a settled token used twice fails with LockLost the second time', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 3).consumer;
    await h.send('q', 'a', 'b', 'c');
    await h.broker.settle(a.token(0), { kind: 'complete' });
    expect(await codeOf(h.broker.settle(a.token(0), { kind: 'complete' }))).toBe('LockLost');

    await h.broker.settle(a.token(1), { kind: 'abandon' });
    expect(await codeOf(h.broker.settle(a.token(1), { kind: 'complete' }))).toBe('LockLost');
    expect(await codeOf(h.broker.renewLock(a.token(1)))).toBe('LockLost');

    await h.broker.settle(a.token(2), { kind: 'deadLetter' });
    expect(await codeOf(h.broker.settle(a.token(2), { kind: 'abandon' }))).toBe('LockLost');

    expect(await codeOf(h.broker.settle('00000000-0000-0000-0000-000000000000', { kind: 'complete' }))).toBe(
      'LockLost',
    );
  });
});

describe('locks', () => {
  it('renewLock extends locked-until by exactly LockDuration from now; no redelivery at the old expiry', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    const t0 = h.clock.now();
    await h.send('q', 'a');
    const first = a.last().row.lock!;
    expect(first.until).toBe(t0 + LOCK_MS);

    const b = h.attach('q', 10).consumer;
    await h.advance(10_000);
    const until = await h.broker.renewLock(a.token());
    expect(until).toBe(h.clock.now() + LOCK_MS);
    expect(until).toBe(t0 + 10_000 + LOCK_MS);
    expect(h.stored('q')[0]!.lock).toEqual({ token: first.token, until });

    await h.advance(LOCK_MS - 10_000 + 1); // just past the old expiry
    expect(b.deliveries).toHaveLength(0);
    await h.advance(until - h.clock.now() - 1); // 1 ms before the new expiry
    expect(b.deliveries).toHaveLength(0);
    await h.broker.settle(a.token(), { kind: 'complete' });
    expect(h.stored('q')).toHaveLength(0);
    await h.advance(LOCK_MS);
    expect(b.deliveries).toHaveLength(0);
  });

  it('a renewed lock still expires at its new locked-until', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    const b = h.attach('q', 10).consumer;
    await h.advance(5_000);
    const until = await h.broker.renewLock(a.token());
    await h.advance(until - h.clock.now() - 1);
    expect(b.deliveries).toHaveLength(0);
    await h.advance(1);
    expect(b.ids()).toEqual(['a']);
    expect(b.last().row.deliveryCount).toBe(2);
  });

  it('lock expiry: a second consumer gets the message; the stale holder loses complete and renew', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    const b = h.attach('q', 10).consumer;
    expect(b.deliveries).toHaveLength(0);

    await h.advance(LOCK_MS);
    expect(b.ids()).toEqual(['a']);
    expect(b.last().row.deliveryCount).toBe(2);
    expect(b.token()).not.toBe(a.token());

    // Both hold a token for the same message at once; only the current one is honoured.
    expect(await codeOf(h.broker.settle(a.token(), { kind: 'complete' }))).toBe('LockLost');
    expect(await codeOf(h.broker.renewLock(a.token()))).toBe('LockLost');
    expect(await codeOf(h.broker.settle(a.token(), { kind: 'abandon' }))).toBe('LockLost');
    expect(h.stored('q')).toHaveLength(1);
    await h.broker.settle(b.token(), { kind: 'complete' });
    expect(h.stored('q')).toHaveLength(0);
    expect(h.broker.counters.lockExpired).toBe(1);
  });

  it('settle exactly at locked-until fails with LockLost', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    const until = a.last().row.lock!.until;
    h.clock.advance(until - h.clock.now());
    expect(h.clock.now()).toBe(until);
    expect(await codeOf(h.broker.settle(a.token(), { kind: 'complete' }))).toBe('LockLost');
    expect(await codeOf(h.broker.renewLock(a.token()))).toBe('LockLost');
    await flush();
    expect(h.stored('q')).toHaveLength(1);
  });

  it('settle 1 ms before locked-until succeeds', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    const until = a.last().row.lock!.until;
    h.clock.advance(until - 1 - h.clock.now());
    await h.broker.settle(a.token(), { kind: 'complete' });
    expect(h.stored('q')).toHaveLength(0);
    const b = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS);
    expect(b.deliveries).toHaveLength(0);
  });

  it('settle on the wrong entity path is LockLost; the right path (any case) works', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    expect(await codeOf(h.broker.settle(a.token(), { kind: 'complete' }, 'ttlq'))).toBe('LockLost');
    await h.broker.settle(a.token(), { kind: 'complete' }, 'Q');
    expect(h.stored('q')).toHaveLength(0);
  });

  it('MaxDeliveryCount: after 3 lock expiries the message is dead-lettered with MaxDeliveryCountExceeded', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 10).consumer;
    await h.send('q', 'a');
    await h.advance(LOCK_MS);
    await h.advance(LOCK_MS);
    expect(c.deliveries.map((d) => d.row.deliveryCount)).toEqual([1, 2, 3]);
    expect(h.stored(DLQ)).toHaveLength(0);
    await h.advance(LOCK_MS);
    expect(c.deliveries).toHaveLength(3);
    expect(h.stored('q')).toHaveLength(0);
    expect(h.stored(DLQ)).toHaveLength(1);

    await h.advance(LOCK_MS * 5);
    expect(c.deliveries).toHaveLength(3);

    const d = h.attach(DLQ, 10).consumer;
    await flush();
    expect(d.ids()).toEqual(['a']);
    expect(d.last().row.props).toMatchObject({ DeadLetterReason: 'MaxDeliveryCountExceeded' });
    expect(d.last().row.props!.DeadLetterErrorDescription).toEqual(expect.any(String));
    expect(d.last().row.deliveryCount).toBe(4);
  });

  it('MaxDeliveryCount counts abandons too', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 10).consumer;
    await h.send('q', 'a');
    for (let i = 0; i < 3; i++) {
      await h.broker.settle(c.token(), { kind: 'abandon' });
      await flush();
    }
    expect(c.deliveries.map((d) => d.row.deliveryCount)).toEqual([1, 2, 3]);
    expect(h.stored('q')).toHaveLength(0);
    // Every failed delivery counts, so the dead letter carries all three.
    expect(h.stored(DLQ).map((r) => r.deliveryCount)).toEqual([3]);
    expect(h.stored(DLQ).map((r) => r.props?.DeadLetterReason)).toEqual(['MaxDeliveryCountExceeded']);
  });
});

describe('receive-and-delete', () => {
  it('delivers and deletes; nothing comes back', async () => {
    const h = await Harness.start();
    const r = h.attach('q', 10, 'receiveAndDelete').consumer;
    await h.send('q', 'a', 'b', 'c');
    expect(r.ids()).toEqual(['a', 'b', 'c']);
    expect(h.stored('q')).toEqual([]);
    const p = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS * 2);
    expect(p.deliveries).toHaveLength(0);
    expect(r.deliveries).toHaveLength(3);
  });

  it('an abandoned message taken by a receive-and-delete consumer is gone from the store', async () => {
    const h = await Harness.start();
    const p = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    const r = h.attach('q', 10, 'receiveAndDelete').consumer;
    await h.broker.settle(p.token(), { kind: 'abandon' });
    await flush();
    expect(r.ids()).toEqual(['a']);
    expect(h.stored('q')).toEqual([]);
    await h.restart();
    const after = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS * 2);
    expect(after.deliveries).toHaveLength(0);
  });

  it('an expired-lock message taken by a receive-and-delete consumer is gone from the store', async () => {
    const h = await Harness.start();
    h.attach('q', 1); // takes the lock that then expires
    await h.send('q', 'a');
    const r = h.attach('q', 10, 'receiveAndDelete').consumer;
    await h.advance(LOCK_MS);
    expect(r.ids()).toEqual(['a']);
    expect(h.stored('q')).toEqual([]);
  });
});

describe('send', () => {
  it('rejects a body larger than maxMessageSizeBytes with MessageTooLarge and stores nothing', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 10).consumer;
    const big = { body: new Uint8Array(MAX_SIZE + 1), messageId: 'big' };
    expect(await codeOf(h.broker.send('q', [big]))).toBe('MessageTooLarge');
    expect(await codeOf(h.broker.send('q', [msg('ok'), big]))).toBe('MessageTooLarge');
    await flush();
    expect(h.stored('q')).toEqual([]);
    expect(c.deliveries).toHaveLength(0);
    // Exactly the limit is fine.
    await h.broker.send('q', [{ body: new Uint8Array(MAX_SIZE), messageId: 'max' }]);
    await flush();
    expect(c.ids()).toEqual(['max']);
  });

  it('rejects unknown entities with EntityNotFound (send and attach)', async () => {
    const h = await Harness.start();
    expect(await codeOf(h.broker.send('nope', [msg('a')]))).toBe('EntityNotFound');
    expect(await codeOf(() => h.attach('nope', 1))).toBe('EntityNotFound');
  });

  it('rejects sends to a dead-letter queue with InvalidOperation', async () => {
    const h = await Harness.start();
    expect(await codeOf(h.broker.send(DLQ, [msg('a')]))).toBe('InvalidOperation');
    expect(await codeOf(h.broker.send('Q/$deadletterqueue', [msg('a')]))).toBe('InvalidOperation');
    await flush();
    expect(h.stored(DLQ)).toEqual([]);
  });

  it('treats entity names case-insensitively', async () => {
    const h = await Harness.start();
    const c = h.attach('Q', 10).consumer;
    await h.send('Q', 'a');
    await h.send('q', 'b');
    expect(c.ids()).toEqual(['a', 'b']);
    expect(h.ctx.entities.resolve('Q')).toBe(h.ctx.entities.resolve('q'));
    await h.broker.settle(c.token(0), { kind: 'deadLetter', reason: 'x' });
    const d = h.attach('Q/$DEADLETTERQUEUE', 10).consumer;
    await flush();
    expect(d.ids()).toEqual(['a']);
  });

  it('a failing store makes send reject with StoreUnavailable and nothing becomes visible', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 10).consumer;
    await h.send('q', 'first');
    expect(c.ids()).toEqual(['first']);
    h.store.failWrites = new Error('disk');
    const err = await h.broker.send('q', [msg('lost')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BrokerError);
    expect((err as BrokerError).code).toBe('StoreUnavailable');
    await flush();
    h.store.failWrites = null;
    await flush();
    expect(c.ids()).toEqual(['first']);
    expect(h.stored('q').map((r) => r.messageId)).toEqual(['first']);

    const [seq] = await h.send('q', 'later');
    expect(seq).toBeGreaterThan(1);
    expect(c.ids()).toEqual(['first', 'later']);
  });
});

describe('store failures', () => {
  it('a failed complete keeps the message: the holder can retry, or it is redelivered after the lock', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 2).consumer;
    await h.send('q', 'a', 'b');
    h.store.failWrites = new Error('disk');
    expect(await codeOf(h.broker.settle(a.token(0), { kind: 'complete' }))).toBe('StoreUnavailable');
    expect(await codeOf(h.broker.settle(a.token(1), { kind: 'complete' }))).toBe('StoreUnavailable');
    h.store.failWrites = null;
    // Retry of 'a' with the same token works once the store is back.
    await h.broker.settle(a.token(0), { kind: 'complete' });
    expect(h.stored('q').map((r) => r.messageId)).toEqual(['b']);
    // 'b' was never completed: it comes back when its lock ends.
    const b = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS);
    expect(b.ids()).toEqual(['b']);
    expect(b.last().row.deliveryCount).toBe(2);
  });

  it('a receive-and-delete delivery whose delete fails leaves the message available', async () => {
    const h = await Harness.start();
    await h.send('q', 'a');
    h.store.failWrites = new Error('disk');
    const { consumer: r } = h.attach('q', 10, 'receiveAndDelete');
    await flush();
    expect(r.deliveries).toHaveLength(0);
    h.store.failWrites = null;
    r.push(); // the next flow from the link offers again
    await flush();
    expect(r.ids()).toEqual(['a']);
    expect(h.stored('q')).toEqual([]);
  });

  it('a receive-and-delete consumer closing while its put-back write fails does not crash the broker', async () => {
    const h = await Harness.start();
    const r = h.attach('q', 10, 'receiveAndDelete').consumer;
    await h.broker.send('q', [msg('a')]); // the delete for r is issued in this turn
    r.open = false;
    await new Promise<void>((res) => setImmediate(res)); // delete committed; put-back issued
    h.store.failWrites = new Error('disk');
    await flush();
    h.store.failWrites = null;
    expect(r.deliveries).toHaveLength(0);
  });

  it('an expired message found by pump() while the store fails does not crash the broker', async () => {
    const h = await Harness.start();
    await h.broker.send('ttlq', [msg('short', { ttlMs: 1000 })]);
    await h.broker.stop();
    h.clock.advance(5000); // no scheduler runs while stopped
    h.store.failWrites = new Error('disk');
    await h.boot();
    const c = h.attach('ttlq', 10).consumer;
    await flush();
    expect(c.deliveries).toHaveLength(0);
    h.store.failWrites = null;
  });

  it('an expired message found by pump() after a restart is dead-lettered, not delivered', async () => {
    const h = await Harness.start();
    await h.broker.send('ttlq', [msg('short', { ttlMs: 1000 })]);
    await h.broker.stop();
    h.clock.advance(5000);
    await h.boot();
    const c = h.attach('ttlq', 10).consumer;
    const d = h.attach('ttlq/$DeadLetterQueue', 10).consumer;
    await flush();
    expect(c.deliveries).toHaveLength(0);
    expect(d.ids()).toEqual(['short']);
    expect(h.stored('ttlq')).toEqual([]);
  });
});

describe('TTL and scheduled messages', () => {
  it('an expired message is never delivered and is removed', async () => {
    const h = await Harness.start();
    await h.broker.send('q', [msg('short', { ttlMs: 1000 }), msg('long')]);
    await h.advance(1000);
    expect(h.stored('q').map((r) => r.messageId)).toEqual(['long']);
    const c = h.attach('q', 10).consumer;
    await flush();
    expect(c.ids()).toEqual(['long']);
    expect(h.stored(DLQ)).toEqual([]);
  });

  it('with deadLetteringOnMessageExpiration an expired message goes to the DLQ (TTLExpiredException)', async () => {
    const h = await Harness.start();
    await h.broker.send('ttlq', [msg('short', { ttlMs: 1000 })]);
    await h.advance(999);
    expect(h.stored('ttlq')).toHaveLength(1);
    await h.advance(1);
    expect(h.stored('ttlq')).toEqual([]);
    const c = h.attach('ttlq', 10).consumer;
    const d = h.attach('ttlq/$DeadLetterQueue', 10).consumer;
    await flush();
    expect(c.deliveries).toHaveLength(0);
    expect(d.ids()).toEqual(['short']);
    expect(d.last().row.props).toMatchObject({ DeadLetterReason: 'TTLExpiredException' });
  });

  it('a message whose TTL passes while locked is not redelivered when the lock ends', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 1).consumer;
    await h.broker.send('q', [msg('a', { ttlMs: 10_000 })]);
    await flush();
    expect(a.ids()).toEqual(['a']);
    const b = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS);
    expect(b.deliveries).toHaveLength(0);
    expect(h.stored('q')).toEqual([]);
  });

  it('a scheduled message is invisible until due', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 10).consumer;
    const due = h.clock.now() + 5000;
    await h.broker.send('q', [msg('later', { scheduledAt: due }), msg('now')]);
    await flush();
    expect(c.ids()).toEqual(['now']);
    await h.advance(4999);
    expect(c.ids()).toEqual(['now']);
    await h.advance(1);
    expect(c.ids()).toEqual(['now', 'later']);
  });
});

describe('state counts', () => {
  // counts() is kept as rows change state rather than recounted (metrics read it every second), so each step
  // of a message's life is checked against a recount of the rows and of the store.
  it('match a recount through send, lock, defer, abandon, expiry, dead-letter, schedule, complete and restart', async () => {
    const h = await Harness.start();
    const check = (): void => {
      for (const path of ['q', DLQ]) {
        const q = h.ctx.entities.resolve(path);
        const recount = { active: 0, locked: 0, deferred: 0, scheduled: 0 };
        for (const r of q.rows.values()) recount[r.state]++;
        expect(q.counts(), path).toEqual(recount);
        const stored = { active: 0, locked: 0, deferred: 0, scheduled: 0 };
        for (const r of h.stored(path)) stored[r.state]++;
        expect(q.counts(), `${path} (store)`).toEqual(stored);
      }
    };
    await h.broker.send('q', [msg('a'), msg('b'), msg('c'), msg('d'), msg('later', { scheduledAt: h.clock.now() + 500 })]);
    await flush();
    check();
    const { consumer: c, handle } = h.attach('q', 4);
    await flush();
    check();
    const [a, b, cc, d] = c.deliveries.map((x) => x.row.lock!.token);
    await h.broker.settle(a!, { kind: 'defer' });
    check();
    await h.broker.settle(b!, { kind: 'abandon' });
    check();
    await h.broker.settle(cc!, { kind: 'deadLetter', reason: 'r' });
    check();
    await h.broker.settle(d!, { kind: 'complete' });
    check();
    await h.advance(500); // the scheduled message falls due and is delivered (credit left)
    check();
    c.credit = 0;
    await h.advance(LOCK_MS + 1); // the locks lapse
    check();
    expect(h.ctx.entities.resolve('q').counts()).toEqual({ active: 2, locked: 0, deferred: 1, scheduled: 0 });
    handle.detach?.();
    await h.restart();
    check();
  });
});

describe('restart', () => {
  it('keeps messages, delivery counts and locks; the old token is lost', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock();
    const h = await Harness.start(store, clock);
    const a = h.attach('q', 2).consumer;
    await h.send('q', 'a');
    // Second delivery of 'a' (deliveryCount 2), then lock it and restart while it is locked.
    await h.broker.settle(a.token(), { kind: 'abandon', props: { p: 1 } });
    await flush();
    expect(a.last().row.deliveryCount).toBe(2);
    const until = a.last().row.lock!.until;
    await h.send('q', 'b');
    expect(a.deliveries).toHaveLength(2);

    await h.advance(10_000);
    await h.restart();
    const c = h.attach('q', 10).consumer;
    await flush();
    expect(c.ids()).toEqual(['b']);
    expect(c.last().row.deliveryCount).toBe(1);

    // The old token is not honoured after a restart, even before its locked-until.
    expect(await codeOf(h.broker.settle(a.token(), { kind: 'complete' }))).toBe('LockLost');
    expect(await codeOf(h.broker.renewLock(a.token()))).toBe('LockLost');
    expect(h.stored('q').map((r) => r.messageId)).toEqual(['a', 'b']);

    await h.advance(until - clock.now() - 1);
    expect(c.ids()).toEqual(['b']);
    await h.advance(1);
    expect(c.ids()).toEqual(['b', 'a']);
    expect(c.last().row.deliveryCount).toBe(3);
    expect(c.last().row.props).toEqual({ p: 1 });
    expect(await codeOf(h.broker.settle(a.token(), { kind: 'complete' }))).toBe('LockLost');
    await h.broker.settle(c.token(), { kind: 'complete' });
    expect(h.stored('q').map((r) => r.messageId)).toEqual(['b']);
  });

  it('a restart keeps deliveryCount toward MaxDeliveryCount', async () => {
    const h = await Harness.start();
    const a = h.attach('q', 10).consumer;
    await h.send('q', 'a');
    await h.advance(LOCK_MS);
    expect(a.last().row.deliveryCount).toBe(2);
    await h.restart();
    const c = h.attach('q', 10).consumer;
    await h.advance(LOCK_MS);
    expect(c.deliveries.map((d) => d.row.deliveryCount)).toEqual([3]);
    await h.advance(LOCK_MS);
    expect(h.stored('q')).toEqual([]);
    expect(h.stored(DLQ).map((r) => r.props?.DeadLetterReason)).toEqual(['MaxDeliveryCountExceeded']);
  });

  it('continues sequence numbers after a restart, even when everything was completed', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 10).consumer;
    expect(await h.send('q', 'a', 'b', 'c')).toEqual([1, 2, 3]);
    for (let i = 0; i < 3; i++) await h.broker.settle(c.token(i), { kind: 'complete' });
    expect(h.stored('q')).toEqual([]);
    await h.restart();
    expect(await h.send('q', 'd')).toEqual([4]);
    await h.restart();
    expect(await h.send('q', 'e', 'f')).toEqual([5, 6]);
    // Other queues have their own numbering.
    expect(await h.send('ttlq', 'x')).toEqual([1]);
  });

  it('a stopped broker refuses new work with ShuttingDown', async () => {
    const h = await Harness.start();
    await h.broker.stop();
    expect(await codeOf(h.broker.send('q', [msg('a')]))).toBe('ShuttingDown');
  });
});

describe('complete vs lock expiry race (property)', () => {
  it('exactly one of {complete succeeded, redelivered to another consumer} in every trial', async () => {
    // Small deterministic PRNG (mulberry32) so a failure is reproducible.
    const rand = prng(0x5eed);
    const outcomes = { completed: 0, redelivered: 0 };
    const failures: string[] = [];

    for (let trial = 0; trial < 2000; trial++) {
      const h = await Harness.start();
      const holder = h.attach('q', 1).consumer;
      const other = h.attach('q', 0).consumer;
      await h.send('q', `m${trial}`);
      if (holder.deliveries.length !== 1) throw new Error(`trial ${trial}: holder got nothing`);
      other.credit = 1; // ready to take a redelivery (the scheduler's expiry pumps it)

      const until = holder.last().row.lock!.until;
      const offset = Math.floor(rand() * 11) - 5; // -5 .. +5 ms
      h.clock.advance(until + offset - h.clock.now());

      let completed = false;
      try {
        await h.broker.settle(holder.token(), { kind: 'complete' });
        completed = true;
      } catch (err) {
        if (!(err instanceof BrokerError) || err.code !== 'LockLost') throw err;
      }
      await flush();
      h.clock.advance(LOCK_MS / 2);
      await flush();
      const redelivered = other.deliveries.length === 1;

      if (completed === redelivered || completed !== offset < 0) {
        failures.push(`trial ${trial} offset ${offset}: completed=${completed} redelivered=${redelivered}`);
      }
      if (completed) {
        outcomes.completed++;
        if (h.stored('q').length !== 0) failures.push(`trial ${trial}: completed but still stored`);
      }
      if (redelivered) outcomes.redelivered++;
      await h.broker.stop();
    }
    expect(failures).toEqual([]);
    expect(outcomes.completed).toBeGreaterThan(0);
    expect(outcomes.redelivered).toBeGreaterThan(0);
    expect(outcomes.completed + outcomes.redelivered).toBe(2000);
  });
});

// Service Bus counts a delivery as failed when its lock ends without a complete (abandon, expiry, a crash);
// the broker counts at lock time so a crash still counts. What is not a failed delivery is taken back.
describe('which deliveries count', () => {
  it('an explicit dead-letter does not count the delivery it ends', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 1).consumer;
    await h.send('q', 'a');
    expect(c.last().row.deliveryCount).toBe(1); // wire count 0
    await h.broker.settle(c.token(), { kind: 'deadLetter', reason: 'bad' });
    expect(h.stored(DLQ).map((r) => r.deliveryCount)).toEqual([0]);
    const d = h.attach(DLQ, 1).consumer;
    await flush();
    expect(d.last().row.deliveryCount).toBe(1); // wire count 0, as first received from the queue
  });

  it('defer counts: a deferred message fetched by sequence number and dead-lettered keeps one attempt', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 1).consumer;
    const [seq] = await h.send('q', 'a');
    await h.broker.settle(c.token(), { kind: 'defer' });
    const [fetched] = await h.broker.receiveDeferred('q', [seq!], 'peekLock');
    expect(fetched!.row.deliveryCount).toBe(2); // wire count 1
    await h.broker.settle(fetched!.row.lock!.token, { kind: 'deadLetter' });
    expect(h.stored(DLQ).map((r) => r.deliveryCount)).toEqual([1]);
    expect(h.stored(DLQ)[0]!.deferred).toBeUndefined();
  });


  it('in a dead-letter queue abandon, lock expiry and defer leave the count as it was dead-lettered', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 10).consumer;
    const [seq] = await h.send('q', 'a');
    await h.broker.settle(c.token(), { kind: 'abandon' }); // one failed delivery
    await flush();
    await h.broker.settle(c.token(), { kind: 'deadLetter' });
    expect(h.stored(DLQ).map((r) => r.deliveryCount)).toEqual([1]);
    const d = h.attach(DLQ, 10).consumer;
    await flush();
    await h.broker.settle(d.token(), { kind: 'abandon' });
    await flush();
    await h.advance(LOCK_MS); // the second DLQ delivery's lock expires
    // Every DLQ delivery shows wire count 1: the count the message was dead-lettered with.
    expect(d.deliveries.map((x) => x.row.deliveryCount)).toEqual([2, 2, 2]);
    await h.broker.settle(d.token(), { kind: 'defer' });
    expect(h.stored(DLQ).map((r) => r.deliveryCount)).toEqual([1]);
    const [again] = await h.broker.receiveDeferred(DLQ, [seq!], 'peekLock');
    expect(again!.row.deliveryCount).toBe(2);
  });

  it('a delivery cut short by a restart still counts', async () => {
    const h = await Harness.start();
    h.attach('q', 1);
    await h.send('q', 'a');
    await h.restart();
    const c = h.attach('q', 1).consumer;
    await h.advance(LOCK_MS);
    expect(c.last().row.deliveryCount).toBe(2); // wire count 1
  });
});

describe('scheduled messages as Service Bus reports them', () => {
  it('are enqueued at their scheduled time and stay scheduled once visible', async () => {
    const h = await Harness.start();
    const sent = h.clock.now();
    const due = sent + 60_000;
    await h.broker.send('q', [msg('later', { scheduledAt: due })]);
    const [peeked] = h.broker.peek('q', 1, 1);
    expect(peeked!.row.enqueuedAt).toBe(due);
    expect(reportedState(peeked!.row)).toBe('scheduled');
    const c = h.attach('q', 1).consumer;
    await h.advance(60_000);
    expect(c.ids()).toEqual(['later']);
    expect(c.last().row.enqueuedAt).toBe(due);
    expect(reportedState(c.last().row)).toBe('scheduled');
    // Still scheduled after a restart (the mark is stored with the row).
    await h.restart();
    await h.advance(LOCK_MS);
    expect(reportedState(h.broker.peek('q', 1, 1)[0]!.row)).toBe('scheduled');
  });

  it('a scheduled time already past on arrival is an ordinary send', async () => {
    const h = await Harness.start();
    await h.broker.send('q', [msg('now', { scheduledAt: h.clock.now() - 1 })]);
    const [row] = h.stored('q');
    expect(row!.enqueuedAt).toBe(h.clock.now());
    expect(reportedState(row!)).toBe('active');
  });

  it('time to live runs from the scheduled time', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 1).consumer;
    await h.broker.send('q', [msg('later', { scheduledAt: h.clock.now() + 60_000, ttlMs: 10_000 })]);
    await h.advance(60_000);
    expect(c.ids()).toEqual(['later']);
    expect(c.last().row.expiresAt).toBe(c.last().row.enqueuedAt + 10_000);
  });

  it('a deferred message reports deferred, a dead-lettered one active', async () => {
    const h = await Harness.start();
    const c = h.attach('q', 2).consumer;
    await h.send('q', 'a', 'b');
    await h.broker.settle(c.token(0), { kind: 'defer' });
    await h.broker.settle(c.token(1), { kind: 'deadLetter' });
    expect(reportedState(h.stored('q')[0]!)).toBe('deferred');
    expect(reportedState(h.stored(DLQ)[0]!)).toBe('active');
  });
});

describe('entity not found', () => {
  it('names the entity by its full address when the host is known', () => {
    expect(entityNotFound('orders').message).toBe("The messaging entity 'orders' could not be found.");
    expect(entityNotFound('orders', '127.0.0.1').message).toBe("The messaging entity 'sb://127.0.0.1/orders' could not be found.");
    expect(entityNotFound('t/Subscriptions/s').entityPath).toBe('t/Subscriptions/s');
  });
});
