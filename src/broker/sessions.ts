// Message sessions (Service Bus "message sessions"): on a RequiresSession entity each receiver accepts one
// session — by id, or the next available one — and holds it under an exclusive session lock of the entity's
// LockDuration. It then receives only that session's messages, in order; their locks last as long as the
// session lock. When the lock lapses or the receiver leaves, the session is free for another receiver and the
// messages it had locked come back (each a failed delivery).

import { BrokerError } from './errors.js';
import { MessagingCore } from './messaging.js';
import type { QueueState } from './queue-state.js';
import { RECOVERED_HOLDER, type SessionState } from './session-state.js';
import { selectSessions } from './session-listing.js';
import type { Consumer } from './types.js';
import type { TimerHandle } from './clock.js';

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

/** Messaging plus message sessions. */
export class SessionCore extends MessagingCore {
  private waiters: Waiter[] = [];

  /**
   * Locks a session for `consumer`: the one named, or (id null) the available session whose oldest message is oldest,
   * waiting up to `timeoutMs` for one. A session locked by another receiver fails with SessionCannotBeLocked; no
   * session within the timeout fails with Timeout (docs/wire-contract.md, "Session receivers").
   */
  async acceptSession(path: string, sessionId: string | null, timeoutMs: number, consumer: Consumer): Promise<SessionGrant> {
    this.assertRunning();
    const q = this.entities.forReceive(path);
    if (!q.sessionful) {
      throw new BrokerError('InvalidOperation', `The entity '${q.path}' does not require sessions; use a receiver without a session.`);
    }
    const now = this.clock.now();
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
    const next = this.nextSession(q, now);
    if (next) return this.grant(q, next, consumer);
    return new Promise<SessionGrant>((resolve, reject) => {
      const w: Waiter = {
        q,
        consumer,
        resolve,
        reject,
        timer: this.clock.setTimer(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          reject(new BrokerError('Timeout', 'No unlocked session was available within the requested timeout.'));
        }, timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  /** Extends a session lock by LockDuration; a session not locked (any more) fails with SessionLockLost. */
  async renewSessionLock(path: string, sessionId: string): Promise<number> {
    const { q, s } = this.lockedSession(path, sessionId);
    s.lockedUntil = this.clock.now() + q.settings.lockDurationMs;
    s.updatedAt = this.clock.now();
    // The messages locked under the session follow its lock.
    for (const row of q.rows.values()) {
      if (row.state === 'locked' && row.sessionId === sessionId && row.lock) row.lock.until = s.lockedUntil;
    }
    this.scheduler.add({ at: s.lockedUntil, kind: 'session', qid: q.id, seq: 0, session: sessionId });
    await this.persistSession(q, s);
    return s.lockedUntil;
  }

  /** The session's state (null when never set); needs the session lock. */
  getSessionState(path: string, sessionId: string): Uint8Array | null {
    return this.lockedSession(path, sessionId).s.state;
  }

  /** Sets (or with null clears) the session's state, durably; needs the session lock. */
  async setSessionState(path: string, sessionId: string, state: Uint8Array | null): Promise<void> {
    const { q, s } = this.lockedSession(path, sessionId);
    s.state = state;
    s.updatedAt = this.clock.now();
    await this.persistSession(q, s);
  }

  /** Ids of sessions selected by get-message-sessions' last-updated-time `since`, paged (see session-listing.ts). */
  listSessions(path: string, since: number, skip: number, top: number): string[] {
    this.assertRunning();
    return selectSessions(this.entities.forReceive(path), since, skip, top);
  }

  protected override offerSessions(q: QueueState): void {
    const now = this.clock.now();
    for (const w of [...this.waiters]) {
      if (w.q !== q) continue;
      const s = this.nextSession(q, now);
      if (!s) return;
      this.waiters = this.waiters.filter((x) => x !== w);
      w.timer.cancel();
      this.grant(q, s, w.consumer).then(w.resolve, w.reject);
    }
  }

  protected override onSessionDeadline(q: QueueState, sessionId: string): void {
    const s = q.sessions.get(sessionId);
    if (!s || s.holder === null || s.lockedUntil > this.clock.now()) return;
    this.endSession(q, s, true);
  }

  /** A session receiver left: its session becomes available to others at once. */
  protected override consumerGone(q: QueueState, c: Consumer): void {
    if (c.sessionId === undefined) return;
    const s = q.sessions.get(c.sessionId);
    if (s && s.holder === c) this.endSession(q, s, false);
  }

  private lockedSession(path: string, sessionId: string): { q: QueueState; s: SessionState } {
    this.assertRunning();
    const q = this.entities.forReceive(path);
    const s = q.sessions.get(sessionId);
    if (!s || !s.isLocked(this.clock.now())) {
      throw new BrokerError(
        'SessionLockLost',
        `The session lock has expired on the MessageSession. Accept a new MessageSession. Session id: '${sessionId}'.`,
      );
    }
    return { q, s };
  }

  // The unlocked session whose first available message is oldest.
  private nextSession(q: QueueState, now: number): SessionState | undefined {
    let best: SessionState | undefined;
    let bestSeq = Infinity;
    for (const s of q.sessions.values()) {
      if (s.isLocked(now) || !q.hasReady(s)) continue;
      const seq = s.ready.peek()!;
      if (seq < bestSeq) {
        best = s;
        bestSeq = seq;
      }
    }
    return best;
  }

  private async grant(q: QueueState, s: SessionState, consumer: Consumer): Promise<SessionGrant> {
    const now = this.clock.now();
    s.holder = consumer;
    s.lockedUntil = now + q.settings.lockDurationMs;
    s.updatedAt = now;
    consumer.sessionId = s.id;
    this.scheduler.add({ at: s.lockedUntil, kind: 'session', qid: q.id, seq: 0, session: s.id });
    await this.persistSession(q, s);
    return { sessionId: s.id, lockedUntil: s.lockedUntil };
  }

  // Ends a session lock: the messages it had locked come back (a failed delivery each, as for any lock that
  // ends without a complete), the holder is told if the lock was lost rather than given up.
  private endSession(q: QueueState, s: SessionState, lost: boolean): void {
    const holder = s.holder;
    s.holder = null;
    s.lockedUntil = 0;
    s.updatedAt = this.clock.now();
    for (const row of [...q.rows.values()]) {
      if (row.state !== 'locked' || row.sessionId !== s.id || !row.lock) continue;
      this.lockRules.release(row.lock.token);
      void this.lockEnded(q, row).catch(() => undefined);
    }
    void this.persistSession(q, s).catch(() => undefined);
    if (lost && holder && holder !== RECOVERED_HOLDER) holder.sessionLost?.();
    this.offerSessions(q);
  }

  private persistSession(q: QueueState, s: SessionState): Promise<void> {
    const keep = s.state !== null || s.holder !== null;
    const record = keep ? { state: s.state, lockedUntil: s.holder ? s.lockedUntil : 0, updatedAt: s.updatedAt } : null;
    return this.persist([{ op: 'session', qid: q.id, sessionId: s.id, record }]);
  }
}
