// Settling a peek-locked message by its lock token (Service Bus "settling receive operations"): complete,
// abandon, defer or dead-letter. The lock must be current (docs/wire-contract.md, "Settlement"); a complete is
// answered only once its delete is durable, so a confirmed complete is never redelivered.

import type { BrokerContext } from './context.js';
import { BrokerError } from './errors.js';
import type { LockManager } from './locks.js';
import type { QueueState } from './queue-state.js';
import { cloneRow, mergeProps, reasonProps, uncountDelivery } from './rows.js';
import type { Transitions } from './transitions.js';
import type { MessageRow, Settlement } from './types.js';

/** Complete, abandon, defer and dead-letter by lock token. */
export class Settlements {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    private readonly transitions: Transitions,
  ) {}

  /** Settles a peek-locked message by lock token; fails with LockLost if the lock is not current. */
  async settle(token: string, s: Settlement, entityPath?: string): Promise<void> {
    const t0 = performance.now();
    this.ctx.journal.assertRunning();
    const { q, row } = this.locks.current(token, entityPath);
    await this.settleLocked(q, row, token, s);
    this.ctx.events.emit('settled', { entity: q.path, kind: s.kind, ms: performance.now() - t0 });
  }

  private async settleLocked(q: QueueState, row: MessageRow, token: string, s: Settlement): Promise<void> {
    const { counters, journal } = this.ctx;
    // Refuse before releasing: a rejected settlement must leave the holder's lock intact.
    if (s.kind === 'deadLetter' && !q.dlq) {
      throw new BrokerError('InvalidOperation', `Cannot dead-letter a message in '${q.path}'.`);
    }
    const prevLock = row.lock;
    this.locks.release(token);
    switch (s.kind) {
      case 'complete':
        q.removeRow(row.seq);
        counters.completed++;
        try {
          await journal.persist([{ op: 'delete', qid: q.id, seq: row.seq }]);
        } catch (err) {
          // Not durable, so not completed: the message stays under the holder's lock (which may retry) and
          // comes back when the lock ends, as the store still has it.
          counters.completed--;
          if (!q.rows.has(row.seq) && prevLock) {
            q.addRow(row);
            this.locks.restore(q, row, token, prevLock.until);
          }
          throw err;
        }
        return;
      case 'abandon':
        mergeProps(row, s.props);
        // A released message was never processed (AMQP 1.0 §3.4.4: released does not increment the delivery
        // count); in a dead-letter queue lockEnded takes the attempt back already.
        if (s.released && q.kind !== 'deadletter') uncountDelivery(row);
        counters.abandoned++;
        return this.transitions.lockEnded(q, row);
      case 'defer':
        mergeProps(row, s.props);
        if (q.kind === 'deadletter') uncountDelivery(row);
        q.setState(row, 'deferred');
        row.deferred = true;
        delete row.lock;
        await journal.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]);
        return;
      case 'deadLetter':
        // Dead-lettering is the receiver's decision, not a failed delivery: the attempt it ends is not counted
        // (a message received once and dead-lettered shows delivery count 0 in the dead-letter queue).
        uncountDelivery(row);
        return this.transitions.deadLetter(q, row, { ...s.props, ...reasonProps(s.reason, s.description) });
    }
  }
}
