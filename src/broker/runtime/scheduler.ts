// One timer for every deadline the broker keeps: lock expiry, scheduled enqueue, message TTL, session locks. Each
// kind has one handler, registered by the collaborator that owns it (the lock manager, the transitions, the
// sessions), so the scheduler knows nothing of what a deadline means. NATS' consumer
// keeps one timer re-armed to the earliest pending deadline (`checkPending`); we do the same over a heap.
// Entries are never removed when they become stale (a lock renewed or settled): the handler re-checks the
// message's current state when an entry falls due, which keeps every operation O(log n).
// The durable copy of a lock deadline is its message's row (`row.lock.until`; there is no lock table, see
// docs/architecture.md, "The rows database is the lock table"). Recovery rebuilds this heap from the rows at
// start-up; while running the heap also sees locks whose commit has not landed yet.

import TinyQueue from 'tinyqueue';
import type { Clock, TimerHandle } from './clock.js';

/** The kinds of deadline, one handler each. */
export type DeadlineKind = 'lock' | 'scheduled' | 'ttl' | 'session';

/** What falls due at a deadline. */
export interface Deadline {
  at: number;
  kind: DeadlineKind;
  qid: number;
  seq: number;
  /** For locks: the token the deadline belongs to (stale if the message's lock changed since). */
  token?: string;
  /** For session locks: the session id. */
  session?: string;
}

/** At most this many deadlines are handled per timer firing, so a burst never blocks the event loop long. */
const BATCH = 512;

/** Earliest-deadline-first timer over a heap of `Deadline`s. */
export class Scheduler {
  private readonly heap = new TinyQueue<Deadline>([], (a, b) => a.at - b.at || a.seq - b.seq);
  private timer: TimerHandle | null = null;
  private armedAt = Infinity;
  private stopped = false;
  private readonly handlers = new Map<DeadlineKind, (d: Deadline) => void>();

  constructor(private readonly clock: Clock) {}

  /** Registers the handler for one kind of deadline (one per kind; a deadline of a kind nobody handles is dropped). */
  on(kind: DeadlineKind, handler: (d: Deadline) => void): void {
    this.handlers.set(kind, handler);
  }

  /** Number of pending deadlines (including stale ones). */
  get size(): number {
    return this.heap.length;
  }

  /** Adds a deadline, re-arming the timer if it is now the earliest. */
  add(d: Deadline): void {
    this.heap.push(d);
    if (d.at < this.armedAt) this.arm();
  }

  /** Cancels the timer; pending deadlines are kept but never fire. */
  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer?.cancel();
    const next = this.heap.peek();
    if (!next) {
      this.timer = null;
      this.armedAt = Infinity;
      return;
    }
    this.armedAt = next.at;
    this.timer = this.clock.setTimer(() => this.fire(), next.at - this.clock.now());
  }

  private fire(): void {
    this.timer = null;
    this.armedAt = Infinity;
    const now = this.clock.now();
    for (let i = 0; i < BATCH; i++) {
      const next = this.heap.peek();
      if (!next || next.at > now) break;
      this.heap.pop();
      this.handlers.get(next.kind)?.(next);
    }
    this.arm();
  }
}
