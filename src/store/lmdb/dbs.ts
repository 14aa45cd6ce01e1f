// The shape of the store's LMDB environment: its named databases and their key and value types. Kept apart from
// env.ts (which opens them) so that the migration code can name them without importing the opener.

import type { Database, RootDatabase } from 'lmdb';
import type { MessageRow } from './keys.js';
import type { DeliveryHistory } from '../history.js';

/** A key range as lmdb-js takes it: `start` inclusive, `end` exclusive (with `reverse`, start is the high end). */
export interface KeyRange {
  /** A key or a key prefix ([qid] sorts before every [qid, ...]). */
  start?: RangeKey;
  end?: RangeKey;
  limit?: number;
  reverse?: boolean;
}

/**
 * What the store's reads and `applyOps` use of one database: an lmdb-js `Database`, or the write-ahead log's
 * overlay of it (src/store/log/overlay.ts), which answers with the writes LMDB has not applied yet.
 */
export interface Table<V, K> {
  get(key: K): V | undefined;
  getRange(range?: KeyRange): Iterable<{ key: K; value: V }>;
  getKeys(range?: KeyRange): Iterable<K>;
  getCount(): number;
  put(key: K, value: V): unknown;
  remove(key: K): unknown;
}

/** The databases of the layout as tables: what reads and `applyOps` see (LmdbDbs is one). */
export interface StoreTables {
  meta: Table<unknown, MetaKey>;
  rows: Table<MessageRow, [number, number]>;
  bodies: Table<Uint8Array, [number, number]>;
  held: Table<true, [number, number]>;
  counters: Table<[number, number], number>;
  refs: Table<number, [number, number]>;
  sessionRows: Table<true, [number, string, number]>;
  history: Table<DeliveryHistory, [number, number]>;
  dedup: Table<number, [number, string]>;
  sessions: Table<StoredSession, [number, string]>;
}

/** A key or key prefix of a range. */
export type RangeKey = string | number | (string | number)[];

/** A `meta` key: a name, or a name and an entity (see keys.ts). */
export type MetaKey = string | [string] | [string, string] | [string, number] | [string, number, string];

/** A session record as stored. */
export interface StoredSession {
  state: Uint8Array | null;
  lockedUntil: number;
  updatedAt: number;
}

/** The environment and the named databases of docs/architecture.md, "The store layout", that this store uses. */
export interface LmdbDbs {
  env: RootDatabase;
  /** Schema version, queue-id allocator, per-queue sequence high-water marks. */
  meta: Database<unknown, MetaKey>;
  /** Entity path -> qid. */
  names: Database<number, string>;
  /** [qid, seq] -> row (msgpack). */
  rows: Database<MessageRow, [number, number]>;
  /**
   * [qid, seq] -> encoded message, written once, stored as raw bytes: a row's own body, or a shared body under a
   * topic's [qid, seq]. Its own database: rows and bodies sit on separate pages, so a read of rows reads no body
   * (the kernel may still map a few neighbouring body pages when it faults a row page in).
   */
  bodies: Database<Uint8Array, [number, number]>;
  /** [qid, seq] -> true for every row whose state is not 'active' (locked, deferred, scheduled). */
  held: Database<true, [number, number]>;
  /** qid -> [stored rows, sum of their `size`], kept in every write. */
  counters: Database<[number, number], number>;
  /** [qid, seq] of a shared body -> how many stored rows name it in `bodyRef`. */
  refs: Database<number, [number, number]>;
  /**
   * [qid, session id, seq] -> true for every row with a session id: a session's messages in order without reading
   * the entity's other rows, and the entity's session ids by one seek each (start-up reads no row to find them).
   */
  sessionRows: Database<true, [number, string, number]>;
  /**
   * [qid, seq] -> the message's delivery history (msgpack), written whole in the same transaction as the row change
   * it records, removed with the row. Added without a schema bump: an older store opens with it empty.
   */
  history: Database<DeliveryHistory, [number, number]>;
  /** [qid, message-id key] -> end of its duplicate-detection window. */
  dedup: Database<number, [number, string]>;
  /** [qid, session id] -> session record (state and lock). */
  sessions: Database<StoredSession, [number, string]>;
}

