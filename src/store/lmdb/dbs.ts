// The shape of the store's LMDB environment: its named databases and their key and value types. Kept apart from
// env.ts (which opens them) so that the migration code can name them without importing the opener.

import type { Database, RootDatabase } from 'lmdb';
import type { MessageRow } from './keys.js';
import type { DeliveryHistory } from '../history.js';

/** The environment and the named databases of docs/architecture.md, "The store layout", that this store uses. */
export interface LmdbDbs {
  env: RootDatabase;
  /** Schema version, queue-id allocator, per-queue sequence high-water marks. */
  meta: Database<unknown, string | [string] | [string, string] | [string, number] | [string, number, string]>;
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
  sessions: Database<{ state: Uint8Array | null; lockedUntil: number; updatedAt: number }, [number, string]>;
}

