// The Store's read methods over the layout's tables (docs/architecture.md, "The store layout"). LmdbStore runs them
// on its LMDB databases; the logged store runs them on its overlay of those databases (src/store/log/overlay.ts),
// so a write the log has acknowledged is read the same way whether LMDB has applied it yet or not.

import type { DedupEntry, DeliveryHistory, EntityRecord, QueueFront, QueueSnapshot, SessionRecord, StoreOp } from '../store.js';
import type { StoreTables } from './dbs.js';
import {
  countersKey,
  ENTITY_DEF_RANGE,
  entityMetaKey,
  messageKey,
  nextSeqKey,
  queueEnd,
  queueStart,
  sessionRowKey,
  sessionRowsEnd,
  type MessageRow,
} from './keys.js';

/** A queue's rows and sequence high-water mark. */
export function load(dbs: StoreTables, qid: number): QueueSnapshot {
  const rows: MessageRow[] = [];
  for (const { value } of dbs.rows.getRange({ start: queueStart(qid), end: queueEnd(qid) })) rows.push(value);
  const last = rows.length > 0 ? rows[rows.length - 1]!.seq : 0;
  return { nextSeq: nextSeqAfter(dbs, qid, last), rows };
}

// Reads the kept counters, the held index and the last key; never the queue's other rows. All reads are made in
// one synchronous pass, so they share lmdb-js' read snapshot and agree with one another.
/** A queue's counters, sequence mark and held rows. */
export function loadFront(dbs: StoreTables, qid: number): QueueFront {
  const [count, bytes] = dbs.counters.get(countersKey(qid)) ?? [0, 0];
  const held: MessageRow[] = [];
  for (const key of dbs.held.getKeys({ start: queueStart(qid), end: queueEnd(qid) })) {
    const row = dbs.rows.get(key);
    if (row) held.push(row);
  }
  let last = 0;
  for (const key of dbs.rows.getKeys({ start: queueEnd(qid), end: queueStart(qid), reverse: true, limit: 1 })) last = key[1];
  return { nextSeq: nextSeqAfter(dbs, qid, last), count, bytes, held };
}

// The mark alone would do if every put came with its nextSeq op; max() keeps seqs unique even if one did not.
function nextSeqAfter(dbs: StoreTables, qid: number, lastSeq: number): number {
  const mark = dbs.meta.get(nextSeqKey(qid));
  return Math.max(typeof mark === 'number' ? mark : 1, lastSeq + 1, 1);
}

/** Up to `limit` rows with from <= seq <= to. */
export function rowsFrom(dbs: StoreTables, qid: number, from: number, limit: number, to = Number.MAX_SAFE_INTEGER): MessageRow[] {
  const out: MessageRow[] = [];
  const range = { start: messageKey(qid, Math.max(0, from)), end: messageKey(qid, to + 1), limit };
  for (const { value } of dbs.rows.getRange(range)) out.push(value);
  return out;
}

/** Every stored entity definition, in path order. */
export function loadEntities(dbs: StoreTables): EntityRecord[] {
  const out: EntityRecord[] = [];
  for (const { value } of dbs.meta.getRange(ENTITY_DEF_RANGE)) out.push(value as EntityRecord);
  return out;
}

/** A named value of an entity. */
export function loadMeta(dbs: StoreTables, qid: number, key: string): unknown {
  return dbs.meta.get(entityMetaKey(qid, key));
}

/** A queue's session records. */
export function loadSessions(dbs: StoreTables, qid: number): Map<string, SessionRecord> {
  const out = new Map<string, SessionRecord>();
  for (const { key, value } of dbs.sessions.getRange({ start: [qid], end: [qid + 1] })) {
    out.set(key[1], { ...value, state: value.state ? new Uint8Array(value.state) : null });
  }
  return out;
}

/** A queue's duplicate-detection entries. */
export function loadDedup(dbs: StoreTables, qid: number): DedupEntry[] {
  const out: DedupEntry[] = [];
  for (const { key, value } of dbs.dedup.getRange({ start: [qid], end: [qid + 1] })) out.push({ key: key[1], until: value });
  return out;
}

/** Session ids with stored rows, one seek per session. */
export function* sessionIds(dbs: StoreTables, qid: number): Iterable<string> {
  // One seek per session: after a session's first key, jump past all of its keys to the next session's first.
  let start: [number, string, number] | [number] = queueStart(qid);
  for (;;) {
    let id: string | undefined;
    for (const key of dbs.sessionRows.getKeys({ start, end: queueEnd(qid), limit: 1 })) id = key[1];
    if (id === undefined) return;
    yield id;
    start = sessionRowsEnd(qid, id);
  }
}

