// The in-memory index of one message-holding entity (a queue, a subscription or a dead-letter subqueue).
// The store holds the durable truth; this index is rebuilt from it at start-up and is what the broker
// decides on. Node runs one event-loop thread, so every decision (which consumer wins a message, whether a
// complete beats a lock expiry) is made here synchronously and exactly once.

import TinyQueue from 'tinyqueue';
import type { EntitySettings } from '../../config/types.js';
import type { EntityStatus } from '../catalog/entity-model.js';
import { AvailableSessions } from './session-index.js';
import { SessionState } from './session-state.js';
import type { SubscriptionRules } from '../messaging/rule-plan.js';
import type { Consumer, MessageRow, MessageState } from '../types.js';
import { DuplicateHistory } from './dedup.js';
import { ColdTail, REFILL_BELOW, WINDOW, type ColdSource } from './cold-tail.js';
import { SESSION_START, SESSION_WINDOW, type SessionSource } from './session-tail.js';

/** What a queue needs to keep only its front in memory: the store's reads, and a hook for each row it loads. */
export interface Backing extends ColdSource, SessionSource {
  /** A row came into memory from the cold tail (the broker gives it its TTL deadline). */
  loaded(q: QueueState, row: MessageRow): void;
  /** The store held fewer cold rows than counted (logged; the counters are corrected). */
  drift(q: QueueState, missing: number): void;
}

/** The kinds of message-holding entity; topics only route, so they are not here. */
export type QueueKind = 'queue' | 'subscription' | 'deadletter';

/** One message-holding entity's rows, its ready order and the consumers attached to it. */
export class QueueState {
  /** Rows in memory by sequence number; change them only through addRow / removeRow (they keep the counters). */
  readonly rows = new Map<number, MessageRow>();
  /** Encoded size of the rows in memory. */
  private memBytes = 0;
  /** Highest sequence number memory has held (see ColdTail.admit). */
  private maxSeq = 0;
  /** Stored available rows not in memory (null on a session-enabled entity: its sessions keep their own tails). */
  readonly cold: ColdTail | null;
  /** On a session-enabled entity with a store behind it: its sessions' cold rows, counted together (session-tail.ts). */
  private readonly sessionCold: { count: number; bytes: number } | null;
  /** Sequence numbers that may be available, lowest first; re-checked against `rows` when taken. */
  readonly ready = new TinyQueue<number>([], (a, b) => a - b);
  /** Attached receivers, served round-robin. */
  readonly consumers: Consumer[] = [];
  /** Next sequence number to assign. */
  nextSeq = 1;
  /** Round-robin cursor into `consumers`. */
  rr = 0;
  /** Duplicate detection history, for RequiresDuplicateDetection. */
  readonly dedup = new DuplicateHistory();
  /** Dead-letter subqueue (null for a dead-letter queue itself: messages cannot be dead-lettered twice). */
  dlq: QueueState | null = null;
  /** Transfer dead-letter subqueue: messages sent via this entity that their destination refused (null for a subqueue). */
  tdlq: QueueState | null = null;
  /** For a dead-letter queue: the queue or subscription it belongs to. */
  parent: QueueState | null = null;
  /** Message sessions of a session-enabled entity, by session id. */
  readonly sessions = new Map<string, SessionState>();
  /** Free sessions with an available message, for accept-next-session (session-enabled entities only). */
  readonly availableSessions = new AvailableSessions();
  /** For a subscription: its compiled rules. */
  rules: SubscriptionRules | null = null;
  /** Service Bus entity status: Disabled or ReceiveDisabled stops receives, Disabled or SendDisabled sends. */
  status: EntityStatus = 'Active';
  /** Fingerprint of the subscription's configured rules, to tell config edits from runtime rule changes. */
  ruleConfigHash = '';

  constructor(
    readonly id: number,
    readonly path: string,
    readonly kind: QueueKind,
    readonly settings: EntitySettings,
    private readonly backing: Backing | null = null,
  ) {
    this.cold = backing && !this.sessionful ? new ColdTail(id, backing) : null;
    this.sessionCold = backing && this.sessionful ? { count: 0, bytes: 0 } : null;
  }

  /** True when this entity's sessions keep only their front in memory (session-enabled, with a store behind it). */
  get sessionTails(): boolean {
    return this.sessionCold !== null;
  }

  /** Total encoded size of the stored messages, for the MaxSizeInMegabytes quota. */
  get bytes(): number {
    return this.memBytes + (this.cold?.bytes ?? 0) + (this.sessionCold?.bytes ?? 0);
  }

  /** Stored messages, in memory or not. */
  get size(): number {
    return this.rows.size + (this.cold?.count ?? 0) + (this.sessionCold?.count ?? 0);
  }

