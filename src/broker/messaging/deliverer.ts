// Handing one message to one consumer, in either receive mode. The store is told first and the transfer goes
// out only once it has synced: a peek-lock delivery after its lock is committed (so a crash after the client saw
// the message still has the delivery counted), a receive-and-delete delivery after its delete is committed.
// Each consumer's credit is the one figure its link pushes (link credit, session window, outgoing budget and
// unsettled cap already combined); a delivery is "reserved" against it when the message is taken, so a pump
// never hands out more than the link can take and never asks the link for room.

import type { BrokerContext } from '../runtime/context.js';
import type { LockManager } from './locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { cloneRow } from '../indexes/rows.js';
import type { Consumer, MessageRow } from '../types.js';
import { inBackground } from '../runtime/journal.js';
import { putBack } from './transitions.js';
import { LockAhead } from './lock-ahead.js';

/** Delivers messages to consumers within the credit each one pushed. */
export class Deliverer {
  /** Credit each consumer pushed, less the deliveries reserved for it since (absent: none). */
  private readonly credit = new Map<Consumer, number>();
  /** Locks taken ahead for credit-1 receivers, held until their credit comes (lock-ahead.ts). */
  private readonly ahead: LockAhead;

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {
    this.ahead = new LockAhead(ctx, locks, {
      room: (c) => this.room(c),
      reserve: (c, bytes) => this.reserve(c, bytes),
      release: (c, bytes) => this.release(c, bytes),
      handOver: (q, row, c) => {
        // Its LockDuration starts now, as the receiver sees it (locks.ts, handOver).
        this.locks.handOver(q, row);
        this.handOver(q, row, cloneRow(row), c);
      },
      giveBack: (q, row, token, settled) => this.unlock(q, row, token, true, settled),
    });
  }

  /**
   * Records the credit figure a consumer pushed; true when its entity should be pumped: the consumer has credit and
   * it did not fall (a rise, or a flow restating it). A fall never pumps: it comes while credit is being spent.
   */
  setCredit(c: Consumer, n: number): boolean {
    const was = this.credit.get(c) ?? 0;
    const now = Math.max(0, Math.floor(n));
    if (now > 0) this.credit.set(c, now);
    else this.credit.delete(c);
    return now > 0 && now >= was;
  }

  /** How many more messages the consumer can be given now (none while its held message is being given back). */
  room(c: Consumer): number {
    return this.ahead.isReturning(c) ? 0 : (this.credit.get(c) ?? 0);
  }

  /** Forgets a consumer that detached (a message held for it goes back). */
  forget(c: Consumer): void {
    this.credit.delete(c);
    this.ahead.forget(c);
  }

  /** A delivery is being completed (its delete joined this task's write): lock ahead for its receiver (lock-ahead.ts). */
  completing(token: string, blocked: (q: QueueState) => boolean): void {
    this.ahead.completing(token, blocked);
  }

  /** The entity is being pumped: messages held for receivers whose credit came go to them first. */
  serveHeld(q: QueueState): void {
    this.ahead.serve(q);
  }

  /** The pump ended: receivers with credit left must not wait behind a message held for another. */
  yieldHeld(q: QueueState): void {
    this.ahead.yieldTo(q);
  }

  /** Hands a taken row to the consumer in its receive mode. */
  deliver(q: QueueState, row: MessageRow, c: Consumer): void {
    if (c.receiveMode === 'peekLock') this.lockAndDeliver(q, row, c);
    else this.deleteAndDeliver(q, row, c);
  }

  // One credit spent, then the consumer is told (it may push a new figure at once, e.g. 0 when its connection's
  // outgoing budget is reached). `bytes` is the row's stored size: the consumer bounds what it holds by bytes too.
  private reserve(c: Consumer, bytes: number): void {
    const n = (this.credit.get(c) ?? 0) - 1;
    if (n > 0) this.credit.set(c, n);
    else this.credit.delete(c);
    c.reserved?.(1, bytes);
  }

  // A reservation that ends without a delivery gives its credit back (to a consumer still attached).
  private release(c: Consumer, bytes: number): void {
    if (c.isOpen()) this.credit.set(c, (this.credit.get(c) ?? 0) + 1);
    c.reserved?.(-1, bytes);
  }

  // The lock clock starts when the message is taken from the entity, not when it reaches the wire
  // (Service Bus AMQP guide); the transfer goes out after the lock is committed.
  private lockAndDeliver(q: QueueState, row: MessageRow, c: Consumer): void {
    const { journal } = this.ctx;
    const token = this.locks.take(q, row, c.holder);
    this.ctx.history.takenBy(token, c);
    const snapshot = cloneRow(row);
    this.reserve(c, row.size);
    // The claim is the lock itself (the row is out of the ready set); the transfer is what is applied once durable.
    inBackground(
      journal.run({
        ops: [{ op: 'put', qid: q.id, row: cloneRow(row) }],
        applied: () => {
          if (!c.isOpen()) {
            this.release(c, row.size);
            return this.unlock(q, row, token, false);
          }
          this.handOver(q, row, snapshot, c);
        },
        undo: () => {
          this.release(c, row.size);
          // The lock did not become durable, so the message was not taken: it is available again with the count
          // the store holds (no pump here, so a failing store is not retried in a loop; the next event pumps).
          if (row.state !== 'locked' || row.lock?.token !== token) return;
          this.locks.release(token);
          row.deliveryCount--;
          q.makeReady(row);
        },
      }),
    );
  }

