// Every LMDB key the store uses is built here, so the key layout (docs/architecture.md, "The store layout") lives in
// one place and the codec can change without touching the store. Keys are arrays of numbers in lmdb-js' default
// ordered-binary encoding, which sorts element by element: [qid] < [qid, seq] < [qid + 1], so a queue's rows form one
// range. Entity paths are never part of a key (arbitrary strings, length limits); each gets a numeric qid once.

/** Orders two keys as LMDB stores them (ordered-binary): the log's overlay merges its keys into LMDB's ranges. */
export { compareKeys } from 'lmdb';

/** A stored message row (the store layer's own type). */
export type { MessageRow } from '../row.js';

/**
 * The layout version written to `meta`; bump it (with a migration, migrate.ts) whenever a key or value shape
 * changes. 1: rows, bodies, dedup, sessions. 2: adds the `held` index, per-queue `counters` and shared-body `refs`.
 * 3: adds the `sessionRows` index ([qid, session id, seq] of every row with a session id). 4: the store is written
 * behind the write-ahead log (`log/` beside the data file), so its newest writes may be in the log alone; a build that
 * does not replay the log must refuse it rather than open it without them. No key or value changed.
 */
export const SCHEMA_VERSION = 4;

/** `meta` key of the schema version. */
export const SCHEMA_KEY = 'schema';

/**
 * `meta` key of the write-ahead log's LSN that LMDB has applied up to (src/store/log/): written in the same
 * transaction as the records it covers, so after any crash it says exactly which records LMDB holds.
 */
export const LOG_APPLIED_KEY = 'logApplied';

/** `meta` key of the next queue id to hand out. */
export const NEXT_QID_KEY = 'nextQid';

/** `meta` key of a queue's sequence-number high-water mark. */
export function nextSeqKey(qid: number): [string, number] {
  return ['nextSeq', qid];
}

/** `names` key of an entity path. */
export function nameKey(path: string): string {
  return path;
}

/** `rows` / `bodies` key of one message. */
export function messageKey(qid: number, seq: number): [number, number] {
  return [qid, seq];
}

/** `counters` key of a queue's stored-row count and bytes. */
export function countersKey(qid: number): number {
  return qid;
}

/** First key of a queue's message range (inclusive). */
export function queueStart(qid: number): [number] {
  return [qid];
}

/** End of a queue's message range (exclusive): the next queue's prefix sorts after every [qid, seq]. */
export function queueEnd(qid: number): [number] {
  return [qid + 1];
}

/** `dedup` key of a duplicate-detection entry: the queue, then the broker's opaque message-id key. */
export function dedupKey(qid: number, key: string): [number, string] {
  return [qid, key];
}

/** `sessions` key of a message session's record. */
export function sessionKey(qid: number, sessionId: string): [number, string] {
  return [qid, sessionId];
}

/** `sessionRows` key of one message of a session: sorts a session's messages together, in sequence order. */
export function sessionRowKey(qid: number, sessionId: string, seq: number): [number, string, number] {
  return [qid, sessionId, seq];
}

/**
 * Past every `sessionRowKey` of this session (sequence numbers stay below 2^53), and before the next session's:
 * ordered-binary sorts an array element by element, so [qid, id, x] sorts by id first.
 */
export function sessionRowsEnd(qid: number, sessionId: string): [number, string, number] {
  return [qid, sessionId, Number.MAX_SAFE_INTEGER];
}

/** `meta` key of an entity's named value. */
export function entityMetaKey(qid: number, key: string): [string, number, string] {
  return ['entity', qid, key];
}

/** `meta` key of a runtime entity's definition, by path. */
export function entityDefKey(path: string): [string, string] {
  return ['entityDef', path];
}

/** Range of every `entityDefKey`: 'entityDef' sorts before 'entityDeg' element-wise, and after 'entity'. */
export const ENTITY_DEF_RANGE = { start: ['entityDef'] as [string], end: ['entityDeg'] as [string] };
