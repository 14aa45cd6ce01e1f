// Message sessions (Service Bus "message sessions"; docs/wire-contract.md, "Session receivers"): on a
// RequiresSession entity each receiver accepts one session — by id, or the next available one — and holds it
// under an exclusive session lock of the entity's LockDuration. It then receives only that session's messages,
// in order; their locks last as long as the session lock. When the lock lapses or the receiver leaves, the
// session is free for another receiver and the messages it had locked come back (each a failed delivery).
// All of it lives here: accepting, renewing, session state, pumping a session entity, the session deadline,
// and recovering sessions at start-up.

import { waitTimer, type TimerHandle } from '../runtime/clock.js';
import type { BrokerContext } from '../runtime/context.js';
import type { Deliverer } from './deliverer.js';
import { BrokerError, sessionLockLost } from '../errors.js';
import type { LockManager } from './locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import type { Deadline } from '../runtime/scheduler.js';
import { selectSessions } from './session-listing.js';
import { RECOVERED_HOLDER, type SessionState } from '../indexes/session-state.js';
import type { Transitions } from './transitions.js';
import type { Consumer } from '../types.js';
import { inBackground } from '../runtime/journal.js';

/** What an accepted session comes with. */
export interface SessionGrant {
  sessionId: string;
  /** Session lock expiry, epoch ms. */
  lockedUntil: number;
}

interface Waiter {
  q: QueueState;
  consumer: Consumer;
  resolve(g: SessionGrant): void;
  reject(e: Error): void;
  timer: TimerHandle;
}

