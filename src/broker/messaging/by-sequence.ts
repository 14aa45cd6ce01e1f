// The operations that address messages by sequence number (docs/wire-contract.md, "$management operations"):
// peek, receive of deferred messages, and cancelling scheduled messages.

import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from '../runtime/context.js';
import { BrokerError } from '../errors.js';
import type { LockManager } from './locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { cloneRow } from '../indexes/rows.js';
import { putBack, type Transitions } from './transitions.js';
import type { MessageRow, ReceiveMode, StoredMessage } from '../types.js';
import { inBackground, type Plan } from '../runtime/journal.js';
import { MAX_PEEK_MESSAGES, MAX_PEEK_REPLY_BYTES } from '../runtime/limits.js';
import { sessionSeqs, walkSession, walkStored } from '../indexes/walk.js';

/** Peek, receive-deferred and cancel-scheduled. */
export class SequenceOps {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    private readonly transitions: Transitions,
  ) {}

  /**
   * Peeks up to `count` messages from sequence number `from` on, in order, without locking: active, locked,
   * deferred and scheduled ones alike (Service Bus peek-message; docs/wire-contract.md, "$management operations").
   * The answer is bounded (limits.ts): at most MAX_PEEK_MESSAGES messages and MAX_PEEK_REPLY_BYTES of them (one
   * at least), and with a session filter on an entity without sessions, at most MAX_BROWSE_SCAN rows looked at.
   */
  peek(path: string, from: number, count: number, sessionId?: string): StoredMessage[] {
    const { journal, entities, store } = this.ctx;
    journal.assertRunning();
    const q = entities.forReceive(path);
    const out: StoredMessage[] = [];
    const limit = Math.min(count, MAX_PEEK_MESSAGES);
    if (!(limit >= 1)) return out;
    let bytes = 0;
    const take = (row: MessageRow): boolean => {
      const body = store.readBody(q.id, row.seq);
      if (body) {
        out.push({ row: cloneRow(row), body });
        bytes += body.length;
      }
      return out.length < limit && bytes < MAX_PEEK_REPLY_BYTES;
    };
    // A session's messages through the store's session index, in order: no walk past other sessions' messages;
    // memory says which of them still exist and in what state, as below.
    if (sessionId !== undefined && q.sessionTails) {
      walkSession(store, q, sessionId, from, take);
      return out;
    }
    // Without a store behind it (unit tests) a session-enabled entity holds every row in memory.
    if (sessionId !== undefined && q.sessionful) {
      for (const seq of sessionSeqs(q, sessionId, from, limit)) {
        const row = q.rows.get(seq);
        if (row && !take(row)) break;
      }
      return out;
    }
    // The store walks rows in sequence order; memory says which of them still exist and in what state (a
    // complete not yet committed is already gone here).
    walkStored(store, q, from, (row) => (sessionId !== undefined && row.sessionId !== sessionId) || take(row));
    return out;
  }

  /**
   * Fetches deferred messages by sequence number: under a new lock in peek-lock mode, deleted in
   * receive-and-delete mode. A number that is not a deferred message fails with MessageNotFound.
   */
  async receiveDeferred(path: string, seqs: number[], mode: ReceiveMode): Promise<StoredMessage[]> {
    const { journal, entities, clock } = this.ctx;
    journal.assertRunning();
    const q = entities.forReceive(path);
    const now = clock.now();
    const rows = seqs.map((seq) => {
      const row = q.rows.get(seq);
      // "When a client tries to retrieve a deferred message, it's checked for expired condition and moved
      // to a dead-letter queue if it's already expired" (Service Bus message-deferral docs).
      if (row?.state === 'deferred' && q.hasExpired(row, now)) {
        inBackground(this.transitions.expire(q, row));
      }
      if (!row || row.state !== 'deferred' || !q.rows.has(seq)) {
        throw new BrokerError('MessageNotFound', `Failed to retrieve the deferred message with sequence number ${seq}.`);
      }
      return row;
    });
    return journal.run(this.receiveDeferredPlan(q, rows, mode));
  }

  // The claim is the take itself: each row leaves the deferred state at once (locked in peek-lock mode, removed in
  // receive-and-delete), so a second fetch of the same number fails with MessageNotFound while the write is in
  // flight; if it fails, every row is put back deferred, with its count, as the store still holds it.
  /** The plan of a receive of deferred messages: lock or remove each row now, answer once durable. */
  private receiveDeferredPlan(q: QueueState, rows: MessageRow[], mode: ReceiveMode): Plan<StoredMessage[]> {
    const ops: StoreOp[] = [];
    const out: StoredMessage[] = [];
    const taken: { row: MessageRow; was: MessageRow; token?: string }[] = [];
    for (const row of rows) {
      const body = this.ctx.store.readBody(q.id, row.seq)!;
      const was = cloneRow(row);
      if (mode === 'receiveAndDelete') {
        q.removeRow(row.seq);
        ops.push({ op: 'delete', qid: q.id, seq: row.seq });
        taken.push({ row, was });
      } else {
        taken.push({ row, was, token: this.locks.take(q, row) });
        ops.push({ op: 'put', qid: q.id, row: cloneRow(row) });
      }
      out.push({ row: cloneRow(row), body });
    }
    return {
      ops,
      applied: () => out,
      undo: () => {
        for (const { row, was, token } of taken) {
          if (token !== undefined) this.locks.release(token);
          putBack(this.ctx, q, row, was);
        }
      },
    };
  }

  /**
   * Cancels scheduled messages by the sequence numbers the send reported (for a topic, the topic's number,
   * which every subscription copy carries). An unknown number fails with MessageNotFound.
   */
  async cancelScheduled(path: string, seqs: number[]): Promise<void> {
    return this.ctx.journal.run(this.cancelPlan(this.findScheduled(path, seqs)));
  }

  // The claim is the rows' removal: the schedule's deadline finds no row, a second cancel finds nothing scheduled.
  // If the write fails they are put back scheduled, their deadlines armed again (Service Bus: a cancel that failed
  // leaves the message scheduled).
  /** The plan of a cancel-scheduled: remove the rows now, put them back scheduled if the delete is not durable. */
  private cancelPlan(found: [QueueState, number][]): Plan {
    const taken: [QueueState, MessageRow][] = [];
    for (const [q, seq] of found) {
      const row = q.rows.get(seq);
      if (!row) continue;
      q.removeRow(seq);
      taken.push([q, row]);
    }
    return {
      ops: taken.map(([q, row]) => ({ op: 'delete' as const, qid: q.id, seq: row.seq })),
      undo: () => {
        for (const [q, row] of taken) putBack(this.ctx, q, row, cloneRow(row));
      },
    };
  }

  /** The scheduled messages `seqs` name in `path` (a topic's: in each subscription); MessageNotFound if one is not scheduled. */
  findScheduled(path: string, seqs: number[]): [QueueState, number][] {
    const { journal, entities } = this.ctx;
    journal.assertRunning();
    const target = entities.forSend(path);
    const found: [QueueState, number][] = [];
    for (const seq of seqs) {
      const hits: [QueueState, number][] =
        target.kind === 'topic'
          ? target.subscriptions.flatMap((sub) =>
              [...sub.rows.values()].filter((r) => r.topicSeq === seq && r.state === 'scheduled').map((r): [QueueState, number] => [sub, r.seq]),
            )
          : target.rows.get(seq)?.state === 'scheduled'
            ? [[target, seq]]
            : [];
      if (!hits.length) throw new BrokerError('MessageNotFound', `The scheduled message with sequence number ${seq} was not found.`);
      found.push(...hits);
    }
    return found;
  }
}
