// The lock rules of Peek-Lock (Service Bus "message transfers, locks, and settlement"): a lock token is
// honoured only while it is the message's current lock and its locked-until is in the future. Once a lock
// lapses the message may already be with another receiver, so the stale holder's settle or renew must fail
// with MessageLockLost and leave the message untouched.
// The durable copy of a lock is its message's row (`row.lock`, `row.deliveryCount`; there is no lock table, see
// docs/architecture.md, "The rows database is the lock table"); this class keeps the token index in memory and
// the lock deadlines in the scheduler, both rebuilt from the rows at start-up.

import { randomUUID } from 'node:crypto';
import type { BrokerContext } from '../runtime/context.js';
import { lockLost } from '../errors.js';
import type { QueueState } from '../indexes/queue-state.js';
import { cloneRow } from '../indexes/rows.js';
import type { Deadline } from '../runtime/scheduler.js';
import type { MessageRow } from '../types.js';
import { inBackground } from '../runtime/journal.js';

/**
 * How long a lock taken ahead of its receiver's credit waits for that credit (lock-ahead.ts), in client time: the
 * SDKs grant it as soon as the complete is answered. Such a lock is stored this much longer than LockDuration, so
 * that the LockDuration the receiver gets from the handover (`handOver`) is never past what the store holds.
 */
export const LOCK_AHEAD_HOLD_MS = 200;

/** A lock that is current: the queue and the row it locks. */
export interface LockRef {
  q: QueueState;
  row: MessageRow;
}

/** Takes, checks, renews and ends message locks; the token index and the lock deadlines. */
export class LockManager {
  private readonly tokens = new Map<string, { qid: number; seq: number; holder?: string }>();

  constructor(
    private readonly ctx: BrokerContext,
    /** What happens to a message whose lock expired (the transitions' lockEnded). */
    private readonly onExpired: (q: QueueState, row: MessageRow) => Promise<void>,
  ) {}

  /** Number of tokens issued and not yet released. */
  get size(): number {
    return this.tokens.size;
  }

