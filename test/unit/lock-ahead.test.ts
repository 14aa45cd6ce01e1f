// Issue 37, item 4: lock ahead for credit 1. A peek-lock receiver whose credit is used up completes message k; the
// lock of k+1 for it joins the complete's write (one flush per cycle instead of two) and is held unsent until its
// credit comes. A speculative lock that is not sent (no credit in time, a competing receiver with credit, a detach)
// is given back without counting a delivery, and leaves no attempt in the delivery history.
// Broker level: a memory store and a fake clock.

import { describe, expect, it } from 'vitest';
import { attachFake, FakeConsumer, flush, Harness, LOCK_MS, MAX_DELIVERY } from './helpers.js';

/** Longer than any hold of a speculative lock (the bound is a fraction of a second). */
const LONG_WAIT_MS = 2_000;

/** Counts the group commits (each one store write and one log flush) the broker makes from now on. */
function countCommits(h: Harness): { readonly n: number } {
  const c = { n: 0 };
  h.broker.events.on('committed', () => void c.n++);
  return c;
}

/** The stored row of `seq` in queue `q`. */
function storedRow(h: Harness, seq: number) {
  return h.stored('q').find((r) => r.seq === seq);
}

/** Completes the consumer's last delivery, as the SDK does, and then grants one more credit (the credit-1 loop). */
async function cycle(h: Harness, c: { consumer: { token(): string; credit: number } }): Promise<void> {
  await h.broker.settle(c.consumer.token(), { kind: 'complete' });
  c.consumer.credit = c.consumer.credit + 1;
  await flush();
}

/** Messages `a` and `b` (sequence number `s2`), a credit-1 receiver given `a` that completes it: `b` is held for it. */
async function heldAhead() {
  const h = await Harness.start();
  const [, s2 = 0] = await h.send('q', 'a', 'b');
  const a = h.attach('q', 1);
  await flush();
  await h.broker.settle(a.consumer.token(), { kind: 'complete' });
  await flush();
  return { h, a, s2 };
}