  // A row whose lock is durable goes to its consumer (its reservation made): handing it over ends the reservation,
  // and the credit it spent stays spent. A receiver whose credit it used up may have the next one locked ahead.
  private handOver(q: QueueState, row: MessageRow, snapshot: MessageRow, c: Consumer): void {
    const { store, log, counters, events } = this.ctx;
    const body = store.readBody(q.id, row.seq);
    if (!body) {
      this.release(c, row.size);
      return log.error({ entity: q.path, seq: row.seq }, 'stored body missing');
    }
    counters.delivered++;
    c.deliver({ entityPath: q.path, row: snapshot, body });
    events.emit('delivered', { entity: q.path, deliveryCount: snapshot.deliveryCount });
    this.ahead.delivered(q, c, snapshot.lock!.token);
  }

  // The receiver vanished before its transfer went out, or a lock taken ahead was not sent: the attempt never
  // reached a client, so it is not counted (NATS' didNotDeliver) and the message is available again at once. A lock
  // taken ahead leaves no attempt in the history (`ahead`); any other ends its attempt as notDelivered.
  private unlock(q: QueueState, row: MessageRow, token: string, ahead: boolean, settled?: () => void): void {
    if (row.state !== 'locked' || row.lock?.token !== token) return settled?.();
    // The claim: the token is withdrawn and the row loses its lock (so its deadline skips it), but it stays out
    // of the ready set until the store has the uncounted release; if that fails it stays as the store holds it.
    const was = cloneRow(row);
    this.locks.release(token);
    if (ahead) this.ctx.history.withdraw(q.id, row.seq, token);
    else this.ctx.history.ending(q.id, row.seq, { how: 'notDelivered' });
    delete row.lock;
    const next = cloneRow(row);
    next.state = 'active';
    next.deliveryCount--;
    inBackground(
      this.ctx.journal.run({
        ops: [{ op: 'put', qid: q.id, row: next }],
        applied: () => {
          settled?.();
          if (q.rows.get(row.seq) !== row || row.state !== 'locked' || row.lock) return;
          row.deliveryCount = next.deliveryCount;
          q.makeReady(row);
          this.pump(q);
        },
        undo: () => {
          settled?.();
          putBack(this.ctx, q, row, was);
        },
      }),
    );
  }

  // Receive-and-delete is at-most-once: the message is deleted, then sent. If the receiver has gone by the
  // time the delete is durable, the message is put back rather than lost.
  private deleteAndDeliver(q: QueueState, row: MessageRow, c: Consumer): void {
    const { store, log, counters, events, journal } = this.ctx;
    const body = store.readBody(q.id, row.seq);
    q.removeRow(row.seq);
    if (!body) return void log.error({ entity: q.path, seq: row.seq }, 'stored body missing');
    const snapshot = cloneRow(row);
    this.reserve(c, row.size);
    // The claim is the row's removal; the transfer is applied once the delete is durable.
    inBackground(
      journal.run({
        ops: [{ op: 'delete', qid: q.id, seq: row.seq }],
        applied: () => {
          if (c.isOpen()) {
            counters.delivered++;
            counters.completed++;
            c.deliver({ entityPath: q.path, row: snapshot, body });
            events.emit('delivered', { entity: q.path, deliveryCount: snapshot.deliveryCount + 1 });
            return;
          }
          this.release(c, row.size);
          // Claimed until the put is durable: in memory (so nothing reuses its number) but not ready. If the put
          // fails, the store no longer has the message and memory must not either: receive-and-delete is
          // at-most-once, and this is the one case where that loses it (logged).
          q.addRow(row);
          inBackground(
            journal.run({
              ops: [{ op: 'put', qid: q.id, row: cloneRow(row), body }],
              applied: () => {
                if (q.rows.get(row.seq) !== row) return;
                q.makeReady(row);
                this.pump(q);
              },
              undo: () => {
                if (q.rows.get(row.seq) === row) q.removeRow(row.seq);
                log.error({ entity: q.path, seq: row.seq }, 'receive-and-delete message lost: its receiver left and the put-back failed');
              },
            }),
          );
        },
        undo: () => {
          this.release(c, row.size);
          // The delete did not land, so the message was not taken: it stays available (no pump here, so a
          // failing store is not retried in a loop; the next send, settlement or credit pumps again).
          if (!q.rows.has(row.seq)) {
            q.addRow(row);
            q.makeReady(row);
          }
        },
      }),
    );
  }
}