  // Kept as rows come, go and change state (never recounted): metrics and the dead-letter alert read them every
  // second, and a scan of a million-message backlog held the event loop for tens of milliseconds each time.
  private readonly stateCounts: Record<MessageState, number> = { active: 0, locked: 0, deferred: 0, scheduled: 0 };

  /** Counts of messages by state, for logs and metrics. */
  counts(): { active: number; locked: number; deferred: number; scheduled: number } {
    return { ...this.stateCounts, active: this.stateCounts.active + (this.cold?.count ?? 0) + (this.sessionCold?.count ?? 0) };
  }

  /**
   * A committed new row that is available: true when it stays in the store as part of the cold tail (the queue
   * holds a full window already), false when the caller must keep it in memory.
   */
  admitCold(row: MessageRow): boolean {
    if (row.state !== 'active') return false;
    if (this.cold) return this.cold.admit(row, this.stateCounts.active, this.maxSeq);
    const s = this.sessionCold ? this.sessionOf(row) : undefined;
    if (!s) return false;
    // A session keeps a front of SESSION_WINDOW while the entity holds less than a window in all; past that, its
    // first message only (which files it for accept-next-session).
    const window = this.stateCounts.active < WINDOW ? SESSION_WINDOW : 1;
    if (!s.tail.admit(row, s.active, s.maxSeq, window)) return false;
    this.sessionCold!.count++;
    this.sessionCold!.bytes += row.size;
    return true;
  }

  /** A new row of this entity is being written; until it is accounted, a read of a cold tail must not take it. */
  expectInsert(row: MessageRow): void {
    this.cold?.expectInsert(row.seq);
    if (this.sessionCold && row.sessionId !== undefined) this.session(row.sessionId).tail.expectInsert(row.seq);
  }

  /**
   * Moves a committed, available row that memory holds into the cold tail when the tail takes it (a dead-lettered
   * message arriving in a deep dead-letter queue); false leaves it in memory.
   */
  spill(row: MessageRow): boolean {
    if (!this.cold || this.rows.get(row.seq) !== row || row.state !== 'active') return false;
    const maxSeq = row.seq === this.maxSeq ? row.seq - 1 : this.maxSeq;
    if (!this.cold.admit(row, this.stateCounts.active - 1, maxSeq)) return false;
    this.rows.delete(row.seq);
    this.memBytes -= row.size;
    this.stateCounts.active--;
    return true;
  }

  /** Reads a stored row by sequence number, from memory or (without loading it) from the cold tail. */
  peekRow(seq: number): MessageRow | undefined {
    return this.rows.get(seq) ?? this.cold?.peek(seq, this.inMemory) ?? this.peekSessionCold(seq);
  }

  // A cold row of one of this entity's sessions, read without loading it (the row names its session).
  private peekSessionCold(seq: number): MessageRow | undefined {
    if (!this.sessionCold || this.rows.has(seq)) return undefined;
    const row = this.backing!.readRow(this.id, seq);
    if (row?.state !== 'active' || row.sessionId === undefined) return undefined;
    return this.sessions.get(row.sessionId)?.tail.mayHold(seq) ? row : undefined;
  }

  /** The row with this sequence number, brought into memory (available) from the cold tail if it is there. */
  rowAt(seq: number): MessageRow | undefined {
    const held = this.rows.get(seq);
    if (held) return held;
    if (this.sessionCold) {
      const row = this.peekSessionCold(seq);
      if (row) this.loadSessionCold([row]);
      return row;
    }
    if (!this.cold) return undefined;
    const row = this.cold.takeOne(seq, this.inMemory);
    if (row) this.load(row);
    return row;
  }

  /**
   * Refills the window from the cold tail: when few available rows are left in memory, or when the next one
   * in memory comes after the tail's first (a message whose lock ended, or a scheduled one that fell due, far
   * behind the front), so that deliveries stay in sequence order across the window's edge. With `all`, loads
   * up to a full window whatever memory holds (a purge draining the queue). True if rows were loaded.
   */
  fillWindow(all = false): boolean {
    if (this.sessionCold) return all && this.fillSessions(WINDOW);
    const cold = this.cold;
    if (!cold || cold.count === 0) return false;
    const active = this.stateCounts.active;
    if (!all && active >= REFILL_BELOW && !((this.ready.peek() ?? Infinity) > cold.from)) return false;
    if (active >= WINDOW && !all) return false;
    const rows = cold.take(Math.max(WINDOW - active, 1), this.inMemory, (missing) => this.backing!.drift(this, missing));
    for (const row of rows) this.load(row);
    return rows.length > 0;
  }

  private readonly inMemory = (seq: number): boolean => this.rows.has(seq);