/** Up to `limit` rows of one session with seq >= from. */
export function sessionRowsFrom(dbs: StoreTables, qid: number, sessionId: string, from: number, limit: number): MessageRow[] {
  const out: MessageRow[] = [];
  const range = { start: sessionRowKey(qid, sessionId, Math.max(0, from)), end: sessionRowsEnd(qid, sessionId), limit };
  for (const key of dbs.sessionRows.getKeys(range)) {
    const row = dbs.rows.get(messageKey(qid, key[2]));
    if (row) out.push(row);
  }
  return out;
}

/** Sequence numbers of one session's rows from `from` on, lazily. */
export function* sessionSeqsFrom(dbs: StoreTables, qid: number, sessionId: string, from: number): Iterable<number> {
  const range = { start: sessionRowKey(qid, sessionId, Math.max(0, from)), end: sessionRowsEnd(qid, sessionId) };
  for (const key of dbs.sessionRows.getKeys(range)) yield key[2];
}

/** Sequence numbers of a queue's rows from `from` on, lazily. */
export function* seqsFrom(dbs: StoreTables, qid: number, from: number): Iterable<number> {
  // Keys only, in key order: a peek of the first few messages of a deep queue reads a few keys, not every row.
  for (const key of dbs.rows.getKeys({ start: messageKey(qid, Math.max(0, from)), end: queueEnd(qid) })) yield key[1];
}

/** A row's body, following its `bodyRef` to a shared body. */
export function readBody(dbs: StoreTables, qid: number, seq: number): Uint8Array | undefined {
  // With encoding 'binary' lmdb-js returns a copy (or a dedicated buffer), never its reused read buffer.
  const own = dbs.bodies.get(messageKey(qid, seq));
  if (own) return own;
  const ref = dbs.rows.get(messageKey(qid, seq))?.bodyRef;
  return ref && dbs.bodies.get(messageKey(ref[0], ref[1]));
}

/** The Store's read methods over the tables a subclass names (its LMDB databases, or the log's overlay of them). */
export abstract class TableReads {
  /** The tables reads go to; throws if the store is not open (or has failed). */
  protected abstract readTables(): StoreTables;

  /** See Store.load. */
  load(qid: number): QueueSnapshot {
    return load(this.readTables(), qid);
  }

  /** See Store.loadFront. */
  loadFront(qid: number): QueueFront {
    return loadFront(this.readTables(), qid);
  }

  /** See Store.rowsFrom. */
  rowsFrom(qid: number, from: number, limit: number, to?: number): MessageRow[] {
    return rowsFrom(this.readTables(), qid, from, limit, to);
  }

  /** See Store.readRow. */
  readRow(qid: number, seq: number): MessageRow | undefined {
    return this.readTables().rows.get(messageKey(qid, seq));
  }

  /** See Store.readHistory. */
  readHistory(qid: number, seq: number): DeliveryHistory | undefined {
    return this.readTables().history.get(messageKey(qid, seq));
  }

  /** See Store.loadMeta. */
  loadMeta(qid: number, key: string): unknown {
    return loadMeta(this.readTables(), qid, key);
  }

  /** See Store.loadEntities. */
  loadEntities(): EntityRecord[] {
    return loadEntities(this.readTables());
  }

  /** See Store.loadSessions. */
  loadSessions(qid: number): Map<string, SessionRecord> {
    return loadSessions(this.readTables(), qid);
  }

  /** See Store.loadDedup. */
  loadDedup(qid: number): DedupEntry[] {
    return loadDedup(this.readTables(), qid);
  }

  /** See Store.sessionIds. */
  sessionIds(qid: number): Iterable<string> {
    return sessionIds(this.readTables(), qid);
  }

  /** See Store.sessionRowsFrom. */
  sessionRowsFrom(qid: number, sessionId: string, from: number, limit: number): MessageRow[] {
    return sessionRowsFrom(this.readTables(), qid, sessionId, from, limit);
  }

  /** See Store.sessionSeqsFrom. */
  sessionSeqsFrom(qid: number, sessionId: string, from: number): Iterable<number> {
    return sessionSeqsFrom(this.readTables(), qid, sessionId, from);
  }

  /** See Store.seqsFrom. */
  seqsFrom(qid: number, from: number): Iterable<number> {
    return seqsFrom(this.readTables(), qid, from);
  }

  /** See Store.readBody. */
  readBody(qid: number, seq: number): Uint8Array | undefined {
    return readBody(this.readTables(), qid, seq);
  }

  /** Shared bodies stored and not yet freed (as MemoryStore's; for tests and diagnostics). */
  sharedBodies(): number {
    return this.readTables().refs.getCount();
  }

  /** See Store.write. */
  abstract write(ops: StoreOp[]): Promise<void>;
}
