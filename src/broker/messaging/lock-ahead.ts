// Lock ahead for credit 1 (issue 37). A default SDK receive loop (JS `subscribe()`, .NET ServiceBusProcessor) grants
// credit 1: it takes message k, completes it, and only once the complete is answered grants credit again. Each cycle
// then waits on two commits in a row, the complete of k and the lock of k+1. When such a receiver (credit used up,
// link attached) completes k, the lock of the next available message is taken for it in the same task, so it joins
// the complete's write: one flush per cycle. The message is held unsent until the credit comes, and goes out at once
// then; its lock is durable before its transfer leaves, as for every peek-lock delivery.
// A held lock is speculative. Another peek-lock receiver of the entity with credit and nothing to take must never
// wait behind a guess: the held message goes to it as it is (the lock is durable and was never sent, so it simply
// changes hands, with no write). When the credit does not come within LOCK_AHEAD_HOLD_MS, when the link goes, or when
// the receiver waiting is a receive-and-delete one, the lock is given back through the deliverer's uncounted release
// (no delivery counted, no attempt in the history). Session receivers and receive-and-delete receivers never lock
// ahead (the latter has nothing to lock; it is at-most-once).

import type { BrokerContext } from '../runtime/context.js';
import { waitTimer, type TimerHandle } from '../runtime/clock.js';
import { inBackground } from '../runtime/journal.js';
import type { QueueState } from '../indexes/queue-state.js';
import { cloneRow } from '../indexes/rows.js';
import { LOCK_AHEAD_HOLD_MS, type LockManager } from './locks.js';
import type { Consumer, MessageRow } from '../types.js';

/** What the held locks need from the deliverer: its credit book-keeping, the handover and the uncounted release. */
export interface HeldPort {
  room(c: Consumer): number;
  reserve(c: Consumer, bytes: number): void;
  release(c: Consumer, bytes: number): void;
  /** Sends a locked row whose lock is durable to `c` (its reservation made). */
  handOver(q: QueueState, row: MessageRow, c: Consumer): void;
  /** Gives a lock that never reached a client back without counting a delivery; `settled` once that write settles. */
  giveBack(q: QueueState, row: MessageRow, token: string, settled: () => void): void;
}

interface Held {
  q: QueueState;
  row: MessageRow;
  token: string;
  c: Consumer;
  /** The lock's write has committed. */
  durable: boolean;
  /** The receiver's credit came: one is reserved for this message, sent once durable. */
  reserved: boolean;
  /** To be given back (hold over, a competitor waiting, the link gone), once durable. */
  yielding: boolean;
  timer?: TimerHandle;
}

