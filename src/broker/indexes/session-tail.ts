// The cold tail of a session-enabled entity: each session keeps in memory only the front of its available messages
// (the next ones its holder can take), the rows that carry a deadline or wait on purpose (locked, deferred,
// scheduled) stay in memory as on any queue (cold-tail.ts), and the rest stays in the store, read in sequence order
// through the store's session index as the session's front drains. A backlog of a million messages over ten
// thousand sessions then costs memory for each session's record and its first message (accept-next-session files a
// session under its oldest available message: Service Bus hands out "the next available session"), and a restart
// reads those, not every row.
//
// Per session, which stored rows are cold is decided by sequence number, as in ColdTail: every row of the session
// below `from` is in memory; at or above it, a stored available row memory does not hold is cold, except one whose
// insert has committed but not been accounted yet (`inserting`) or one memory has just removed whose delete has not
// committed (`gone`). Unlike ColdTail, a session does not count its cold rows (start-up would have to read every
// index key to count them): a session tail is open or not, and a read that reaches the session's end closes it.
// The entity counts its cold rows and bytes as a whole (from the store's counters at start-up).

import type { MessageRow } from '../types.js';

/** Available messages one session holds in memory before new ones stay in the store. */
export const SESSION_WINDOW = 64;

/** Available messages per session read at start-up (the session's first, which files it for accept-next). */
export const SESSION_START = 1;

/** The reads a session tail needs from the store (only committed data). */
export interface SessionSource {
  sessionRowsFrom(qid: number, sessionId: string, from: number, limit: number): MessageRow[];
}

/** Where one session's stored rows that are not in memory begin, and the rows in flight between the two. */
export class SessionTail {
  /** True when the store may hold cold rows of this session at or above `from`. */
  open = false;
  /** Lowest sequence number that may be cold; every stored row of the session below it is in memory. */
  from = 0;
  // Created on first use: most sessions never need them, and an entity may have many thousands of sessions.
  private inserting: Set<number> | null = null;
  private gone: Set<number> | null = null;

  /** A new row of this session is being written; until it is accounted, a store read must not take it as cold. */
  expectInsert(seq: number): void {
    (this.inserting ??= new Set()).add(seq);
  }

  /**
   * Decides where a committed, available row of the session goes: true when it stays in the store. Once the tail
   * is open every row at or above `from` stays; otherwise one stays only when memory holds a full front of the
   * session (`window`) and the row comes after every sequence number memory has held of it (see ColdTail.admit).
   */
  admit(row: MessageRow, activeInMemory: number, maxInMemory: number, window: number): boolean {
    this.inserting?.delete(row.seq);
    if (this.open) return row.seq >= this.from;
    if (activeInMemory < window || row.seq <= maxInMemory) return false;
    this.open = true;
    this.from = row.seq;
    return true;
  }

  /** Opens the tail over the whole session (start-up: memory holds only the session's held rows). */
  openAll(): void {
    this.open = true;
    this.from = 0;
  }

  /** Memory removed a row; until its delete commits, a store read must not take it as cold. */
  removed(seq: number): void {
    if (this.open && seq >= this.from) (this.gone ??= new Set()).add(seq);
  }

  /** Memory holds this row (again): it is neither being inserted nor gone. */
  held(seq: number): void {
    this.inserting?.delete(seq);
    this.gone?.delete(seq);
  }

  /** True when `seq` may name a cold row of this session. */
  mayHold(seq: number): boolean {
    return this.open && seq >= this.from && !this.inserting?.has(seq) && !this.gone?.has(seq);
  }

  /**
   * Takes up to `limit` cold rows in sequence order, for the caller to put in memory. A read that reaches the end
   * of the session closes the tail: every stored row of the session is then in memory.
   */
  take(source: SessionSource, qid: number, sessionId: string, limit: number, inMemory: (seq: number) => boolean): MessageRow[] {
    const out: MessageRow[] = [];
    while (this.open && out.length < limit) {
      // No more than asked for: at start-up each of thousands of sessions asks for its first message only. (A read
      // past a row memory holds asks again; a read that comes back short has reached the session's end.)
      const want = limit - out.length;
      const chunk = source.sessionRowsFrom(qid, sessionId, this.from, want);
      for (const row of chunk) {
        this.from = row.seq + 1;
        if (row.state !== 'active' || inMemory(row.seq) || this.inserting?.has(row.seq) || this.gone?.has(row.seq)) continue;
        out.push(row);
        if (out.length >= limit) break;
      }
      if (chunk.length < want && out.length < limit) this.close();
      else if (!chunk.length) this.close();
    }
    this.prune();
    return out;
  }

  private close(): void {
    this.open = false;
    this.from = 0;
    this.gone = null;
  }

  // Entries below `from` can no longer matter: memory holds (or held) every row of the session there.
  private prune(): void {
    for (const set of [this.inserting, this.gone]) {
      if (set && set.size > 256) for (const s of set) if (s < this.from) set.delete(s);
    }
  }
}
