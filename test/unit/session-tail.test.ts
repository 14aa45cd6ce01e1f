// A deep session-enabled entity keeps only each session's front in memory (src/broker/indexes/session-tail.ts): a restart
// reads the held rows and the first message of each session, not every row, and accept-next-session, accepting a
// named session, peeking a session, listing sessions, deferral and purge behave as they would with every row in
// memory. Rows read at start-up are counted by a store that counts what it hands out.

import { describe, expect, it } from 'vitest';
import { WINDOW } from '../../src/broker/indexes/cold-tail.js';
import { SESSION_START, SESSION_WINDOW } from '../../src/broker/indexes/session-tail.js';
import { DOTNET_MAX_DATE_MS } from '../../src/broker/messaging/session-listing.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { MessageRow } from '../../src/store/row.js';
import type { QueueFront, QueueSnapshot } from '../../src/store/store.js';
import { attachFake, FakeConsumer, flush, Harness, msg, settings } from './helpers.js';

const SQ = 'sq';
const SESSIONS = 40;
const PER_SESSION = 150; // past SESSION_WINDOW, so every session has a cold tail

/** A memory store that counts the rows its reads hand out. */
class CountingStore extends MemoryStore {
  rowsRead = 0;
  private inFront = false;
  override load(qid: number): QueueSnapshot {
    const s = super.load(qid);
    if (!this.inFront) this.rowsRead += s.rows.length;
    return s;
  }
  // MemoryStore reads every row to answer this; LmdbStore reads the held ones only, which is what is counted.
  override loadFront(qid: number): QueueFront {
    this.inFront = true;
    try {
      const f = super.loadFront(qid);
      this.rowsRead += f.held.length;
      return f;
    } finally {
      this.inFront = false;
    }
  }
  override rowsFrom(qid: number, from: number, limit: number, to?: number): MessageRow[] {
    const rows = super.rowsFrom(qid, from, limit, to);
    this.rowsRead += rows.length;
    return rows;
  }
  override readRow(qid: number, seq: number): MessageRow | undefined {
    const row = super.readRow(qid, seq);
    if (row) this.rowsRead++;
    return row;
  }
  override sessionRowsFrom(qid: number, sessionId: string, from: number, limit: number): MessageRow[] {
    const rows = super.sessionRowsFrom(qid, sessionId, from, limit);
    this.rowsRead += rows.length;
    return rows;
  }
}

async function rig(store = new CountingStore()): Promise<{ h: Harness; store: CountingStore }> {
  const h = new Harness(store);
  h.config.queues.push({ name: SQ, settings: settings({ requiresSession: true, maxDeliveryCount: 10 }) });
  await h.boot();
  return { h, store };
}

/** Sends PER_SESSION messages to each of `sessions` sessions, round-robin (so every session's seqs interleave). */
async function fill(h: Harness, sessions = SESSIONS, per = PER_SESSION): Promise<void> {
  for (let k = 0; k < per; k += 10) {
    const batch = [];
    for (let i = 0; i < sessions; i++) for (let j = k; j < Math.min(per, k + 10); j++) batch.push(msg(`s${i}-${j}`, { sessionId: `s${i}` }));
    await h.broker.send(SQ, batch);
  }
  await flush();
}

/** Accepts the next session (or `id`) with a consumer of `credit`, and lets its messages go out. */
async function accept(h: Harness, credit: number, id: string | null = null, mode: 'peekLock' | 'receiveAndDelete' = 'receiveAndDelete') {
  const consumer = new FakeConsumer(credit, mode);
  const grant = await h.broker.acceptSession(SQ, id, 1000, consumer);
  const handle = attachFake(h.broker, SQ, consumer);
  await flush(10);
  return { consumer, handle, grant };
}