/** Session locks, session state and the delivery of session-enabled entities. */
export class Sessions {
  private waiters: Waiter[] = [];

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    private readonly transitions: Transitions,
    private readonly deliverer: Deliverer,
  ) {}

  /**
   * Locks a session for `consumer`: the one named, or (id null) the available session whose oldest message is oldest,
   * waiting up to `timeoutMs` for one. A session locked by another receiver fails with SessionCannotBeLocked; no
   * session within the timeout fails with Timeout (docs/wire-contract.md, "Session receivers").
   */
  async accept(path: string, sessionId: string | null, timeoutMs: number, consumer: Consumer): Promise<SessionGrant> {
    const { journal, entities, clock } = this.ctx;
    journal.assertRunning();
    const q = entities.forReceive(path);
    if (!q.sessionful) {
      throw new BrokerError('InvalidOperation', `The entity '${q.path}' does not require sessions; use a receiver without a session.`);
    }
    const now = clock.now();
    if (sessionId !== null) {
      const s = q.session(sessionId);
      if (s.isLocked(now)) {
        throw new BrokerError(
          'SessionCannotBeLocked',
          `The requested session '${sessionId}' cannot be accepted. It may be locked by another receiver.`,
        );
      }
      return this.grant(q, s, consumer);
    }
    const next = q.takeAvailableSession();
    if (next) return this.grant(q, next, consumer);
    return new Promise<SessionGrant>((resolve, reject) => {
      const w: Waiter = {
        q,
        consumer,
        resolve,
        reject,
        timer: waitTimer(clock, () => {
          this.waiters = this.waiters.filter((x) => x !== w);
          reject(new BrokerError('Timeout', 'No unlocked session was available within the requested timeout.'));
        }, timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  /** Extends a session lock by LockDuration; a session not locked (any more) fails with SessionLockLost. */
  async renew(path: string, sessionId: string): Promise<number> {
    const { clock, scheduler } = this.ctx;
    const { q, s } = this.lockedSession(path, sessionId);
    const prev = { lockedUntil: s.lockedUntil };
    const until = clock.now() + q.settings.lockDurationMs;
    // The messages locked under the session follow its lock (back, too, if the renewal is not durable).
    const follow = (from: number, to: number): void => {
      for (const seq of s.locked) {
        const row = q.rows.get(seq);
        if (row?.lock && row.lock.until === from) row.lock.until = to;
      }
    };
    follow(s.lockedUntil, until);
    s.lockedUntil = until;
    scheduler.add({ at: until, kind: 'session', qid: q.id, seq: 0, session: sessionId });
    await this.persistSession(q, s).catch((err: unknown) => {
      if (s.lockedUntil === until) {
        follow(until, prev.lockedUntil);
        Object.assign(s, prev);
        scheduler.add({ at: prev.lockedUntil, kind: 'session', qid: q.id, seq: 0, session: sessionId });
      }
      throw err;
    });
    return until;
  }

  /** The session's state (null when never set); needs the session lock. */
  getState(path: string, sessionId: string): Uint8Array | null {
    return this.lockedSession(path, sessionId).s.state;
  }

  /** Sets (or with null clears) the session's state, durably; needs the session lock. */
  async setState(path: string, sessionId: string, state: Uint8Array | null): Promise<void> {
    const { q, s } = this.lockedSession(path, sessionId);
    const was = { state: s.state, updatedAt: s.updatedAt, recordStored: s.recordStored };
    s.state = state;
    s.updatedAt = this.ctx.clock.now();
    // A state the store refused is not the session's state: the old one stays, as the store holds it.
    await this.persistSession(q, s).catch((err: unknown) => {
      if (s.state === state) Object.assign(s, was);
      throw err;
    });
  }

  /** Ids of sessions selected by get-message-sessions' last-updated-time `since`, paged (see session-listing.ts). */
  list(path: string, since: number, skip: number, top: number): string[] {
    this.ctx.journal.assertRunning();
    return selectSessions(this.ctx.entities.forReceive(path), since, skip, top);
  }

  // On a session-enabled entity each receiver holds one session and takes only that session's messages, in
  // order; a session's messages are never offered to anyone else while its lock is held.
  /** Offers each session holder its session's ready messages, then grants waiting accept-next-session requests. */
  pump(q: QueueState): void {
    for (const c of q.consumers) {
      if (c.sessionId === undefined) continue;
      const s = q.sessions.get(c.sessionId);
      // Cheap tests first: every event on the entity pumps all its receivers, so only a holder whose session has a
      // message waiting and who has credit is asked whether it is still open.
      if (s?.holder !== c || s.ready.length === 0 || this.deliverer.room(c) <= 0 || !c.isOpen()) continue;
      while (this.deliverer.room(c) > 0) {
        const row = q.takeReady(c.sessionId);
        if (!row) break;
        if (q.hasExpired(row, this.ctx.clock.now())) {
          inBackground(this.transitions.expire(q, row));
          continue;
        }
        // The session lock joins the write of the first message lock taken under it: one atomic commit, so a
        // message delivered under a session lock is never on disk without that lock (see grant).
        if (s.lockUnwritten) inBackground(this.persistSession(q, s));
        this.deliverer.deliver(q, row, c);
      }
    }
    this.offer(q);
  }

  /** A receiver left: if it held a session, the session becomes available to others at once. */
  consumerGone(q: QueueState, c: Consumer): void {
    if (c.sessionId === undefined) return;
    const s = q.sessions.get(c.sessionId);
    if (s && s.holder === c) this.endSession(q, s, false);
  }

  /** The `session` deadline handler: a session lock that was not renewed in time is lost. */
  onDeadline(d: Deadline): void {
    const q = this.ctx.entities.byId(d.qid);
    if (!q) return;
    const s = q.sessions.get(d.session!);
    if (!s || s.holder === null || s.lockedUntil > this.ctx.clock.now()) return;
    this.endSession(q, s, true);
  }

  // Session state survives restarts; a session that was locked stays locked (by nobody) until its lock lapses,
  // like a message lock (clamped to one LockDuration in case the wall clock moved back while we were down).
  /** Rebuilds a session-enabled entity's sessions from the store at start-up. */
  recover(q: QueueState, now: number): void {
    for (const [id, rec] of this.ctx.store.loadSessions(q.id)) {
      const s = q.session(id);
      s.recordStored = true;
      s.state = rec.state;
      s.updatedAt = rec.updatedAt;
      if (rec.lockedUntil > now) {
        s.holder = RECOVERED_HOLDER;
        s.lockedUntil = Math.min(rec.lockedUntil, now + q.settings.lockDurationMs);
        this.ctx.scheduler.add({ at: s.lockedUntil, kind: 'session', qid: q.id, seq: 0, session: id });
      }
    }
  }

  // Grants waiting accept-next-session requests, oldest first, while sessions are available.
  private offer(q: QueueState): void {
    if (!this.waiters.some((w) => w.q === q)) return;
    for (const w of [...this.waiters]) {
      if (w.q !== q) continue;
      const s = q.takeAvailableSession();
      if (!s) return;
      this.waiters = this.waiters.filter((x) => x !== w);
      w.timer.cancel();
      this.grant(q, s, w.consumer).then(w.resolve, w.reject);
    }
  }

  private lockedSession(path: string, sessionId: string): { q: QueueState; s: SessionState } {
    this.ctx.journal.assertRunning();
    const q = this.ctx.entities.forReceive(path);
    const s = q.sessions.get(sessionId);
    if (!s || !s.isLocked(this.ctx.clock.now())) {
      throw sessionLockLost(sessionId);
    }
    return { q, s };
  }

  private async grant(q: QueueState, s: SessionState, consumer: Consumer): Promise<SessionGrant> {
    const now = this.ctx.clock.now();
    s.holder = consumer;
    s.lockedUntil = now + q.settings.lockDurationMs;
    consumer.sessionId = s.id;
    this.ctx.scheduler.add({ at: s.lockedUntil, kind: 'session', qid: q.id, seq: 0, session: s.id });
    // The grant is answered without a write of its own. The recovered session lock exists to keep a session's
    // order across a crash: messages locked under it must not be overtaken by a new holder taking later ones. So
    // the lock is written in the same commit as the first message lock taken under it (pump), or by a renewal
    // or a state change, whichever comes first. A crash can lose only a session lock under which nothing was
    // delivered, whose receiver's link died with the connection anyway (AMQP links do not survive one); and a
    // session that takes no message (accept-next racing an empty session, a receiver that leaves) costs no write.
    s.lockUnwritten = true;
    return { sessionId: s.id, lockedUntil: s.lockedUntil };
  }

  // Ends a session lock: the messages it had locked come back (a failed delivery each, as for any lock that
  // ends without a complete), the holder is told if the lock was lost rather than given up.
  private endSession(q: QueueState, s: SessionState, lost: boolean): void {
    const holder = s.holder;
    s.holder = null;
    s.lockedUntil = 0;
    // Only this session's locked messages are read (QueueState keeps them per session), not the entity.
    for (const seq of [...s.locked]) {
      const row = q.rows.get(seq);
      if (!row || row.state !== 'locked' || !row.lock) continue;
      this.locks.release(row.lock.token);
      this.ctx.history.ending(q.id, seq, { how: lost ? 'sessionLockLost' : 'released' });
      inBackground(this.transitions.lockEnded(q, row));
    }
    // A lock never written leaves nothing to undo: the store's record (if any) already says the session is free.
    const unwritten = s.lockUnwritten;
    s.lockUnwritten = false;
    if (!unwritten) inBackground(this.persistSession(q, s));
    q.sessionFreed(s);
    if (lost && holder && holder !== RECOVERED_HOLDER) holder.sessionLost?.();
    this.offer(q);
  }

  private persistSession(q: QueueState, s: SessionState): Promise<void> {
    const keep = s.state !== null || s.holder !== null;
    const record = keep ? { state: s.state, lockedUntil: s.holder ? s.lockedUntil : 0, updatedAt: s.updatedAt } : null;
    const was = { recordStored: s.recordStored, lockUnwritten: s.lockUnwritten };
    s.recordStored = record !== null;
    s.lockUnwritten = false;
    // Not durable: the store holds what it held, and a lock this write carried is still unwritten.
    return this.ctx.journal.run({
      ops: [{ op: 'session', qid: q.id, sessionId: s.id, record }],
      undo: () => {
        s.recordStored = was.recordStored;
        if (s.holder) s.lockUnwritten ||= was.lockUnwritten;
      },
    });
  }
}