/** Locks the next message ahead for credit-1 receivers that complete, and holds it until their credit comes. */
export class LockAhead {
  /** The last delivery's token of each receiver whose credit it used up, and back. */
  private readonly lastTo = new Map<string, { q: QueueState; c: Consumer }>();
  private readonly lastOf = new Map<Consumer, string>();
  /** The lock held for each receiver (at most one), and the held locks of each entity. */
  private readonly held = new Map<Consumer, Held>();
  private readonly heldOn = new Map<QueueState, Set<Held>>();
  /** Receivers whose held message is being given back: they take nothing until it is available again. */
  private readonly returning = new Set<Consumer>();

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    private readonly port: HeldPort,
  ) {}

  /** A peek-lock delivery went to `c`: remembered when it used up the receiver's credit (the credit-1 pattern). */
  delivered(q: QueueState, c: Consumer, token: string): void {
    const prev = this.lastOf.get(c);
    if (prev !== undefined) this.lastTo.delete(prev);
    if (q.sessionful || this.port.room(c) > 0) return void this.lastOf.delete(c);
    this.lastTo.set(token, { q, c });
    this.lastOf.set(c, token);
  }

  /**
   * The delivery `token` is being completed (its delete just joined this task's write). If it was the last one a
   * receiver without credit was given, the next available message is locked for it now, in the same write (not on an
   * entity whose Status stops receives: `blocked`).
   */
  completing(token: string, blocked: (q: QueueState) => boolean): void {
    const last = this.lastTo.get(token);
    if (!last) return;
    const { q, c } = last;
    this.lastTo.delete(token);
    this.lastOf.delete(c);
    const { journal, clock, entities, history } = this.ctx;
    if (this.held.has(c) || !c.isOpen() || this.port.room(c) > 0 || journal.stopping) return;
    if (entities.byId(q.id) !== q || blocked(q) || this.competitorWaiting(q, c)) return;
    const row = q.takeReady();
    if (!row) return;
    // An expired message is the pump's to expire; it stays available meanwhile.
    if (q.hasExpired(row, clock.now())) return q.makeReady(row);
    // Locked for LockDuration plus the longest hold, so that the LockDuration the receiver gets from the handover
    // (locks.ts, handOver) is never past what the store holds.
    const token2 = this.locks.take(q, row, c.holder, LOCK_AHEAD_HOLD_MS);
    history.takenBy(token2, c);
    this.ctx.counters.lockedAhead++;
    const h: Held = { q, row, token: token2, c, durable: false, reserved: false, yielding: false };
    this.add(h);
    h.timer = waitTimer(clock, () => this.holdOver(h), LOCK_AHEAD_HOLD_MS);
    inBackground(
      journal.run({
        ops: [{ op: 'put', qid: q.id, row: cloneRow(row) }],
        applied: () => {
          h.durable = true;
          this.decide(h);
        },
        undo: () => {
          // Not durable, so not taken: available again with the count the store holds (as for any lock).
          this.remove(h);
          if (h.reserved) this.port.release(c, row.size);
          if (row.state !== 'locked' || row.lock?.token !== h.token) return;
          this.locks.release(h.token);
          row.deliveryCount--;
          q.makeReady(row);
        },
      }),
    );
  }

  /** The entity is pumped: each held message whose receiver now has credit goes to it first. */
  serve(q: QueueState): void {
    const set = this.heldOn.get(q);
    if (!set) return;
    for (const h of set) {
      if (h.reserved || h.yielding || this.port.room(h.c) <= 0) continue;
      this.port.reserve(h.c, h.row.size);
      h.reserved = true;
      this.decide(h);
    }
  }

  /** The pump ended: a receiver with credit left had nothing to take, so no message stays held for another. */
  yieldTo(q: QueueState): void {
    const set = this.heldOn.get(q);
    if (!set) return;
    for (const h of set) {
      if (h.reserved || h.yielding || !this.competitorWaiting(q, h.c)) continue;
      // Handed to the competitor, or given back for it (decide).
      this.decide(h);
    }
  }

  // A receiver whose held message k+1 is being given back would otherwise be handed k+2 if its credit came before that
  // write lands, and get k+1 after it: it waits for the give-back instead, and takes k+1 first.
  /** Whether the receiver's held message is being given back (it is offered nothing meanwhile). */
  isReturning(c: Consumer): boolean {
    return this.returning.has(c);
  }

  /** The receiver detached: its held message goes back. */
  forget(c: Consumer): void {
    this.returning.delete(c);
    const last = this.lastOf.get(c);
    if (last !== undefined) this.lastTo.delete(last);
    this.lastOf.delete(c);
    const h = this.held.get(c);
    if (!h) return;
    h.yielding = true;
    this.decide(h);
  }

  // The credit did not come in time. A message whose credit came while its lock commits still goes out.
  private holdOver(h: Held): void {
    if (h.reserved) return;
    h.yielding = true;
    this.decide(h);
  }

  // Where a held lock goes next; run whenever something about it changed. Nothing happens before its write is durable.
  private decide(h: Held): void {
    if (this.held.get(h.c) !== h || !h.durable) return;
    const { q, row, c } = h;
    // Purged, or its entity deleted, meanwhile: nothing to send or give back.
    if (this.ctx.entities.byId(q.id) !== q || q.rows.get(row.seq) !== row || row.lock?.token !== h.token) {
      this.remove(h);
      if (h.reserved) this.port.release(c, row.size);
      return;
    }
    if (!c.isOpen()) h.yielding = true;
    if (h.reserved && !h.yielding) {
      this.remove(h);
      return this.port.handOver(q, row, c);
    }
    // A message held for a receiver without credit (or one that went) goes to a peek-lock receiver that has credit and
    // nothing to take: Service Bus gives a message to whichever receiver asks. Its lock is durable and was never
    // sent, so it changes hands as it is: no give-back and no new lock to commit, and still one delivery counted.
    const o = this.competitor(q, c, true);
    if (o && (!h.reserved || h.yielding)) {
      this.remove(h);
      if (h.reserved) this.port.release(c, row.size);
      this.port.reserve(o, row.size);
      this.locks.reassign(h.token, o.holder);
      this.ctx.history.reassigned(q.id, row.seq, h.token, o);
      this.ctx.counters.lockAheadPassed++;
      return this.port.handOver(q, row, o);
    }
    if (!h.reserved && !h.yielding && this.competitor(q, c, false)) h.yielding = true;
    if (!h.yielding) return;
    this.remove(h);
    if (h.reserved) this.port.release(c, row.size);
    this.ctx.counters.lockAheadReturned++;
    if (c.isOpen()) this.returning.add(c);
    this.port.giveBack(q, row, h.token, () => this.returning.delete(c));
  }

  // Another open receiver of the entity with credit (a peek-lock one, with `peekLock`): a message held for `c` would
  // keep it waiting.
  private competitor(q: QueueState, c: Consumer, peekLock: boolean): Consumer | undefined {
    return q.consumers.find((o) => o !== c && this.port.room(o) > 0 && o.isOpen() && (!peekLock || o.receiveMode === 'peekLock'));
  }

  private competitorWaiting(q: QueueState, c: Consumer): boolean {
    return this.competitor(q, c, false) !== undefined;
  }

  private add(h: Held): void {
    this.held.set(h.c, h);
    let set = this.heldOn.get(h.q);
    if (!set) this.heldOn.set(h.q, (set = new Set()));
    set.add(h);
  }

  private remove(h: Held): void {
    h.timer?.cancel();
    if (this.held.get(h.c) === h) this.held.delete(h.c);
    const set = this.heldOn.get(h.q);
    set?.delete(h);
    if (set?.size === 0) this.heldOn.delete(h.q);
  }
}
