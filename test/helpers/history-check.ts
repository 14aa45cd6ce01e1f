// Issue 39's crash invariant, read straight from a store the broker left (after kill -9 or a power cut): a history
// is never ahead of its message, nor behind it. An attempt is written in the same transaction as the change that
// ends it, so the last kept attempt's number, less the attempts that gave their delivery back, is the row's count;
// a row locked at the crash may have its open attempt unwritten (it lives in memory until it ends or is renewed),
// one behind, which start-up then writes as ended by the restart.

import type { Store } from '../../src/store/store.js';

/** What the check found: messages with a history, and those whose history disagrees with their row. */
export interface HistoryCheck {
  withHistory: number;
  disagreeing: { seq: number; deliveryCount: number; lastAttempt: number; uncounted: number }[];
}

/** Compares each stored row of `qid` with its history (rows of queues whose attempts are only taken and expired or completed). */
export function checkHistories(store: Store, qid: number): HistoryCheck {
  const out: HistoryCheck = { withHistory: 0, disagreeing: [] };
  for (const row of store.load(qid).rows) {
    const h = store.readHistory(qid, row.seq);
    const openUnwritten = row.state === 'locked' && !(h && h.attempts.length && !h.attempts[h.attempts.length - 1]!.end) ? 1 : 0;
    if (h) out.withHistory++;
    if (h?.dropped) continue; // the dropped attempts' ends are not known; the workloads stay below the cap
    const last = h?.attempts[h.attempts.length - 1]?.n ?? 0;
    // An attempt that never reached a client, or was released, gives its delivery back.
    const uncounted = h?.attempts.filter((a) => a.end?.how === 'notDelivered' || a.end?.how === 'released').length ?? 0;
    if (last - uncounted + openUnwritten !== row.deliveryCount) out.disagreeing.push({ seq: row.seq, deliveryCount: row.deliveryCount, lastAttempt: last, uncounted });
  }
  return out;
}