  /**
   * Locks a row for LockDuration and counts the delivery; returns the new token. `extraMs` lengthens the stored lock
   * of a message held before it is sent (lock-ahead.ts), so that `handOver` can start a full LockDuration later.
   */
  take(q: QueueState, row: MessageRow, holder?: string, extraMs = 0): string {
    const { clock, scheduler } = this.ctx;
    const token = randomUUID();
    q.setState(row, 'locked');
    row.deliveryCount++;
    const session = q.heldSession(row, clock.now());
    if (session) {
      // Locked by the session: the message lock lasts as long as the session lock (no deadline of its own;
      // the session's deadline ends it, see sessions.ts).
      row.lock = { token, until: session.lockedUntil };
      this.hold(token, q.id, row.seq, holder);
      return token;
    }
    row.lock = { token, until: clock.now() + q.settings.lockDurationMs + extraMs };
    this.hold(token, q.id, row.seq, holder);
    scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token });
    return token;
  }

  /** The message a token currently locks, or undefined if the token is unknown, superseded or lapsed. */
  find(token: string): LockRef | undefined {
    const ref = this.tokens.get(token);
    if (!ref) return undefined;
    const q = this.ctx.entities.byId(ref.qid);
    const row = q?.rows.get(ref.seq);
    if (!q || !row || row.state !== 'locked' || row.lock?.token !== token) return undefined;
    // A lock whose time has passed is lost even if the expiry timer has not fired yet.
    if (row.lock.until <= this.ctx.clock.now()) return undefined;
    return { q, row };
  }

  /** Looks up a valid lock (on `entityPath`, when given), or throws LockLost. */
  current(token: string, entityPath?: string): LockRef {
    const ref = this.find(token);
    if (!ref) throw lockLost();
    if (entityPath !== undefined && !this.ctx.entities.sameEntity(ref.q, entityPath)) throw lockLost();
    return ref;
  }

  /** Extends a lock by the entity's LockDuration; resolves with the new locked-until (epoch ms) once durable. */
  async renew(token: string, entityPath?: string): Promise<number> {
    const { clock, scheduler, counters, events, journal } = this.ctx;
    journal.assertRunning();
    if (!this.find(token)) this.ctx.history.late(token, 'renew');
    const { q, row } = this.current(token, entityPath);
    // The new locked-until holds at once (so the old deadline does not end the lock while the renewal commits);
    // if the commit fails the lock goes back to the locked-until the store holds, with its deadline.
    const prev = row.lock!;
    const until = clock.now() + q.settings.lockDurationMs;
    row.lock = { token, until };
    scheduler.add({ at: until, kind: 'lock', qid: q.id, seq: row.seq, token });
    return journal.run({
      ops: [{ op: 'put', qid: q.id, row: cloneRow(row) }],
      applied: () => {
        counters.renewed++;
        events.emit('renewed', { entity: q.path });
        return until;
      },
      undo: () => {
        if (row.lock?.token !== token || row.lock.until !== until) return; // settled or renewed again meanwhile
        row.lock = prev;
        scheduler.add({ at: prev.until, kind: 'lock', qid: q.id, seq: row.seq, token });
      },
    });
  }

  // Service Bus starts a lock's LockDuration when the message is taken for a receiver's credit; a message locked
  // ahead of its receiver's credit (lock-ahead.ts) is taken when that credit comes, so the lock the receiver is told
  // of runs a full LockDuration from now. It is cut in memory only, and never past the locked-until the store holds
  // (taken longer for this): what the client sees is never later than what is durable, and a restart keeps the
  // stored one, which is the later.
  /** Starts a held lock's LockDuration at its handover (in memory, never past the stored locked-until). */
  handOver(q: QueueState, row: MessageRow): void {
    const lock = row.lock;
    if (!lock || q.heldSession(row, this.ctx.clock.now())) return;
    const until = Math.min(lock.until, this.ctx.clock.now() + q.settings.lockDurationMs);
    if (until === lock.until) return;
    row.lock = { token: lock.token, until };
    this.ctx.scheduler.add({ at: until, kind: 'lock', qid: q.id, seq: row.seq, token: lock.token });
    this.ctx.history.handedOver(q.id, row.seq, lock.token, until);
  }

  /**
   * Ends a lock now, as if its locked-until had passed (fault injection): the message takes the normal expiry
   * path (redelivery, or the dead-letter queue at MaxDeliveryCount) and the token's holder gets MessageLockLost.
   */
  expireNow(token: string): void {
    const { q, row } = this.current(token);
    const now = this.ctx.clock.now();
    row.lock!.until = now;
    this.onDeadline({ at: now, kind: 'lock', qid: q.id, seq: row.seq, token });
  }

  /** A token now held by another receiver (a lock taken ahead that changed hands before it was sent). */
  reassign(token: string, holder?: string): void {
    const ref = this.tokens.get(token);
    if (ref) this.tokens.set(token, { qid: ref.qid, seq: ref.seq, holder });
  }

  /** Forgets a token (settled, expired or given back). */
  release(token: string): void {
    this.tokens.delete(token);
  }

  /** Who a token was issued to (connection and link), if this process issued it. */
  holderOf(token: string): string | undefined {
    return this.tokens.get(token)?.holder;
  }

  /** Re-honours a token whose release did not become durable (a complete the store refused), until `until`. */
  restore(q: QueueState, row: MessageRow, token: string, until: number): void {
    this.hold(token, q.id, row.seq);
    this.ctx.scheduler.add({ at: until, kind: 'lock', qid: q.id, seq: row.seq, token });
  }

  // After a restart a locked message stays locked until its locked-until, then takes the normal expiry path
  // (docs/durability.md, "Restarts: locks and delivery counts"). Its old token is not honoured (it is not in the
  // index): Service Bus cannot recover AMQP links across connections, so settling it fails with MessageLockLost.
  // A lock further out than one LockDuration (the wall clock moved back while we were down) is clamped to one. A lock
  // taken ahead of its receiver's credit is stored up to LOCK_AHEAD_HOLD_MS longer than that, and is kept as stored.
  /** Schedules the expiry of a lock found in the store at start-up. */
  recover(q: QueueState, row: MessageRow, now: number): void {
    if (!row.lock) return;
    const longest = now + q.settings.lockDurationMs;
    if (row.lock.until > longest + LOCK_AHEAD_HOLD_MS) row.lock.until = longest;
    this.ctx.scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token: row.lock.token });
  }

  /** The `lock` deadline handler: a lock whose locked-until passed ends (one failed delivery). */
  onDeadline(d: Deadline): void {
    const { entities, clock, counters, events, log } = this.ctx;
    const q = entities.byId(d.qid);
    const row = q?.rows.get(d.seq);
    if (!q || !row) return;
    // Stale entries (settled, renewed, or re-locked since) are skipped here rather than removed.
    const prevLock = row.lock;
    if (row.state !== 'locked' || !prevLock || prevLock.token !== d.token || prevLock.until > clock.now()) return;
    this.release(prevLock.token);
    counters.lockExpired++;
    events.emit('lockExpired', { entity: q.path });
    log.debug({ entity: q.path, seq: row.seq, deliveryCount: row.deliveryCount }, 'lock expired');
    inBackground(this.onExpired(q, row));
  }

  private hold(token: string, qid: number, seq: number, holder?: string): void {
    this.tokens.set(token, { qid, seq, holder });
  }
}
