// Message sessions at scale, over a MemoryStore and the fake clock: accept-next takes the free session whose
// oldest available message is oldest from an index kept as messages and locks come and go; sessions whose
// messages are only deferred or scheduled are not available; a session whose lock ends (released or lapsed) is
// available again; ending a session touches only its own messages; listing reads sessions, and a session with
// nothing left (no message, no state, no lock) is forgotten.

import { describe, expect, it } from 'vitest';
import { AvailableSessions } from '../../src/broker/indexes/session-index.js';
import { DOTNET_MAX_DATE_MS } from '../../src/broker/messaging/session-listing.js';
import { SessionState } from '../../src/broker/indexes/session-state.js';
import type { StoreOp } from '../../src/store/store.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { attachFake, codeOf, FakeConsumer, flush, Harness, LOCK_MS, msg, settings } from './helpers.js';

const SQ = 'sq';

async function rig(): Promise<Harness> {
  const h = new Harness();
  h.config.queues.push({ name: SQ, settings: settings({ requiresSession: true, maxDeliveryCount: 10 }) });
  await h.boot();
  return h;
}

/** Sends one message per [id, sessionId] pair, in order (so sequence numbers follow the list). */
async function sendTo(h: Harness, ...pairs: [string, string][]): Promise<void> {
  for (const [id, sessionId] of pairs) await h.broker.send(SQ, [msg(id, { sessionId })]);
  await flush();
}

/** Accepts the next session (or `id`) and attaches a consumer with `credit` to it. */
async function accept(h: Harness, credit = 10, id: string | null = null, timeoutMs = 1000) {
  const consumer = new FakeConsumer(credit);
  const grant = await h.broker.acceptSession(SQ, id, timeoutMs, consumer);
  const handle = attachFake(h.broker, SQ, consumer);
  await flush();
  return { consumer, handle, grant };
}

describe('AvailableSessions', () => {
  const heads = (m: Map<SessionState, number>) => (s: SessionState) => m.get(s);

  it('hands out the session filed under the lowest sequence number first, each once', () => {
    const idx = new AvailableSessions();
    const [a, b, c] = ['a', 'b', 'c'].map((id) => new SessionState(id));
    const m = new Map([[a, 7], [b, 3], [c, 5]]);
    for (const [s, seq] of m) idx.offer(s, seq);
    expect([idx.take(heads(m)), idx.take(heads(m)), idx.take(heads(m)), idx.take(heads(m))].map((s) => s?.id)).toEqual(['b', 'c', 'a', undefined]);
  });

  it('keeps the lower of two offers, skips a locked session and refiles one whose first message moved on', () => {
    const idx = new AvailableSessions();
    const [a, b] = ['a', 'b'].map((id) => new SessionState(id));
    idx.offer(a, 9);
    idx.offer(a, 2); // an earlier message came back (abandoned): a is now first
    idx.offer(b, 4);
    const m = new Map([[a, 2], [b, 4]]);
    b.holder = 'recovered'; // locked by id since it was filed
    m.set(a, 6); // a's message 2 was taken meanwhile; 6 is its first now
    idx.offer(b, 1); // ignored: a locked session is not filed
    expect(idx.take(heads(m))?.id).toBe('a');
    expect(idx.take(heads(m))).toBeUndefined();
    b.holder = null;
    idx.offer(b, 4);
    expect(idx.take(heads(m))?.id).toBe('b');
  });
});

