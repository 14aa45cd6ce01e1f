// Settling a peek-locked message by its lock token (Service Bus "settling receive operations"): complete,
// abandon, defer or dead-letter. The lock must be current (docs/wire-contract.md, "Settlement"); a complete is
// answered only once its delete is durable, so a confirmed complete is never redelivered.

import type { BrokerContext } from '../runtime/context.js';
import { BrokerError } from '../errors.js';
import type { LockManager } from './locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { cloneRow, mergeProps, reasonProps, uncountDelivery } from '../indexes/rows.js';
import type { Transitions } from './transitions.js';
import type { MessageRow, Settlement } from '../types.js';

/** Complete, abandon, defer and dead-letter by lock token. */
export class Settlements {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    private readonly transitions: Transitions,
    /** Told of each complete as its delete joins this task's write (the deliverer's lock ahead). */
    private readonly completing?: (token: string) => void,
  ) {}

  /** Settles a peek-locked message by lock token; fails with LockLost if the lock is not current. */
  async settle(token: string, s: Settlement, entityPath?: string): Promise<void> {
    const t0 = performance.now();
    this.ctx.journal.assertRunning();
    const ref = this.locks.find(token);
    // A settle by a lapsed holder fails as before (MessageLockLost); the history records it as late.
    if (!ref) this.ctx.history.late(token, s.kind);
    const { q, row } = this.locks.current(token, entityPath);
    const settled = this.settleLocked(q, row, token, s);
    // Issue 37: a credit-1 receiver's next lock joins this complete's write (one flush, not two per message).
    if (s.kind === 'complete') this.completing?.(token);
    await settled;
    this.ctx.events.emit('settled', { entity: q.path, kind: s.kind, ms: performance.now() - t0 });
  }

  private async settleLocked(q: QueueState, row: MessageRow, token: string, s: Settlement): Promise<void> {
    const { counters, journal } = this.ctx;
    // Refuse before releasing: a rejected settlement must leave the holder's lock intact.
    if (s.kind === 'deadLetter' && !q.dlq) {
      throw new BrokerError('InvalidOperation', `Cannot dead-letter a message in '${q.path}'.`);
    }
    // What the store holds: a settlement whose write fails puts the row back to it, and the holder's token is
    // honoured again, so the holder may retry (docs/durability.md, "Disk full and disk errors").
    const was = cloneRow(row);
    this.locks.release(token);
    this.ctx.history.settling(q.id, row.seq, s);
    const reHonour = (err: unknown): never => {
      if (row.lock?.token === token && q.rows.get(row.seq) === row) this.locks.restore(q, row, token, row.lock.until);
      throw err;
    };
    switch (s.kind) {
      case 'complete':
        q.removeRow(row.seq);
        // Not durable, so not completed: the message stays under the holder's lock and comes back when it ends.
        await journal
          .run({
            ops: [{ op: 'delete', qid: q.id, seq: row.seq }],
            applied: () => void counters.completed++,
            undo: () => this.transitions.putBack(q, row, was),
          })
          .catch(reHonour);
        return;
      case 'abandon':
        mergeProps(row, s.props);
        // A released message was never processed (AMQP 1.0 §3.4.4: released does not increment the delivery
        // count); in a dead-letter queue lockEnded takes the attempt back already.
        if (s.released && q.kind !== 'deadletter') uncountDelivery(row);
        counters.abandoned++;
        return this.transitions.lockEnded(q, row, was).catch((err: unknown) => {
          counters.abandoned--;
          return reHonour(err);
        });
      case 'defer': {
        delete row.lock;
        const next = cloneRow(row);
        mergeProps(next, s.props);
        if (q.kind === 'deadletter') uncountDelivery(next);
        next.state = 'deferred';
        next.deferred = true;
        await journal
          .run({
            ops: [{ op: 'put', qid: q.id, row: cloneRow(next) }],
            applied: () => {
              if (q.rows.get(row.seq) !== row) return; // purged meanwhile
              mergeProps(row, s.props);
              row.deliveryCount = next.deliveryCount;
              row.deferred = true;
              q.setState(row, 'deferred');
            },
            undo: () => this.transitions.putBack(q, row, was),
          })
          .catch(reHonour);
        return;
      }
      case 'deadLetter':
        // Dead-lettering is the receiver's decision, not a failed delivery: the attempt it ends is not counted
        // (a message received once and dead-lettered shows delivery count 0 in the dead-letter queue).
        uncountDelivery(row);
        return this.transitions
          .deadLetter(q, row, { ...s.props, ...reasonProps(s.reason, s.description) }, was)
          .catch(reHonour);
    }
  }
}
