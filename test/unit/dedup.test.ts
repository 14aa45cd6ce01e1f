// Duplicate detection history: a message-id is a duplicate only inside its window, a send that was not stored
// leaves no trace, and passed windows are swept in batches.

import { describe, expect, it } from 'vitest';
import { DuplicateHistory } from '../../src/broker/indexes/dedup.js';

describe('duplicate detection history', () => {
  it('treats a message-id as seen until its window ends, not after', () => {
    const h = new DuplicateHistory();
    h.remember('a', 1_000);
    expect(h.seen('a', 999)).toBe(true);
    expect(h.seen('a', 1_000)).toBe(false);
    expect(h.seen('b', 0)).toBe(false);
  });

  it('forgets an entry only if no later send has renewed it', () => {
    const h = new DuplicateHistory();
    h.remember('a', 1_000);
    h.remember('a', 2_000);
    h.forget('a', 1_000);
    expect(h.seen('a', 1_500)).toBe(true);
    h.forget('a', 2_000);
    expect(h.seen('a', 1_500)).toBe(false);
  });

  it('sweeps passed windows once every 1,024 sends and names what it forgot', () => {
    const h = new DuplicateHistory();
    h.remember('old', 10);
    h.remember('live', 10_000);
    for (let i = 1; i < 1024; i++) expect(h.prune(100)).toEqual([]);
    expect(h.prune(100)).toEqual(['old']);
    expect(h.seen('live', 100)).toBe(true);
    expect(h.prune(100)).toEqual([]);
  });
});
