// The storage seam. Operations are in broker terms; no LMDB type crosses it. Every implementation must pass
// test/store/contract.ts. A write resolves only once it is committed *and* synced (the durability barrier):
// the broker answers `accepted` to a send, or confirms a complete, only after that.
// A lock lives in its row (`row.lock`): there is no separate lock table. Recovery reads every held row anyway, and
// lookups by token are answered from memory, so a table would only have cost two more writes per lock taken and
// two more per lock ended (4 of the 7 LMDB operations of a peek-lock receive + complete, measured by profile).

import type { DeliveryHistory } from './history.js';
import type { MessageRow } from './row.js';

export type { DeliveryHistory } from './history.js';

/** One change inside an atomic write. */
export type StoreOp =
  /**
   * Insert or replace a message row (its lock included); `body` on first insert. A row's body is decided when it
   * is first stored: its own (`body`), or a shared one its `bodyRef` names. A replace without `body` keeps that
   * choice whatever `row.bodyRef` says; a put with `body` stores the row's own and drops its reference.
   */
  | { op: 'put'; qid: number; row: MessageRow; body?: Uint8Array }
  /** Remove a message (row, body and delivery history; a shared body loses one reference). */
  | { op: 'delete'; qid: number; seq: number }
  /**
   * Store one body under [qid, seq] (a topic and its sequence number) for several rows to share: each later 'put'
   * of a new row without a body whose `row.bodyRef` names it adds a reference, each delete (or clear) of such a row
   * drops one, and the body goes with its last reference: at the end of the write, so ops inside one write may come
   * in any order (a body no row names by then, this one included, is not kept).
   */
  | { op: 'sharedBody'; qid: number; seq: number; body: Uint8Array }
  /** Persist a queue's sequence-number high-water mark so numbers are never reused after a restart. */
  | { op: 'nextSeq'; qid: number; nextSeq: number }
  /** Remember a message-id (as an opaque key) for duplicate detection until `until` (epoch ms). */
  | { op: 'dedup'; qid: number; key: string; until: number }
  /** Forget a duplicate-detection entry whose window has passed. */
  | { op: 'undedup'; qid: number; key: string }
  /** Write (or with null, delete) a small named value of an entity (e.g. a subscription's rules). */
  | { op: 'meta'; qid: number; key: string; value: unknown }
  /** Write (or with null, delete) a message session's record: its state and its lock. */
  | { op: 'session'; qid: number; sessionId: string; record: SessionRecord | null }
  /** Write (or with null, delete) the durable definition of an entity created or changed at run time. */
  | { op: 'entity'; path: string; record: EntityRecord | null }
  /** Remove everything an entity holds (rows, bodies, histories, dedup entries, sessions, named values); keeps its nextSeq. */
  | { op: 'clear'; qid: number }
  /**
   * Write (or with null, delete) a message's delivery history under [qid, seq]: always the whole image, so replaying
   * the op is idempotent. It lives and dies with the row: a `delete` of the row or a `clear` of its entity removes it.
   */
  | { op: 'history'; qid: number; seq: number; record: DeliveryHistory | null };

/**
 * The durable definition of an entity created, updated or deleted through the management API. The store keeps it
 * by path and does not read `description` (the broker's own shape, plain JSON-able data).
 */
export interface EntityRecord {
  /** The entity path as created (case kept; subscriptions are `<topic>/Subscriptions/<name>`). */
  path: string;
  kind: 'queue' | 'topic' | 'subscription';
  /** The entity's settings in broker terms. */
  description: unknown;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms. */
  updatedAt: number;
}

/** What is stored of a message session: its state (set-session-state) and until when it is locked. */
export interface SessionRecord {
  state: Uint8Array | null;
  lockedUntil: number;
  updatedAt: number;
}

/** A duplicate-detection entry: an opaque message-id key and the end of its window. */
export interface DedupEntry {
  key: string;
  until: number;
}

/** What the broker needs to rebuild a queue's in-memory index at start-up. */
export interface QueueSnapshot {
  nextSeq: number;
  /** Every stored row of the queue, in sequence order. */
  rows: MessageRow[];
}