describe('lock ahead for credit 1', () => {
  it('a credit-1 receiver takes 100 messages with about one commit each, not two, in order and counted once', async () => {
    const h = await Harness.start();
    const ids = Array.from({ length: 100 }, (_, i) => `m${i}`);
    await h.send('q', ...ids);
    const commits = countCommits(h);
    const a = h.attach('q', 1);
    await flush();
    for (let i = 1; i < ids.length; i++) await cycle(h, a);
    await h.broker.settle(a.consumer.token(), { kind: 'complete' });
    await flush();
    expect(a.consumer.ids()).toEqual(ids);
    expect(a.consumer.deliveries.every((d) => d.row.deliveryCount === 1)).toBe(true);
    expect(h.stored('q')).toHaveLength(0);
    // 100 completes and 100 locks: 200 commits one after the other without lock ahead; 101 with it (the first lock,
    // then each complete with the next lock), plus the last speculative lock's give-back if any.
    expect(commits.n).toBeLessThanOrEqual(103);
    expect(h.broker.counters).toMatchObject({ lockedAhead: 99, lockAheadReturned: 0, delivered: 100 });
  });

  it('the lock the client sees lasts a full LockDuration from the transfer, and never beyond what the store holds', async () => {
    const { h, a, s2 } = await heldAhead();
    // The credit comes a little later than the complete's answer.
    await h.advance(50);
    a.consumer.credit = 2;
    await flush();
    expect(a.consumer.ids()).toEqual(['a', 'b']);
    const until = a.consumer.last().row.lock!.until;
    expect(until).toBe(h.clock.now() + LOCK_MS);
    expect(storedRow(h, s2)!.lock!.until).toBeGreaterThanOrEqual(until);
    // The lock in force is the one reported: it ends at `until`, not at the stored (later) one.
    await h.advance(LOCK_MS);
    await expect(h.broker.settle(a.consumer.token(), { kind: 'complete' })).rejects.toMatchObject({ code: 'LockLost' });
  });

  it('credit that comes while the held lock still commits is spent on it: sent once durable, in order', async () => {
    const h = await Harness.start();
    await h.send('q', 'a', 'b', 'c');
    const a = h.attach('q', 1);
    await flush();
    const commits = countCommits(h);
    // The complete and the next flow in one read, as a client that grants before the complete is answered sends them.
    const done = h.broker.settle(a.consumer.token(), { kind: 'complete' });
    a.consumer.credit = 2;
    await done;
    await flush();
    expect(a.consumer.ids()).toEqual(['a', 'b']);
    expect(a.consumer.last().row.deliveryCount).toBe(1);
    expect(commits.n).toBe(1);
  });

  it('a speculative lock whose credit never comes is given back: no delivery counted, no lock, no history', async () => {
    const { h, a, s2 } = await heldAhead();
    await h.advance(LONG_WAIT_MS);
    const row = storedRow(h, s2)!;
    expect(row).toMatchObject({ state: 'active', deliveryCount: 0 });
    expect(row.lock).toBeUndefined();
    expect(h.broker.messageHistory('q', s2)).toBeNull();
    // The credit comes late: the message is delivered as a first delivery.
    a.consumer.credit = 2;
    await flush();
    expect(a.consumer.ids()).toEqual(['a', 'b']);
    expect(a.consumer.last().row.deliveryCount).toBe(1);
    expect(h.broker.messageHistory('q', s2)!.deliveries).toHaveLength(1);
  });

  it('credit that comes while a held lock is being given back still gets that message first: the order holds', async () => {
    const h = await Harness.start();
    await h.send('q', 'a', 'b', 'c');
    const a = h.attach('q', 1);
    await flush();
    await h.broker.settle(a.consumer.token(), { kind: 'complete' });
    await flush();
    // The receiver stalls past the hold: the give-back of `b` starts (its write not yet landed) when the credit comes.
    h.clock.advance(LONG_WAIT_MS);
    a.consumer.credit = 2;
    await flush();
    expect(a.consumer.ids()).toEqual(['a', 'b']);
    expect(a.consumer.last().row.deliveryCount).toBe(1);
  });

  it('a competing receiver with credit gets the held message at once, as a first delivery, with no write', async () => {
    const { h, a, s2 } = await heldAhead();
    const commits = countCommits(h);
    // The competitor is a receiver the history names (an SDK's receiver identifier).
    const b = { consumer: Object.assign(new FakeConsumer(1), { client: { link: 'b-link', receiver: 'b-receiver' } }) };
    attachFake(h.broker, 'q', b.consumer);
    await flush();
    expect(b.consumer.ids()).toEqual(['b']);
    expect(b.consumer.last().row.deliveryCount).toBe(1);
    expect(storedRow(h, s2)!.deliveryCount).toBe(1);
    // The held lock, durable and never sent, changed hands: no give-back and no second lock were written.
    expect(commits.n).toBe(0);
    expect(h.broker.counters).toMatchObject({ lockedAhead: 1, lockAheadPassed: 1, lockAheadReturned: 0 });
    const history = h.broker.messageHistory('q', s2)!;
    expect(history.deliveries).toHaveLength(1);
    expect(history.deliveries[0]!.holder).toEqual({ link: 'b-link', receiver: 'b-receiver' });
    // B settles it with the token it was given.
    await h.broker.settle(b.consumer.token(), { kind: 'complete' });
    await flush();
    expect(storedRow(h, s2)).toBeUndefined();
    // A's credit comes afterwards: nothing is left for it, and nothing is delivered twice.
    a.consumer.credit = 2;
    await flush();
    expect(a.consumer.ids()).toEqual(['a']);
  });

  it('a receiver that detaches gives its held message back without counting a delivery', async () => {
    const { h, a, s2 } = await heldAhead();
    a.consumer.open = false;
    a.handle.detach();
    await flush();
    expect(storedRow(h, s2)).toMatchObject({ state: 'active', deliveryCount: 0 });
    expect(storedRow(h, s2)!.lock).toBeUndefined();
    const b = h.attach('q', 1);
    await flush();
    expect(b.consumer.ids()).toEqual(['b']);
    expect(b.consumer.last().row.deliveryCount).toBe(1);
  });

  it('a receive-and-delete competitor is never handed a lock: the held message goes back and is received and deleted', async () => {
    const { h, s2 } = await heldAhead();
    const b = h.attach('q', 1, 'receiveAndDelete');
    await flush();
    expect(b.consumer.ids()).toEqual(['b']);
    expect(storedRow(h, s2)).toBeUndefined();
    expect(h.broker.counters).toMatchObject({ lockAheadPassed: 0, lockAheadReturned: 1 });
  });

  it('speculative locks never count toward MaxDeliveryCount and leave no attempts in the history', async () => {
    const h = await Harness.start();
    // One receiver per message ahead of `b`; each completes its own, and `b`, the next available, is locked ahead
    // for it and given back when the hold ends: more speculative locks on `b` than MaxDeliveryCount.
    const n = MAX_DELIVERY + 2;
    const firsts = Array.from({ length: n }, (_, i) => `x${i}`);
    const seqs = await h.send('q', ...firsts, 'b');
    const sb = seqs[n]!;
    const rs = firsts.map(() => h.attach('q', 1));
    await flush();
    expect(rs.map((r) => r.consumer.ids()[0])).toEqual(firsts);
    const commits = countCommits(h);
    for (const r of rs) {
      await h.broker.settle(r.consumer.token(), { kind: 'complete' });
      await flush();
      await h.advance(LONG_WAIT_MS);
      expect(storedRow(h, sb)).toMatchObject({ state: 'active', deliveryCount: 0 });
    }
    // Each complete took a speculative lock on `b` in its own write, and each was given back.
    expect(commits.n).toBe(2 * n);
    expect(h.broker.counters).toMatchObject({ lockedAhead: n, lockAheadReturned: n });
    expect(h.stored('q/$DeadLetterQueue')).toHaveLength(0);
    expect(h.broker.messageHistory('q', sb)).toBeNull();
    rs[0]!.consumer.credit = 2;
    await flush();
    expect(rs[0]!.consumer.last().row).toMatchObject({ messageId: 'b', deliveryCount: 1 });
    expect(h.broker.messageHistory('q', sb)!.deliveries).toHaveLength(1);
  });

  it('a restart while a message is held keeps its stored lock and count, as for any lock whose transfer never left', async () => {
    const { h, s2 } = await heldAhead();
    const stored = storedRow(h, s2)!;
    expect(stored).toMatchObject({ state: 'locked', deliveryCount: 1 });
    await h.restart();
    const view = h.broker.browse('q').find((m) => m.row.seq === s2)!;
    expect(view.row).toMatchObject({ state: 'locked', deliveryCount: 1, lock: { until: stored.lock!.until } });
    await h.advance(LOCK_MS + LONG_WAIT_MS);
    const b = h.attach('q', 1);
    await flush();
    expect(b.consumer.last().row).toMatchObject({ messageId: 'b', deliveryCount: 2 });
  });

  it('a receiver whose credit is not used up, a receive-and-delete receiver and an abandon take nothing ahead', async () => {
    const h = await Harness.start();
    const [, s2, , s4] = await h.send('q', 'a', 'b', 'c', 'd');
    const a = h.attach('q', 1);
    await flush();
    // Abandon: the message comes back; nothing is locked ahead.
    await h.broker.settle(a.consumer.token(), { kind: 'abandon' });
    await flush();
    expect(storedRow(h, s2)!.state).toBe('active');
    a.consumer.open = false;
    a.handle.detach();
    await flush();
    const d = h.attach('q', 2, 'receiveAndDelete');
    await flush();
    expect(d.consumer.ids()).toEqual(['a', 'b']);
    expect(storedRow(h, s4!)!.state).toBe('active');
  });
});