describe('Sessions at scale', () => {
  it('accept-next takes the session whose oldest available message is oldest, not the first one created', async () => {
    const h = await rig();
    await sendTo(h, ['a1', 'a'], ['b1', 'b'], ['c1', 'c']);
    // 'a' was created first, but once its first message is completed its oldest available one is the newest.
    const a = await accept(h, 1, 'a');
    await h.broker.settle(a.consumer.token(), { kind: 'complete' }, SQ);
    await sendTo(h, ['a2', 'a']);
    a.handle.detach();
    await flush();
    const order: string[] = [];
    for (let i = 0; i < 3; i++) order.push((await accept(h)).grant.sessionId);
    expect(order).toEqual(['b', 'c', 'a']);
    // None is left: accept-next waits, then times out.
    const none = h.broker.acceptSession(SQ, null, 1000, new FakeConsumer(1)).then(
      () => 'granted',
      () => 'timeout',
    );
    await h.advance(1001);
    expect(await none).toBe('timeout');
  });

  it('a session with only deferred or scheduled messages is not available until one is', async () => {
    const h = await rig();
    const at = h.clock.now() + 60_000;
    await h.broker.send(SQ, [msg('later', { sessionId: 'sched', scheduledAt: at })]);
    await sendTo(h, ['d1', 'def']);
    const d = await accept(h);
    expect(d.grant.sessionId).toBe('def');
    await h.broker.settle(d.consumer.token(), { kind: 'defer' }, SQ);
    d.handle.detach();
    await flush();
    // Neither 'def' (deferred only) nor 'sched' (not yet due) is available: accept-next times out.
    const waiting = h.broker.acceptSession(SQ, null, 5_000, new FakeConsumer(1));
    const outcome = waiting.then(
      (g) => g.sessionId,
      () => 'timeout',
    );
    await h.advance(5_001);
    expect(await outcome).toBe('timeout');
    // Once the scheduled message falls due, its session is the next available one.
    const due = h.broker.acceptSession(SQ, null, 120_000, new FakeConsumer(1));
    await h.advance(60_000);
    expect((await due).sessionId).toBe('sched');
  });

  it('a lapsed session lock makes the session available again, its message back with the delivery counted', async () => {
    const h = await rig();
    await sendTo(h, ['a1', 'a'], ['b1', 'b']);
    const a = await accept(h);
    expect(a.consumer.ids()).toEqual(['a1']);
    const b = await accept(h);
    expect(b.grant.sessionId).toBe('b');
    // A waiter gets 'a' as soon as its lock lapses (no renew), not 'b', which stays with its holder.
    const next = h.broker.acceptSession(SQ, null, 2 * LOCK_MS, new FakeConsumer(1));
    await h.advance(LOCK_MS + 1);
    expect((await next).sessionId).toBe('a');
    expect(h.stored(SQ).find((r) => r.messageId === 'a1')).toMatchObject({ deliveryCount: 1 });
  });

  it('releasing a session returns only its own locked messages; other sessions keep theirs', async () => {
    const h = await rig();
    await sendTo(h, ['a1', 'a'], ['a2', 'a'], ['b1', 'b'], ['b2', 'b']);
    const a = await accept(h);
    const b = await accept(h);
    expect(a.consumer.ids()).toEqual(['a1', 'a2']);
    expect(b.consumer.ids()).toEqual(['b1', 'b2']);
    a.handle.detach();
    await flush();
    const q = h.ctx.entities.resolve(SQ);
    expect(q.counts()).toMatchObject({ active: 2, locked: 2 });
    // b's locks still hold: completing them works; a's tokens are gone.
    await h.broker.settle(b.consumer.token(0), { kind: 'complete' }, SQ);
    expect(await codeOf(h.broker.settle(a.consumer.token(0), { kind: 'complete' }, SQ))).toBe('LockLost');
    const again = await accept(h);
    expect(again.grant.sessionId).toBe('a');
    expect(again.consumer.ids()).toEqual(['a1', 'a2']);
  });

  it('lists sessions with messages, and forgets a session once it has no message, state or lock', async () => {
    const h = await rig();
    const t0 = h.clock.now();
    await sendTo(h, ['a1', 'a'], ['b1', 'b'], ['c1', 'c']);
    expect(h.broker.listSessions(SQ, DOTNET_MAX_DATE_MS, 0, 100)).toEqual(['a', 'b', 'c']);
    expect(h.broker.listSessions(SQ, DOTNET_MAX_DATE_MS, 1, 1)).toEqual(['b']);
    const b = await accept(h, 10, 'b');
    await h.broker.setSessionState(SQ, 'b', new Uint8Array([1]));
    await h.broker.settle(b.consumer.token(), { kind: 'complete' }, SQ);
    const a = await accept(h, 10, 'a');
    await h.broker.settle(a.consumer.token(), { kind: 'complete' }, SQ);
    a.handle.detach();
    b.handle.detach();
    await flush();
    // 'a' has nothing left: gone from the list and from memory. 'b' keeps its state, so it is listed both ways
    // (DateTime.MaxValue lists sessions with messages or state, as .NET SDK 7.21 documents GetMessageSessionsAsync).
    expect(h.broker.listSessions(SQ, DOTNET_MAX_DATE_MS, 0, 100)).toEqual(['b', 'c']);
    // By time, only sessions whose state was set since: 'b' (as .NET SDK 7.21 documents the overload with a time).
    expect(h.broker.listSessions(SQ, t0, 0, 100)).toEqual(['b']);
    expect(h.broker.listSessions(SQ, h.clock.now() + 1, 0, 100)).toEqual([]);
    const q = h.ctx.entities.resolve(SQ);
    expect([...q.sessions.keys()].sort()).toEqual(['b', 'c']);
    // A session forgotten comes back with its next message.
    await sendTo(h, ['a2', 'a']);
    expect(h.broker.listSessions(SQ, DOTNET_MAX_DATE_MS, 0, 100)).toEqual(['a', 'b', 'c']);
  });

  it('lists a session by the time its state was set, whatever its messages do since', async () => {
    const h = await rig();
    await sendTo(h, ['c1', 'c']);
    await h.advance(10_000);
    const t1 = h.clock.now();
    const c = await accept(h, 10, 'c');
    await h.broker.setSessionState(SQ, 'c', new Uint8Array([1]));
    await h.broker.settle(c.consumer.token(), { kind: 'complete' }, SQ);
    c.handle.detach();
    await flush();
    await h.advance(10_000);
    await h.broker.send(SQ, [msg('c2', { sessionId: 'c' })]);
    await flush();
    // Its message left and another came, its lock ended: the state's time is what counts.
    expect(h.broker.listSessions(SQ, t1, 0, 100)).toEqual(['c']);
    expect(h.broker.listSessions(SQ, t1 + 1, 0, 100)).toEqual([]);
  });

  it('serves a thousand accept-next requests in sequence order without losing a session', async () => {
    const h = await rig();
    const n = 1000;
    await h.broker.send(SQ, Array.from({ length: n }, (_, i) => msg(`m${i}`, { sessionId: `s${String(n - i).padStart(4, '0')}` })));
    await flush();
    const got: string[] = [];
    for (let i = 0; i < n; i++) {
      const { consumer, handle, grant } = await accept(h, 1);
      got.push(grant.sessionId);
      await h.broker.settle(consumer.token(), { kind: 'complete' }, SQ);
      handle.detach();
    }
    // Sent with descending ids, so sequence order is the reverse of id order.
    expect(got).toEqual(Array.from({ length: n }, (_, i) => `s${String(n - i).padStart(4, '0')}`));
    expect(h.ctx.entities.resolve(SQ).sessions.size).toBe(0);
  });
});