/** What start-up reads of a queue: its counters and only the rows that must live in memory. */
export interface QueueFront {
  nextSeq: number;
  /** Stored rows of the queue and the sum of their `size`, kept by the store in every write (never recounted). */
  count: number;
  bytes: number;
  /** Every row whose state is not 'active' (locked, deferred, scheduled), in sequence order. */
  held: MessageRow[];
}

/** A durable message store. */
export interface Store {
  /** Opens (or creates) the store. */
  open(): Promise<void>;
  /** Waits for pending writes, then closes. */
  close(): Promise<void>;
  /** The persistent numeric id of an entity path, allocated on first use and stable across restarts. */
  queueId(path: string): Promise<number>;
  /** Reads a queue's rows and sequence high-water mark. */
  load(qid: number): QueueSnapshot;
  /** Reads a queue's counters, sequence high-water mark and held rows, without reading its other rows. */
  loadFront(qid: number): QueueFront;
  /** Up to `limit` stored rows with from <= seq <= to, in sequence order (only committed data). */
  rowsFrom(qid: number, from: number, limit: number, to?: number): MessageRow[];
  /** Reads one stored row (only committed data). */
  readRow(qid: number, seq: number): MessageRow | undefined;
  /** Reads a named value of an entity written by a 'meta' op (undefined if none). */
  loadMeta(qid: number, key: string): unknown;
  /** Every stored entity definition (written by 'entity' ops), in path order. */
  loadEntities(): EntityRecord[];
  /** Reads a queue's session records by session id. */
  loadSessions(qid: number): Map<string, SessionRecord>;
  /** Reads a queue's duplicate-detection entries (including ones whose window has passed). */
  loadDedup(qid: number): DedupEntry[];
  /**
   * Ids of the sessions that have stored rows in this queue (rows with a `sessionId`), each once, read lazily from
   * the session index (one seek per session, not one read per row; only committed data).
   */
  sessionIds(qid: number): Iterable<string>;
  /** Up to `limit` stored rows of one session with seq >= from, in sequence order (only committed data). */
  sessionRowsFrom(qid: number, sessionId: string, from: number, limit: number): MessageRow[];
  /** Sequence numbers of one session's stored rows from `from` on, ascending, read lazily (only committed data). */
  sessionSeqsFrom(qid: number, sessionId: string, from: number): Iterable<number>;
  /** Sequence numbers of a queue's stored rows from `from` on, ascending, read lazily (only committed data). */
  seqsFrom(qid: number, from: number): Iterable<number>;
  /** Reads a message's delivery history (only committed data), as the caller's own copy; undefined if it has none. */
  readHistory(qid: number, seq: number): DeliveryHistory | undefined;
  /** Reads a stored body synchronously, following a row's `bodyRef` to a shared body (only committed data). */
  readBody(qid: number, seq: number): Uint8Array | undefined;
  /**
   * Applies `ops` atomically; resolves once committed and synced to disk, rejects if not. A store with a log fills
   * `stamp` (if given) before resolving: when the flush carrying this write started, and how long it took.
   */
  write(ops: StoreOp[], stamp?: WriteStamp): Promise<void>;
  /** Tells `o` of the waits behind the durability point (a store with a log only; others have none to tell). */
  observeWaits?(o: StoreWaitObserver): void;
}

// The waits of one commit, named for the benchmark and /metrics (issue 37): the caller knows when its plan was
// handed over, only the store knows when the log write started and ended, and when LMDB caught up behind it. Both
// are plain numbers on performance.now()'s scale, so the write path allocates nothing more for them.
/** Filled by a logging store on a write: its log flush's start (performance.now() ms) and its length (ms). */
export interface WriteStamp {
  flushAt: number;
  flushMs: number;
}

/** Hears a logging store's waits after the acknowledgement. */
export interface StoreWaitObserver {
  /** `records` log records, flushed together, reached the index `lagMs` after their flush returned. */
  applied(lagMs: number, records: number): void;
}
