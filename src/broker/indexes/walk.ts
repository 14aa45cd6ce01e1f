// Bounded walks over one entity's stored messages, for peek and the admin API's views (issue 25: no request walks
// an entity on the event loop). A walk over the store's keys looks at no more than MAX_BROWSE_SCAN of them and
// says where it stopped; a walk for held rows (every locked, deferred and scheduled row is in memory, see
// cold-tail.ts) never reads a row from the store, and looks at no more than MAX_BROWSE_SCAN rows or keys either.

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
 * `read` finds a key's row: by default from memory or, without loading it, from the cold tail.
 */
export function walkStored(
  store: Store,
  q: QueueState,
  from: number,
  visit: (row: MessageRow) => boolean,
  budget = MAX_BROWSE_SCAN,
  read: (seq: number) => MessageRow | undefined = (seq) => q.peekRow(seq),
): WalkEnd {
  let looked = 0;
  for (const seq of store.seqsFrom(q.id, from)) {
    if (looked++ >= budget) return { next: seq };
    const row = read(seq);
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
 * As walkStored, for a view of held states only (locked, deferred, scheduled), looking at no more than `budget`
 * rows or keys. Every held row is in memory, so when memory holds no more than `budget` rows the walk is one pass
 * over them (then sorted), which finds held rows anywhere in a deep queue in one request. When memory holds more,
 * it walks the store's keys in order instead, each looked up in memory only (a key memory lacks is a cold,
 * available row, never read) and says where it stopped, as every other view does.
 */
export function walkHeld(store: Store, q: QueueState, states: readonly MessageState[], from: number, visit: (row: MessageRow) => boolean, budget = MAX_BROWSE_SCAN): WalkEnd {
  const want = new Set(states);
  if (q.rows.size > budget) return walkStored(store, q, from, (row) => !want.has(row.state) || visit(row), budget, (seq) => q.rows.get(seq));
  const picked: MessageRow[] = [];
  for (const row of q.rows.values()) if (row.seq >= from && want.has(row.state)) picked.push(row);
  for (const row of picked.sort((a, b) => a.seq - b.seq)) if (!visit(row)) break;
  return {};
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