describe('a deep session-enabled entity keeps only each session\'s front in memory', () => {
  it('holds a bounded front while sends arrive, counting every message and byte', async () => {
    const { h } = await rig();
    await fill(h);
    const q = h.ctx.entities.resolve(SQ);
    expect(q.rows.size).toBeLessThanOrEqual(SESSIONS * SESSION_WINDOW);
    expect(q.rows.size).toBeLessThan(SESSIONS * PER_SESSION);
    expect(q.size).toBe(SESSIONS * PER_SESSION);
    expect(q.counts().active).toBe(SESSIONS * PER_SESSION);
    expect(q.bytes).toBe(h.stored(SQ).reduce((n, r) => n + r.size, 0));
  });

  it('after a restart reads the held rows and each session\'s first message, not every row', async () => {
    const { h, store } = await rig();
    await fill(h);
    // One session holds a deferred message and one locked one: held rows are read at start-up too.
    const held = await accept(h, 2, 's3', 'peekLock');
    await h.broker.settle(held.consumer.token(0), { kind: 'defer' });
    await flush();
    store.rowsRead = 0;
    await h.restart();
    const q = h.ctx.entities.resolve(SQ);
    // The two held rows, read once by themselves and once more on s3's way to its first available message.
    expect(store.rowsRead).toBeLessThanOrEqual(4 + SESSIONS * SESSION_START);
    expect(q.rows.size).toBeLessThanOrEqual(2 + SESSIONS * SESSION_START);
    expect(q.size).toBe(SESSIONS * PER_SESSION);
    expect(q.counts()).toEqual({ active: SESSIONS * PER_SESSION - 2, locked: 1, deferred: 1, scheduled: 0 });
    expect(q.bytes).toBe(h.stored(SQ).reduce((n, r) => n + r.size, 0));
  });

  it('after a restart hands out sessions oldest first and each session\'s messages once, in order, across its front\'s edge', async () => {
    const { h } = await rig();
    await fill(h, 6, 200);
    await h.restart();
    const order: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { consumer, grant, handle } = await accept(h, 1000);
      order.push(grant.sessionId);
      expect(consumer.ids()).toEqual(Array.from({ length: 200 }, (_, j) => `${grant.sessionId}-${j}`));
      handle.detach();
    }
    expect(order).toEqual(['s0', 's1', 's2', 's3', 's4', 's5']);
    const q = h.ctx.entities.resolve(SQ);
    expect(q.size).toBe(0);
    expect(h.stored(SQ)).toHaveLength(0);
  });

  it('keeps a session\'s order when messages arrive while its holder drains it', async () => {
    const { h } = await rig();
    await fill(h, 2, 100);
    const { consumer } = await accept(h, 0, 's1');
    for (let round = 0; round < 10; round++) {
      consumer.credit += 30;
      await h.broker.send(SQ, Array.from({ length: 10 }, (_, j) => msg(`s1-${100 + round * 10 + j}`, { sessionId: 's1' })));
      await flush();
    }
    consumer.credit += 1000;
    await flush(10);
    expect(consumer.ids()).toEqual(Array.from({ length: 200 }, (_, j) => `s1-${j}`));
  });

  it('peeks a session past its front, lists sessions and keeps a deferred message, without loading the store', async () => {
    const { h } = await rig();
    await fill(h, 5, 120);
    await h.advance(1000);
    await h.broker.send(SQ, [msg('s4-late', { sessionId: 's4' })]);
    // s3's state is set before the restart; its time comes back with it.
    const stateAt = h.clock.now();
    await accept(h, 0, 's3', 'peekLock');
    await h.broker.setSessionState(SQ, 's3', new Uint8Array([3]));
    const s2 = h.stored(SQ).filter((r) => r.sessionId === 's2').map((r) => r.seq);
    await h.restart();
    const q2 = h.ctx.entities.resolve(SQ);
    const before = q2.rows.size;
    const deep = s2[100]!;
    expect(q2.rows.has(deep)).toBe(false);
    const peeked = h.broker.peek(SQ, deep, 5, 's2');
    expect(peeked.map((m) => m.row.seq)).toEqual(s2.slice(100, 105));
    expect(new TextDecoder().decode(peeked[0]!.body)).toBe('s2-100');
    expect(h.broker.peek(SQ, 0, 3, 's4').map((m) => new TextDecoder().decode(m.body))).toEqual(['s4-0', 's4-1', 's4-2']);
    expect(q2.rows.size).toBe(before); // a peek loads nothing
    expect(h.broker.listSessions(SQ, DOTNET_MAX_DATE_MS, 0, 100)).toEqual(['s0', 's1', 's2', 's3', 's4']);
    // By time, only a state set since selects a session, not messages enqueued since (in memory or not).
    expect(h.broker.listSessions(SQ, 0, 0, 100)).toEqual(['s3']);
    expect(h.broker.listSessions(SQ, stateAt, 0, 100)).toEqual(['s3']);
    expect(h.broker.listSessions(SQ, stateAt + 1, 0, 100)).toEqual([]);
    expect(q2.size).toBe(601);
  });

  it('purges every message of every session, in memory or not', async () => {
    const { h } = await rig();
    await fill(h, 10, 100);
    await h.restart();
    expect(await h.broker.purge(SQ)).toBe(1000);
    await flush();
    const q = h.ctx.entities.resolve(SQ);
    expect(q.size).toBe(0);
    expect(q.bytes).toBe(0);
    expect(h.stored(SQ)).toHaveLength(0);
    expect(h.broker.listSessions(SQ, DOTNET_MAX_DATE_MS, 0, 100)).toEqual([]);
  });

  it('bounds the front of all sessions together by the entity window', async () => {
    const { h } = await rig();
    const sessions = Math.ceil((WINDOW * 2) / SESSION_WINDOW);
    await fill(h, sessions, SESSION_WINDOW);
    const q = h.ctx.entities.resolve(SQ);
    expect(q.rows.size).toBeLessThanOrEqual(WINDOW + sessions);
    expect(q.size).toBe(sessions * SESSION_WINDOW);
  });
});
