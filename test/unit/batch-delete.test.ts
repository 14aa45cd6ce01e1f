// Batch delete (Broker.deleteMessages) and session browsing (Broker.listSessions) on a memory store and a
// fake clock: which messages one call removes, the per-call cap, one store transaction per call, what a
// failed write leaves behind, and which sessions a last-updated-time selects.

import { describe, expect, it } from 'vitest';
import type { StoreOp } from '../../src/store/store.js';
import { DOTNET_MAX_DATE_MS } from '../../src/broker/messaging/session-listing.js';
import { attachFake, FakeConsumer, Harness, codeOf, flush, msg, settings } from './helpers.js';

const DLQ = 'q/$DeadLetterQueue';

/** Message ids stored for an entity, in sequence order. */
function storedIds(h: Harness, path: string): string[] {
  return h.stored(path).map((r) => r.messageId);
}

async function withSessionQueue(): Promise<Harness> {
  const h = new Harness();
  h.config.queues.push({ name: 'sq', settings: settings({ requiresSession: true }) });
  await h.boot();
  return h;
}

describe('batch delete', () => {
  it('deletes the oldest available messages enqueued before the cut-off, up to the count', async () => {
    const h = await Harness.start();
    await h.send('q', 'a', 'b', 'c');
    const cutoff = h.clock.now() + 500;
    await h.advance(1_000);
    await h.send('q', 'd');

    expect(await h.broker.deleteMessages('q', { count: 2, before: cutoff })).toBe(2);
    expect(storedIds(h, 'q')).toEqual(['c', 'd']);
    expect(await h.broker.deleteMessages('q', { count: 10, before: cutoff })).toBe(1);
    expect(await h.broker.deleteMessages('q', { count: 10, before: cutoff })).toBe(0);
    expect(storedIds(h, 'q')).toEqual(['d']);
    // A message enqueued exactly at the cut-off is not "before" it.
    expect(await h.broker.deleteMessages('q', { count: 10, before: h.stored('q')[0]!.enqueuedAt })).toBe(0);
    // Without a cut-off, "now" is used.
    expect(await h.broker.deleteMessages('q', { count: 10 })).toBe(0);
    await h.advance(1);
    expect(await h.broker.deleteMessages('q', { count: 10 })).toBe(1);
    expect(storedIds(h, 'q')).toEqual([]);
  });

  it('refuses a count outside 1 … 500 with ArgumentOutOfRange and changes nothing', async () => {
    const h = await Harness.start();
    await h.send('q', 'a', 'b');
    await h.advance(1);
    for (const count of [0, -1, 501, 1.5, Number.NaN]) {
      expect(await codeOf(h.broker.deleteMessages('q', { count }))).toBe('ArgumentOutOfRange');
    }
    expect(storedIds(h, 'q')).toEqual(['a', 'b']);
    expect(await h.broker.deleteMessages('q', { count: 500 })).toBe(2);
  });

  it('deletes at most 500 per call, each call in one store write', async () => {
    const h = await Harness.start();
    await h.broker.send('q', Array.from({ length: 620 }, (_, i) => msg(`m${i}`)));
    await h.advance(1);
    const writes: StoreOp[][] = [];
    const write = h.store.write.bind(h.store);
    h.store.write = (ops: StoreOp[]) => {
      writes.push(ops);
      return write(ops);
    };

    expect(await h.broker.deleteMessages('q', { count: 500 })).toBe(500);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.filter((op) => op.op === 'delete')).toHaveLength(500);
    expect(storedIds(h, 'q')[0]).toBe('m500');
    expect(await h.broker.deleteMessages('q', { count: 500 })).toBe(120);
    expect(writes).toHaveLength(2);
    expect(h.stored('q')).toHaveLength(0);
  });

  it('leaves locked, deferred and scheduled messages, which then work as before', async () => {
    const h = await Harness.start();
    const { consumer } = h.attach('q', 2);
    await h.send('q', 'locked', 'deferred', 'c', 'd');
    await h.broker.send('q', [msg('scheduled', { scheduledAt: h.clock.now() + 60_000 })]);
    await h.broker.settle(consumer.token(1), { kind: 'defer' });
    await flush();

    expect(await h.broker.deleteMessages('q', { count: 500, before: h.clock.now() + 3_600_000 })).toBe(2);
    expect(storedIds(h, 'q')).toEqual(['locked', 'deferred', 'scheduled']);
    await h.broker.settle(consumer.token(0), { kind: 'complete' });
    const [deferred] = await h.broker.receiveDeferred('q', [2], 'receiveAndDelete');
    expect(deferred!.row.messageId).toBe('deferred');
    // The scheduled message still becomes available when due.
    const late = h.attach('q', 5).consumer;
    await h.advance(60_000);
    expect(late.ids()).toEqual(['scheduled']);
  });

  it('a failed store write deletes nothing: every message is still there and deliverable', async () => {
    const h = await Harness.start();
    await h.send('q', 'a', 'b', 'c');
    await h.advance(1);
    h.store.failWrites = new Error('disk unplugged');
    expect(await codeOf(h.broker.deleteMessages('q', { count: 2 }))).toBe('StoreUnavailable');
    h.store.failWrites = null;
    expect(storedIds(h, 'q')).toEqual(['a', 'b', 'c']);
    const { consumer } = h.attach('q', 10);
    await flush();
    expect(consumer.ids()).toEqual(['a', 'b', 'c']);
  });

  it('deleted messages stay deleted after a restart', async () => {
    const h = await Harness.start();
    await h.send('q', 'a', 'b', 'c');
    await h.advance(1);
    expect(await h.broker.deleteMessages('q', { count: 2 })).toBe(2);
    await h.restart();
    const { consumer } = h.attach('q', 10);
    await flush();
    expect(consumer.ids()).toEqual(['c']);
  });

  it('works on a dead-letter queue without touching its queue', async () => {
    const h = await Harness.start();
    const { consumer } = h.attach('q', 2);
    await h.send('q', 'd1', 'd2', 'live');
    for (const i of [0, 1]) await h.broker.settle(consumer.token(i), { kind: 'deadLetter', reason: 'r' });
    await h.advance(1);
    expect(await h.broker.deleteMessages(DLQ, { count: 1 })).toBe(1);
    expect(storedIds(h, DLQ)).toEqual(['d2']);
    expect(storedIds(h, 'q')).toEqual(['live']);
  });

  it('with a session id deletes only that session\'s messages', async () => {
    const h = await withSessionQueue();
    await h.broker.send('sq', [msg('a1', { sessionId: 'A' }), msg('b1', { sessionId: 'B' }), msg('a2', { sessionId: 'A' })]);
    await h.advance(1);
    expect(await h.broker.deleteMessages('sq', { count: 10, sessionId: 'A' })).toBe(2);
    expect(storedIds(h, 'sq')).toEqual(['b1']);
  });
});

