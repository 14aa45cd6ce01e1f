// Batch delete's bound (issue 38 item 4): a call walks the entity's stored keys as browse does, looking at no more
// than MAX_BROWSE_SCAN of them, and starts at the first available message, so held (locked, deferred, scheduled)
// rows at the front of a queue cost nothing and rows held between two available ones cost at most the bound.

import { describe, expect, it } from 'vitest';
import { MAX_BROWSE_SCAN } from '../../src/broker/runtime/limits.js';
import { Harness, msg } from './helpers.js';

const HELD = MAX_BROWSE_SCAN + 2_000;

/** Counts the stored keys every walk of the store pulls from now on. */
function countKeys(h: Harness): { keys: number } {
  const seen = { keys: 0 };
  const store = h.store;
  const seqsFrom = store.seqsFrom.bind(store);
  store.seqsFrom = function* (qid: number, from: number): Generator<number> {
    for (const seq of seqsFrom(qid, from)) {
      seen.keys++;
      yield seq;
    }
  };
  return seen;
}

async function scheduled(h: Harness, n: number): Promise<void> {
  const due = h.clock.now() + 3_600_000;
  await h.broker.send('q', Array.from({ length: n }, (_, i) => msg(`s${i}`, { scheduledAt: due })));
}

describe('bounded batch delete', () => {
  it('skips held rows at the front of the queue without walking them', async () => {
    const h = await Harness.start();
    await scheduled(h, HELD);
    await h.send('q', 'active-one');
    await h.advance(1);
    const seen = countKeys(h);
    expect(await h.broker.deleteMessages('q', { count: 10 })).toBe(1);
    expect(seen.keys).toBeLessThanOrEqual(2);
    expect(h.broker.peek('q', 1, 1)[0]?.row.state).toBe('scheduled');
  });

  it('looks at no more than MAX_BROWSE_SCAN keys when held rows lie between two available ones', async () => {
    const h = await Harness.start();
    await h.send('q', 'a1');
    await scheduled(h, HELD);
    await h.send('q', 'a2');
    await h.advance(1);
    const seen = countKeys(h);
    expect(await h.broker.deleteMessages('q', { count: 10 })).toBe(1);
    expect(seen.keys).toBeLessThanOrEqual(MAX_BROWSE_SCAN + 1);
    // The next call starts at the first available message, behind the held ones: it makes progress.
    seen.keys = 0;
    expect(await h.broker.deleteMessages('q', { count: 10 })).toBe(1);
    expect(seen.keys).toBeLessThanOrEqual(2);
    expect(h.stored('q').filter((r) => r.state === 'active')).toEqual([]);
  });
});
