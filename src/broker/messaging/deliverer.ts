// Handing one message to one consumer, in either receive mode. The store is told first and the transfer goes
// out only once it has synced: a peek-lock delivery after its lock is committed (so a crash after the client saw
// the message still has the delivery counted), a receive-and-delete delivery after its delete is committed.
// Until then the delivery is "reserved" against the consumer's credit, so a pump does not hand out more than
// the link can take.

import type { BrokerContext } from '../runtime/context.js';
import type { LockManager } from './locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { cloneRow } from '../indexes/rows.js';
import type { Consumer, MessageRow } from '../types.js';
import { inBackground } from '../runtime/journal.js';
import { putBack } from './transitions.js';

/** Delivers messages to consumers and tracks deliveries not yet handed over. */
export class Deliverer {
  private readonly reserved = new Map<Consumer, number>();
  private readonly pumpQueued = new Set<QueueState>();

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** Deliveries reserved for this consumer whose store write has not landed yet. */
  pending(c: Consumer): number {
    return this.reserved.get(c) ?? 0;
  }

  /** How many more messages the consumer can be given now: its credit less what is already on the way. */
  room(c: Consumer): number {
    return c.capacity() - (this.reserved.get(c) ?? 0);
  }

  /** Hands a taken row to the consumer in its receive mode. */
  deliver(q: QueueState, row: MessageRow, c: Consumer): void {
    if (c.receiveMode === 'peekLock') this.lockAndDeliver(q, row, c);
    else this.deleteAndDeliver(q, row, c);
  }

  // `bytes` is the row's stored size: the consumer bounds what it holds by bytes as well as by count.
  private reserve(c: Consumer, delta: number, bytes: number): void {
    c.inFlight?.(delta * bytes);
    const n = (this.reserved.get(c) ?? 0) + delta;
    if (n > 0) this.reserved.set(c, n);
    else this.reserved.delete(c);
  }

  // A consumer whose capacity was bounded by deliveries still in flight (not by credit) can take more once
  // they are out; nothing else would wake it, so pump again once per batch of completed deliveries.
  private pumpSoon(q: QueueState): void {
    if (this.pumpQueued.has(q)) return;
    this.pumpQueued.add(q);
    queueMicrotask(() => {
      this.pumpQueued.delete(q);
      this.pump(q);
    });
  }

  // The lock clock starts when the message is taken from the entity, not when it reaches the wire
  // (Service Bus AMQP guide); the transfer goes out after the lock is committed.
  private lockAndDeliver(q: QueueState, row: MessageRow, c: Consumer): void {
    const { store, log, counters, events, journal } = this.ctx;
    const token = this.locks.take(q, row, c.holder);
    const snapshot = cloneRow(row);
    this.reserve(c, 1, row.size);
    // The claim is the lock itself (the row is out of the ready set); the transfer is what is applied once durable.
    inBackground(
      journal.run({
        ops: [{ op: 'put', qid: q.id, row: cloneRow(row) }],
        applied: () => {
          this.reserve(c, -1, row.size);
          if (!c.isOpen()) return this.unlock(q, row, token);
          const body = store.readBody(q.id, row.seq);
          if (!body) return log.error({ entity: q.path, seq: row.seq }, 'stored body missing');
          counters.delivered++;
          c.deliver({ entityPath: q.path, row: snapshot, body });
          events.emit('delivered', { entity: q.path, deliveryCount: snapshot.deliveryCount });
          this.pumpSoon(q);
        },
        undo: () => {
          this.reserve(c, -1, row.size);
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

  // The receiver vanished before its transfer went out: the attempt never reached a client, so it is not
  // counted (NATS' didNotDeliver) and the message is available again at once.
  private unlock(q: QueueState, row: MessageRow, token: string): void {
    if (row.state !== 'locked' || row.lock?.token !== token) return;
    // The claim: the token is withdrawn and the row loses its lock (so its deadline skips it), but it stays out
    // of the ready set until the store has the uncounted release; if that fails it stays as the store holds it.
    const was = cloneRow(row);
    this.locks.release(token);
    delete row.lock;
    const next = cloneRow(row);
    next.state = 'active';
    next.deliveryCount--;
    inBackground(
      this.ctx.journal.run({
        ops: [{ op: 'put', qid: q.id, row: next }],
        applied: () => {
          if (q.rows.get(row.seq) !== row || row.state !== 'locked' || row.lock) return;
          row.deliveryCount = next.deliveryCount;
          q.makeReady(row);
          this.pump(q);
        },
        undo: () => putBack(this.ctx, q, row, was),
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
    this.reserve(c, 1, row.size);
    // The claim is the row's removal; the transfer is applied once the delete is durable.
    inBackground(
      journal.run({
        ops: [{ op: 'delete', qid: q.id, seq: row.seq }],
        applied: () => {
          this.reserve(c, -1, row.size);
          if (c.isOpen()) {
            counters.delivered++;
            counters.completed++;
            c.deliver({ entityPath: q.path, row: snapshot, body });
            events.emit('delivered', { entity: q.path, deliveryCount: snapshot.deliveryCount + 1 });
            return;
          }
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
          this.reserve(c, -1, row.size);
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