  /**
   * Start-up of a session-enabled entity, after its held rows are in memory: opens the tail of every session the
   * store has rows of, reads each one's first SESSION_START available rows, and counts the rest from the store's
   * counters (`count` rows, `bytes` in all), so the restart reads no other row.
   */
  recoverSessions(ids: Iterable<string>, count: number, bytes: number): void {
    if (!this.sessionCold) return;
    for (const id of ids) {
      const s = this.session(id);
      s.tail.openAll();
      this.fillSession(s, SESSION_START);
    }
    this.sessionCold.count = Math.max(0, count - this.rows.size);
    this.sessionCold.bytes = Math.max(0, bytes - this.memBytes);
  }

  // Reads up to `limit` cold rows of one session into memory, available.
  private fillSession(s: SessionState, limit: number): boolean {
    if (!s.tail.open) return false;
    const rows = s.tail.take(this.backing!, this.id, s.id, limit, this.inMemory);
    this.loadSessionCold(rows);
    return rows.length > 0;
  }

  // Reads up to `limit` cold rows of any sessions into memory (a purge draining the entity).
  private fillSessions(limit: number): boolean {
    let loaded = 0;
    for (const s of [...this.sessions.values()]) {
      if (loaded >= limit) break;
      const before = this.rows.size;
      this.fillSession(s, Math.min(SESSION_WINDOW * 4, limit - loaded));
      loaded += this.rows.size - before;
    }
    return loaded > 0;
  }

  // Cold rows of sessions join memory as available: they leave the entity's cold count.
  private loadSessionCold(rows: MessageRow[]): void {
    const cold = this.sessionCold!;
    for (const row of rows) {
      cold.count = Math.max(0, cold.count - 1);
      cold.bytes = Math.max(0, cold.bytes - row.size);
      this.load(row);
    }
  }

  // A row read from the cold tail joins memory as available, with its deadline.
  private load(row: MessageRow): void {
    this.addRow(row);
    this.makeReady(row);
    this.backing!.loaded(this, row);
  }

  /** Adds (or replaces) a stored row. */
  addRow(row: MessageRow): void {
    const old = this.rows.get(row.seq);
    if (old) {
      this.memBytes -= old.size;
      this.stateCounts[old.state]--;
      this.untrack(old, false); // replaced, not gone: keep its session (and the session's ready order)
    }
    this.rows.set(row.seq, row);
    this.memBytes += row.size;
    this.stateCounts[row.state]++;
    if (row.seq > this.maxSeq) this.maxSeq = row.seq;
    this.cold?.held(row.seq);
    const s = this.sessionOf(row);
    if (s) {
      s.tail.held(row.seq);
      if (row.state === 'active') s.active++;
      if (row.seq > s.maxSeq) s.maxSeq = row.seq;
      s.stored.add(row.seq);
      if (row.state === 'locked') s.locked.add(row.seq);
    }
  }

  /** Removes a stored row; true if it was there. */
  removeRow(seq: number): boolean {
    const old = this.rows.get(seq);
    if (!old) return false;
    this.memBytes -= old.size;
    this.stateCounts[old.state]--;
    this.rows.delete(seq);
    this.cold?.removed(seq);
    this.untrack(old, true);
    return true;
  }

  /** Changes a row's state; every state change of a row held here goes through this (it keeps `counts`). */
  setState(row: MessageRow, state: MessageState): void {
    if (this.rows.get(row.seq) === row) {
      this.stateCounts[row.state]--;
      this.stateCounts[state]++;
      const s = this.sessionOf(row);
      if (s) s.active += (state === 'active' ? 1 : 0) - (row.state === 'active' ? 1 : 0);
      if (s && state === 'locked') s.locked.add(row.seq);
      else if (s) s.locked.delete(row.seq);
    }
    row.state = state;
  }

  /** True when messages are grouped into sessions (RequiresSession). */
  get sessionful(): boolean {
    return this.settings.requiresSession && this.kind !== 'deadletter';
  }

  // The session ids in ordinal order, kept until the set of sessions changes (get-message-sessions pages on it).
  private sortedSessionIds: string[] | null = null;

  /** The ids of this entity's sessions in ordinal order (sorted again only after a session came or went). */
  sessionIds(): readonly string[] {
    this.sortedSessionIds ??= [...this.sessions.keys()].sort();
    return this.sortedSessionIds;
  }

  /** The session with this id, created on first use. */
  session(id: string): SessionState {
    let s = this.sessions.get(id);
    if (!s) {
      s = new SessionState(id);
      this.sessions.set(id, s);
      this.sortedSessionIds = null;
    }
    return s;
  }