/** Accepts session `id` on `sq` for a fake receiver and lets it take what it can. */
async function takeSession(h: Harness, id: string, mode: 'peekLock' | 'receiveAndDelete'): Promise<FakeConsumer> {
  const c = new FakeConsumer(10, mode);
  await h.broker.acceptSession('sq', id, 1_000, c);
  attachFake(h.broker, 'sq', c);
  await flush();
  return c;
}

describe('session browsing', () => {
  it('lists by time the sessions whose state was set at or after it, paged; messages and locks do not count', async () => {
    const h = await withSessionQueue();
    const t0 = h.clock.now();
    await h.broker.send('sq', [msg('a', { sessionId: 'A' }), msg('b', { sessionId: 'B' }), msg('c', { sessionId: 'C' })]);
    // Messages arriving are no state update (.NET 7.21: "sessions whose session state was set or updated after").
    expect(h.broker.listSessions('sq', t0, 0, 10)).toEqual([]);
    for (const id of ['A', 'B', 'C']) {
      await takeSession(h, id, 'peekLock');
      await h.broker.setSessionState('sq', id, new TextEncoder().encode(id));
      if (id === 'B') await h.advance(10_000);
    }
    expect(h.broker.listSessions('sq', t0, 0, 10)).toEqual(['A', 'B', 'C']);
    expect(h.broker.listSessions('sq', t0 + 5_000, 0, 10)).toEqual(['C']);
    expect(h.broker.listSessions('sq', t0, 1, 1)).toEqual(['B']);
    expect(h.broker.listSessions('sq', t0, 3, 10)).toEqual([]);

    // A lock renewed, and new messages, are not state updates; setting the state again is.
    await h.advance(10_000);
    const t2 = h.clock.now();
    await h.broker.renewSessionLock('sq', 'A');
    await h.broker.send('sq', [msg('a2', { sessionId: 'A' })]);
    expect(h.broker.listSessions('sq', t2, 0, 10)).toEqual([]);
    await h.broker.setSessionState('sq', 'A', new TextEncoder().encode('A2'));
    expect(h.broker.listSessions('sq', t2, 0, 10)).toEqual(['A']);
    // A cleared state is no state: the session is not listed by time (docs/sdk-7.10.md; our choice).
    await h.broker.setSessionState('sq', 'A', null);
    expect(h.broker.listSessions('sq', t2, 0, 10)).toEqual([]);
  });

  it('DateTime.MaxValue selects every session with a message or state, and only those (as .NET SDK 7.21 documents it)', async () => {
    const h = await withSessionQueue();
    await h.broker.send('sq', [msg('a', { sessionId: 'A' }), msg('b', { sessionId: 'B' }), msg('c', { sessionId: 'C' })]);
    await h.advance(1);
    // Session C: its message consumed, no state: nothing left to list.
    expect((await takeSession(h, 'C', 'receiveAndDelete')).ids()).toEqual(['c']);
    // Session B: its message consumed, its state kept.
    const b = await takeSession(h, 'B', 'receiveAndDelete');
    expect(b.ids()).toEqual(['b']);
    await h.broker.setSessionState('sq', 'B', new TextEncoder().encode('s'));
    expect(storedIds(h, 'sq')).toEqual(['a']);

    expect(h.broker.listSessions('sq', DOTNET_MAX_DATE_MS, 0, 10)).toEqual(['A', 'B']);
    // Any other time lists by state only: B, whose state was set.
    expect(h.broker.listSessions('sq', 0, 0, 10)).toEqual(['B']);
  });
});
