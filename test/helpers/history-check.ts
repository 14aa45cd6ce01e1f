// Issue 39's crash invariant, read straight from a store the broker left (after kill -9 or a power cut): a history
// is never ahead of its message, nor behind it. An attempt is written in the same transaction as the change that
// ends it, so the last kept attempt's number, less the attempts that gave their delivery back, is the row's count;
// a row locked at the crash may have its open attempt unwritten (it lives in memory until it ends or is renewed),
// one behind, which start-up then writes as ended by the restart. `historyDisagreement` is the rule for any stored
// row (abandons, dead-letters, releases, restarts, redrives), which the power-cut store check applies to every row and
// `checkHistories` (the kill -9 workload's) to a queue's rows. A row still held by a lock taken before an earlier
// restart has its last attempt already closed as `brokerRestarted` under that same lock: not one behind.

import type { DeliveryHistory } from '../../src/store/history.js';
import type { MessageRow } from '../../src/store/row.js';
import type { Store } from '../../src/store/store.js';

/** What the check found: messages with a history, and those whose history disagrees with their row (and why). */
export interface HistoryCheck {
  withHistory: number;
  disagreeing: { seq: number; why: string }[];
}

/**
 * Compares each stored row of the queue `qid` with its history by the general rule (`historyDisagreement`); a row
 * without one may only be a first attempt still open (counted, locked, unwritten) or never delivered.
 */
export function checkHistories(store: Store, qid: number): HistoryCheck {
  const out: HistoryCheck = { withHistory: 0, disagreeing: [] };
  for (const row of store.load(qid).rows) {
    const h = store.readHistory(qid, row.seq);
    if (!h) {
      const unwritten = row.state === 'locked' ? 1 : 0;
      if (row.deliveryCount !== unwritten) out.disagreeing.push({ seq: row.seq, why: `row ${row.seq} (${row.state}, delivery count ${row.deliveryCount}) has no history` });
      continue;
    }
    out.withHistory++;
    const why = historyDisagreement(row, h, false);
    if (why) out.disagreeing.push({ seq: row.seq, why });
  }
  return out;
}

// The general form, for any stored row (docs/testing.md, "Power-cut tests"): what each way an attempt ends does to the
// count, as the broker's settlement and transitions do it. Deliveries are counted when a lock is taken; an explicit
// dead-letter, an undelivered transfer and (in a queue) an AMQP release take the attempt back, and in a dead-letter
// queue every end but a complete does. A released attempt outside a dead-letter queue may also be a session lock
// given up, which counts, so it bounds the count on both sides. A redrive or resubmit starts the count again.
const ALWAYS_UNCOUNTED = new Set(['deadLettered', 'notDelivered']);
const MOVES = new Set(['deadLettered', 'redriven', 'resubmitted']);

/**
 * Where the stored history `h` of `row` disagrees with it, or undefined: the history is never ahead of the row (no
 * more counted attempts than its delivery count, no attempt open while the row is not locked, no completed attempt
 * on a row still stored, no dead-letter attempt without its move) and behind it by at most the open attempt that
 * lives only in memory (a row locked at the cut).
 */
export function historyDisagreement(row: MessageRow, h: DeliveryHistory, inDeadLetterQueue: boolean): string | undefined {
  const at = `row ${row.seq} (${row.messageId}, ${row.state}, delivery count ${row.deliveryCount})`;
  const attempts = h.attempts;
  const last = attempts[attempts.length - 1];
  const open = attempts.filter((a) => !a.end);
  if (open.length > 1 || (open.length === 1 && open[0] !== last)) return `${at}: attempts ${open.map((a) => a.n).join(', ')} open at once`;
  if (last && !last.end && row.state !== 'locked') return `${at}: its history has attempt ${last.n} open, the row holds no lock`;
  const gone = attempts.find((a) => a.end?.how === 'completed' || a.end?.how === 'receivedAndDeleted');
  if (gone) return `${at}: attempt ${gone.n} ended ${gone.end!.how}, yet the row is stored`;
  for (const a of attempts) {
    if (a.end?.how === 'deadLettered' && !h.events.some((e) => e.kind === 'deadLettered' && e.at >= a.end!.at)) return `${at}: attempt ${a.n} ended dead-lettered, no dead-letter move follows`;
  }
  const moves = h.events.filter((e) => MOVES.has(e.kind));
  const lastMove = moves[moves.length - 1];
  if (inDeadLetterQueue && lastMove && lastMove.kind !== 'deadLettered') return `${at}: in a dead-letter queue, its history's last move is ${lastMove.kind}`;
  if (inDeadLetterQueue && lastMove && String(lastMove.detail ?? '') !== String(row.props?.DeadLetterReason ?? '')) {
    return `${at}: its history names dead-letter reason '${String(lastMove.detail ?? '')}', the row '${String(row.props?.DeadLetterReason ?? '')}'`;
  }
  if (h.dropped) return undefined; // the dropped attempts' ends are not known
  // The count since the last redrive or resubmit (both start it again); only the last stretch is in this entity.
  const since = [...moves].reverse().find((e) => e.kind !== 'deadLettered')?.at;
  const restartHolds = row.state === 'locked' && last?.end?.how === 'brokerRestarted' && last.end.lockedUntil === row.lock?.until;
  let lo = 0;
  let hi = 0;
  for (const a of attempts) {
    const endedBefore = (t: number): boolean => a.lockedAt < t || (a.end !== undefined && a.end.at <= t);
    if (since !== undefined && endedBefore(since)) continue;
    const here = !lastMove || !endedBefore(lastMove.at);
    const how = a.end?.how;
    let n: [number, number];
    if (how === undefined) n = [1, 1];
    else if (ALWAYS_UNCOUNTED.has(how)) n = [0, 0];
    else if (here && inDeadLetterQueue) n = a === last && restartHolds ? [1, 1] : [0, 0];
    else if (how === 'released') n = [0, 1];
    else n = [1, 1];
    lo += n[0];
    hi += n[1];
  }
  // A row locked under a lock its history has not recorded: that attempt is open in memory only.
  if (row.state === 'locked' && last?.end && !restartHolds) hi++;
  if (lo > row.deliveryCount) return `${at}: its history counts ${lo} deliveries (ahead of the row), last attempt ${last?.n ?? 0} ${last?.end?.how ?? 'open'}`;
  if (hi < row.deliveryCount) return `${at}: its history counts at most ${hi} deliveries (behind by more than an open attempt), last attempt ${last?.n ?? 0} ${last?.end?.how ?? 'open'}`;
  return undefined;
}