describe('Session lock writes', () => {
  /** Records every store write's ops. */
  function recordWrites(h: Harness): StoreOp[][] {
    const writes: StoreOp[][] = [];
    const write = h.store.write.bind(h.store);
    h.store.write = (ops: StoreOp[]) => {
      writes.push(structuredClone(ops));
      return write(ops);
    };
    return writes;
  }
  const sessionOps = (writes: StoreOp[][]) => writes.flat().filter((op) => op.op === 'session');

  it('writes a session lock in the same store write as the first message locked under it, and it holds across a crash', async () => {
    const h = await rig();
    await sendTo(h, ['a1', 'a'], ['a2', 'a']);
    const writes = recordWrites(h);
    const a = await accept(h, 1);
    expect(a.consumer.ids()).toEqual(['a1']);
    const carrying = writes.filter((w) => w.some((op) => op.op === 'put' && op.row.messageId === 'a1' && op.row.state === 'locked'));
    expect(carrying).toHaveLength(1);
    expect(carrying[0].find((op) => op.op === 'session')).toMatchObject({ sessionId: 'a', record: { lockedUntil: a.grant.lockedUntil } });
    // A crash: a new broker on what was committed (the old one is abandoned, not stopped), on its own clock.
    const clock = new FakeClock(h.clock.now());
    const after = new Harness(h.store, clock);
    after.config.queues.push({ name: SQ, settings: settings({ requiresSession: true, maxDeliveryCount: 10 }) });
    await after.boot();
    // a2 is available, but a1 is still locked under the recovered session lock: nobody gets a2 ahead of a1.
    expect(await codeOf(after.broker.acceptSession(SQ, 'a', 1000, new FakeConsumer(1)))).toBe('SessionCannotBeLocked');
    const next = after.broker.acceptSession(SQ, null, 2 * LOCK_MS, new FakeConsumer(1));
    await after.advance(LOCK_MS + 1);
    expect((await next).sessionId).toBe('a');
  });

  it('a session taken and left without a message writes nothing, and is available again at once', async () => {
    const h = await rig();
    await sendTo(h, ['a1', 'a']);
    const writes = recordWrites(h);
    const a = await accept(h, 0);
    a.handle.detach();
    await flush();
    expect(sessionOps(writes)).toEqual([]);
    const again = await accept(h, 1);
    expect(again.grant.sessionId).toBe('a');
    expect(again.consumer.ids()).toEqual(['a1']);
  });

  it('a session with state still records its release, and a renewed lock is written by the renewal', async () => {
    const h = await rig();
    await sendTo(h, ['a1', 'a']);
    const first = await accept(h, 0, 'a');
    await h.broker.setSessionState(SQ, 'a', new Uint8Array([7]));
    first.handle.detach();
    await flush();
    const writes = recordWrites(h);
    const b = await accept(h, 0, 'a');
    await h.advance(1000);
    const until = await h.broker.renewSessionLock(SQ, 'a');
    expect(sessionOps(writes)).toEqual([expect.objectContaining({ record: expect.objectContaining({ lockedUntil: until }) })]);
    b.handle.detach();
    await flush();
    expect(sessionOps(writes)[1]).toMatchObject({ record: { lockedUntil: 0, state: new Uint8Array([7]) } });
  });
});