  /**
   * Forgets a session that has nothing left to remember: no stored message, no state, no lock. Such a session is
   * what Service Bus shows for a session id never used (no messages, no state, free), so dropping it changes
   * nothing a client can see, and sessions that come and go do not pile up in memory.
   */
  pruneSession(s: SessionState): void {
    if (s.stored.size > 0 || s.tail.open || s.state !== null || s.holder !== null || this.sessions.get(s.id) !== s) return;
    s.indexedSeq = undefined; // any heap entry of it is now stale
    this.sessions.delete(s.id);
    this.sortedSessionIds = null;
  }

  /** A session lock ended: the session goes back among the available ones if it has a message available. */
  sessionFreed(s: SessionState): void {
    const head = this.firstReady(s);
    if (head !== undefined) this.availableSessions.offer(s, head);
    else this.pruneSession(s);
  }

  /** Takes the free session whose first available message is oldest (accept-next-session), or undefined. */
  takeAvailableSession(): SessionState | undefined {
    return this.availableSessions.take((s) => this.firstReady(s));
  }

  /** The lowest available sequence number of a current session of this entity, or undefined. */
  private firstReady(s: SessionState): number | undefined {
    if (this.sessions.get(s.id) !== s || !this.hasReady(s)) return undefined;
    return s.ready.peek();
  }

  /** The held session lock a message of this entity taken now falls under (its lock then lasts as long), if any. */
  heldSession(row: MessageRow, now: number): SessionState | undefined {
    const s = this.sessionful && row.sessionId !== undefined ? this.sessions.get(row.sessionId) : undefined;
    return s?.isLocked(now) ? s : undefined;
  }

  /**
   * True when a message's time to live has passed. A dead-letter queue's messages never expire: Service Bus keeps
   * dead letters until someone takes them ("there's no automatic cleanup of the DLQ").
   */
  hasExpired(row: MessageRow, now: number): boolean {
    return this.kind !== 'deadletter' && row.expiresAt !== null && row.expiresAt <= now;
  }

  /** Makes a committed row visible to receivers (in its session's order on a session-enabled entity). */
  makeReady(row: MessageRow): void {
    this.setState(row, 'active');
    delete row.lock;
    if (this.sessionful && row.sessionId !== undefined) {
      const s = this.session(row.sessionId);
      s.ready.push(row.seq);
      this.availableSessions.offer(s, row.seq);
    } else {
      this.ready.push(row.seq);
    }
  }

  /** Takes the lowest available row (of one session, on a session-enabled entity), skipping stale entries. */
  takeReady(sessionId?: string): MessageRow | undefined {
    const s = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    const heap = sessionId === undefined ? this.ready : s?.ready;
    if (!heap) return undefined;
    if (sessionId === undefined) this.fillWindow();
    // The session's holder drains its front: it is refilled from the store before it runs dry, or when the next
    // row in memory comes after the tail's first (a scheduled message fell due behind it), so the session's
    // messages go out in sequence order across the front's edge.
    else if (s?.tail.open && (s.active < SESSION_WINDOW / 2 || (s.ready.peek() ?? Infinity) > s.tail.from)) {
      this.fillSession(s, Math.max(SESSION_WINDOW - s.active, 1));
    }
    for (;;) {
      const seq = heap.pop();
      if (seq === undefined) return undefined;
      const row = this.rows.get(seq);
      if (row && row.state === 'active') return row;
    }
  }

  /** True when the session has a message available now (stale heap entries are dropped on the way). */
  hasReady(s: SessionState): boolean {
    for (;;) {
      const seq = s.ready.peek();
      if (seq === undefined && !this.fillSession(s, SESSION_START)) return false;
      if (seq === undefined) continue;
      if (this.rows.get(seq)?.state === 'active') return true;
      s.ready.pop();
    }
  }

  // The session a row of this entity belongs to (created on first use), or undefined when not session-enabled.
  private sessionOf(row: MessageRow): SessionState | undefined {
    return this.sessionful && row.sessionId !== undefined ? this.session(row.sessionId) : undefined;
  }

  // A row left: its session stops counting it, and is forgotten if nothing else keeps it.
  private untrack(row: MessageRow, prune: boolean): void {
    if (!this.sessionful || row.sessionId === undefined) return;
    const s = this.sessions.get(row.sessionId);
    if (!s) return;
    s.stored.delete(row.seq);
    s.locked.delete(row.seq);
    if (row.state === 'active') s.active--;
    if (prune) s.tail.removed(row.seq);
    if (!prune) return;
    // The session's last available message in memory left while the store holds more: the next comes in, so
    // the session stays filed for accept-next-session.
    if (s.active === 0 && s.tail.open) this.fillSession(s, SESSION_START);
    this.pruneSession(s);
  }
}
