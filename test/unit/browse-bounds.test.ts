// The bounds of a browse and a peek (src/broker/runtime/limits.ts, walk.ts) on a memory store: a view whose messages lie
// behind more than MAX_BROWSE_SCAN others stops there and says where to go on, a view of held states reads memory
// only, and a peek never answers more than MAX_PEEK_MESSAGES nor walks past MAX_BROWSE_SCAN rows for a session.

import { describe, expect, it } from 'vitest';
import { MAX_BROWSE_SCAN, MAX_PEEK_MESSAGES } from '../../src/broker/runtime/limits.js';
import type { BrowsePage } from '../../src/broker/operations/operator.js';
import type { MessageRow } from '../../src/broker/types.js';
import { Harness, flush, msg } from './helpers.js';

const BEHIND = MAX_BROWSE_SCAN + 2_000;

async function scheduledFront(): Promise<Harness> {
  const h = await Harness.start();
  const due = h.clock.now() + 3_600_000;
  await h.broker.send('q', Array.from({ length: BEHIND }, (_, i) => msg(`s${i}`, { scheduledAt: due })));
  await h.send('q', 'active-one');
  return h;
}

describe('bounded browses', () => {
  it('stops an active view after MAX_BROWSE_SCAN rows and goes on from next', async () => {
    const h = await scheduledFront();
    const first = h.broker.browsePage('q', { state: ['active', 'locked'], count: 10 });
    expect(first).toEqual({ messages: [], next: MAX_BROWSE_SCAN + 1 });
    const second = h.broker.browsePage('q', { state: ['active', 'locked'], count: 10, from: first.next });
    expect(second.next).toBeUndefined();
    expect(second.messages.map((m) => m.row.messageId)).toEqual(['active-one']);
  });

  it('reads a held view from memory, in sequence order, whatever lies in front', async () => {
    const h = await scheduledFront();
    const page = h.broker.browsePage('q', { state: 'scheduled', from: 500, count: 3 });
    expect(page.next).toBeUndefined();
    expect(page.messages.map((m) => m.row.seq)).toEqual([500, 501, 502]);
  });

  it('caps a peek at MAX_PEEK_MESSAGES and a session-filtered peek at MAX_BROWSE_SCAN rows looked at', async () => {
    const h = await scheduledFront();
    expect(h.broker.peek('q', 1, Number.MAX_SAFE_INTEGER)).toHaveLength(MAX_PEEK_MESSAGES);
    expect(h.broker.peek('q', 1, 10, 'no-such-session')).toEqual([]);
    await h.broker.send('q', [msg('in-session', { sessionId: 's' })]);
    // Behind more than MAX_BROWSE_SCAN rows of other sessions: not found from the front, found from near it.
    expect(h.broker.peek('q', 1, 10, 's')).toEqual([]);
    expect(h.broker.peek('q', BEHIND, 10, 's').map((m) => m.row.messageId)).toEqual(['in-session']);
  });
});

/** Counts the rows memory hands out and the stored keys the store hands out, from now on, for entity `q`. */
function countLooks(h: Harness): { looked: number } {
  const seen = { looked: 0 };
  const rows = h.ctx.entities.resolve('q').rows;
  const values = rows.values.bind(rows);
  rows.values = function* (): MapIterator<MessageRow> {
    for (const row of values()) {
      seen.looked++;
      yield row;
    }
  } as typeof rows.values;
  const seqsFrom = h.store.seqsFrom.bind(h.store);
  h.store.seqsFrom = function* (qid: number, from: number): Generator<number> {
    for (const seq of seqsFrom(qid, from)) {
      seen.looked++;
      yield seq;
    }
  };
  return seen;
}

describe('bounded held views (locked, deferred, scheduled)', () => {
  it('looks at no more than MAX_BROWSE_SCAN rows per page and goes on from next', async () => {
    const h = await scheduledFront();
    h.attach('q', 1); // locks 'active-one', behind BEHIND scheduled rows
    await flush();
    const seen = countLooks(h);
    const pages: BrowsePage[] = [];
    let from: number | undefined = 1;
    while (from !== undefined && pages.length < 10) {
      seen.looked = 0;
      const page = h.broker.browsePage('q', { state: 'locked', count: 10, from });
      expect(seen.looked).toBeLessThanOrEqual(MAX_BROWSE_SCAN + 1);
      pages.push(page);
      from = page.next;
    }
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.flatMap((p) => p.messages.map((m) => m.row.messageId))).toEqual(['active-one']);
  });
});
