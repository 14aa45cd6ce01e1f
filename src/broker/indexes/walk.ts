// Bounded walks over one entity's stored messages, for peek and the admin API's views (issue 25: no request walks
// an entity on the event loop). A walk over the store's keys looks at no more than MAX_BROWSE_SCAN of them and
// says where it stopped; a walk over the rows held in memory (every locked, deferred and scheduled row is there,
// see cold-tail.ts) never touches the store at all.

import type { Store } from '../../store/store.js';
import { MAX_BROWSE_SCAN } from '../runtime/limits.js';
import type { QueueState } from './queue-state.js';
import type { MessageRow, MessageState } from '../types.js';

/** Where a bounded walk stopped: `next` is the sequence number to go on from, absent when it reached the end. */
export interface WalkEnd {
  next?: number;
}

/**
 * Visits the stored rows of `q` from sequence number `from` on, in order, until `visit` returns false, the entity
 * ends, or `budget` keys have been looked at (then `next` names the first key not looked at). A row memory has
 * already removed (its delete not yet committed) is passed over, as every other reader of the entity sees it.
 */
export function walkStored(store: Store, q: QueueState, from: number, visit: (row: MessageRow) => boolean, budget = MAX_BROWSE_SCAN): WalkEnd {
  let looked = 0;
  for (const seq of store.seqsFrom(q.id, from)) {
    if (looked++ >= budget) return { next: seq };
    const row = q.peekRow(seq);
    if (row && !visit(row)) return {};
  }
  return {};
}

/** As walkStored, over one session's stored rows only (the store's session index). */
export function walkSession(store: Store, q: QueueState, sessionId: string, from: number, visit: (row: MessageRow) => boolean, budget = MAX_BROWSE_SCAN): WalkEnd {
  let looked = 0;
  for (const seq of store.sessionSeqsFrom(q.id, sessionId, from)) {
    if (looked++ >= budget) return { next: seq };
    const row = q.peekRow(seq);
    if (row && !visit(row)) return {};
  }
  return {};
}

/**
 * A sequence number no available row of `q` lies below, for a walk that wants available rows only (batch delete):
 * every available row in memory is in the ready heap and every cold one is at or above the tail's `from`. Stale
 * heap entries at its top (rows deleted, locked or deferred since) are dropped on the way, as `takeReady` drops
 * them. Undefined when `q` has no available row at all; 1 on a session-enabled entity, whose available rows sit in
 * per-session heaps.
 */
export function firstAvailable(q: QueueState): number | undefined {
  if (q.sessionful) return 1;
  let ready = q.ready.peek();
  while (ready !== undefined && q.rows.get(ready)?.state !== 'active') {
    q.ready.pop();
    ready = q.ready.peek();
  }
  const cold = q.cold && q.cold.count > 0 ? q.cold.from : undefined;
  if (ready === undefined) return cold;
  return cold === undefined ? ready : Math.min(ready, cold);
}

/** States whose rows are always in memory (a deep queue's cold tail holds available rows only). */
const HELD: ReadonlySet<MessageState> = new Set(['locked', 'deferred', 'scheduled']);

/** True when every row of these states is held in memory, so a view of them need not read the store's keys. */
export function heldOnly(states: readonly MessageState[]): boolean {
  return states.length > 0 && states.every((s) => HELD.has(s));
}

/**
 * The `count` lowest-numbered rows in memory from `from` on whose state is one of `states`, in sequence order.
 * Memory keeps rows in arrival order, not sequence order, so the walk keeps the best candidates and sorts them;
 * it costs one pass over the rows in memory (the window of available rows plus the held ones).
 */
export function heldRows(q: QueueState, states: readonly MessageState[], from: number, count: number): MessageRow[] {
  const want = new Set(states);
  let picked: MessageRow[] = [];
  for (const row of q.rows.values()) {
    if (row.seq < from || !want.has(row.state)) continue;
    picked.push(row);
    if (picked.length >= count * 4 + 64) picked = lowest(picked, count);
  }
  return lowest(picked, count);
}

/** The `count` rows of `rows` with the lowest sequence numbers, in order. */
function lowest(rows: MessageRow[], count: number): MessageRow[] {
  return rows.sort((a, b) => a.seq - b.seq).slice(0, count);
}

/** Sequence numbers of one session's stored messages from `from` on, the `count` lowest, in order. */
export function sessionSeqs(q: QueueState, sessionId: string, from: number, count: number): number[] {
  const s = q.sessions.get(sessionId);
  if (!s) return [];
  let picked: number[] = [];
  for (const seq of s.stored) {
    if (seq < from) continue;
    picked.push(seq);
    if (picked.length >= count * 4 + 64) picked = picked.sort((a, b) => a - b).slice(0, count);
  }
  return picked.sort((a, b) => a - b).slice(0, count);
}
