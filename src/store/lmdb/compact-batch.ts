// The log records LMDB applies in one transaction, less the ops a later op of the same batch makes pointless
// (docs/durability.md, "LMDB behind the log"). LMDB commits a batch as one transaction, so no reader and no crash
// ever sees its intermediate states: only its end state counts, and dropping an op whose effect a later op of the
// batch undoes or overwrites leaves that end state unchanged. Under load most messages are locked, settled or sent
// and completed within one apply interval: a lock's put followed by the complete's delete, a lapse's put followed by
// the re-lock's, a history image written twice, a message sent and completed before LMDB ever saw it. Each such op
// dropped is a row encoded, a B-tree page touched and written less.
//
// The rules, each exact for any state the batch starts from (test/store/compact-batch.test.ts checks the end states
// against the full batch on random op sequences):
// - a history image is dropped when a later op of the batch writes that message's history again (another image, the
//   row's delete, which removes it, or its entity's clear);
// - a put without a body and naming no shared body is dropped when the message's next kept op is a delete, a clear,
//   or another such put: that put alone decides the row, its held entry and its counters (which only add up), and
//   neither put moves a reference count;
// - a put with a body is dropped when the message's next kept op is a delete or a clear, the put is the batch's
//   first op on that message, and LMDB holds no row for it (`exists`): a message stored and removed in one batch.
// Ops on a row naming a shared body (a topic's copy) are kept: a reference count taken later could let a shared
// body be freed at the end of an earlier record, where the full batch would have kept it.

import type { StoreOp } from '../store.js';

/** Whether LMDB holds a row for this message now (read in the batch's own transaction, before it is applied). */
export type RowExists = (qid: number, seq: number) => boolean;

/** The next kept op on one message's row, by position in the batch (higher is later). */
interface Next {
  pos: number;
  kind: 'delete' | 'put';
  /** A put with neither a body nor a shared body's reference. */
  bodyless?: boolean;
}

/** Each record's ops less those a later op of the batch makes pointless; see the file comment for the rules. */
export function compactBatch(records: readonly { ops: StoreOp[] }[], exists: RowExists): StoreOp[][] {
  const nextRow = new Map<string, Next>();
  /** Messages whose history a later op of the batch writes (an image, the row's delete). */
  const historyLater = new Set<string>();
  const clearedAt = new Map<number, number>();
  /** Position of the earliest op seen so far (the scan goes backwards) on each message's row. */
  const firstRowOp = new Map<string, number>();
  /** Puts with a body that may go if LMDB holds no row for them: where they are (record, index) and their position. */
  const maybe: { pos: number; r: number; i: number; qid: number; seq: number }[] = [];
  const out: (StoreOp | undefined)[][] = records.map((r) => r.ops.slice());
  let pos = 0;
  for (const r of records) pos += r.ops.length;
  for (let r = records.length - 1; r >= 0; r--) {
    const ops = out[r]!;
    for (let i = ops.length - 1; i >= 0; i--) {
      const op = ops[i]!;
      pos--;
      switch (op.op) {
        case 'put': {
          const k = key(op.qid, op.row.seq);
          firstRowOp.set(k, pos);
          if (op.row.bodyRef) {
            nextRow.set(k, { pos, kind: 'put' });
            break;
          }
          const next = nextOf(nextRow.get(k), clearedAt.get(op.qid));
          if (op.body === undefined) {
            if (next && (next.kind === 'delete' || next.bodyless)) {
              ops[i] = undefined;
              break;
            }
            nextRow.set(k, { pos, kind: 'put', bodyless: true });
          } else {
            if (next?.kind === 'delete') maybe.push({ pos, r, i, qid: op.qid, seq: op.row.seq });
            nextRow.set(k, { pos, kind: 'put' });
          }
          break;
        }
        case 'delete': {
          const k = key(op.qid, op.seq);
          firstRowOp.set(k, pos);
          nextRow.set(k, { pos, kind: 'delete' });
          historyLater.add(k);
          break;
        }
        case 'history': {
          const k = key(op.qid, op.seq);
          if (historyLater.has(k) || clearedAt.has(op.qid)) {
            ops[i] = undefined;
            break;
          }
          historyLater.add(k);
          break;
        }
        case 'clear':
          clearedAt.set(op.qid, pos);
          break;
        default:
          break;
      }
    }
  }
  // A put with a body goes only as the first op on a message LMDB does not hold: a new message, stored and removed
  // within the batch. Its position is then the message's first, so no decision about an earlier op rested on it.
  for (const m of maybe) {
    const k = key(m.qid, m.seq);
    if (firstRowOp.get(k) !== m.pos || exists(m.qid, m.seq)) continue;
    out[m.r]![m.i] = undefined;
  }
  return out.map((ops) => ops.filter((op): op is StoreOp => op !== undefined));
}

// The next kept op on a row: its own next op, or its entity's clear (which acts as a delete), whichever comes first.
function nextOf(row: Next | undefined, cleared: number | undefined): Next | undefined {
  if (cleared !== undefined && (!row || cleared < row.pos)) return { pos: cleared, kind: 'delete' };
  return row;
}

function key(qid: number, seq: number): string {
  return `${qid}:${seq}`;
}
