// Schema migrations, run on open before anything else reads the store. Version 1 -> 2 adds three databases the
// store keeps in every write from then on: the `held` index (rows not 'active'), per-queue `counters` (rows and
// bytes) and shared-body `refs`. None of them changes a row or a body; they are derived, so the migration builds
// them by one scan of the rows, in ONE write transaction that also sets the version: a crash (kill -9, power)
// anywhere in it leaves the store exactly at version 1, and the next open runs the migration again from scratch.
// A 1,000,000-row queue is one pass over its rows (seconds), paid once. Version 2 -> 3 adds the `sessionRows`
// index the same way: derived from the rows, built in one transaction that also sets the version. Version 3 -> 4
// changes no data: it only marks the store as written behind the write-ahead log, which older builds cannot replay.

import type { LmdbDbs } from './dbs.js';
import { countersKey, messageKey, SCHEMA_KEY, sessionRowKey } from './keys.js';

/** Builds the version-2 databases from a version-1 store's rows and sets the version to 2, in one transaction. */
export async function migrateFrom1(dbs: LmdbDbs): Promise<void> {
  await dbs.env.transaction(() => {
    // Re-read inside the write transaction: it is the only writer, so another opener cannot have migrated meanwhile.
    if (dbs.meta.get(SCHEMA_KEY) !== 1) return;
    // Version 1 never wrote these; cleared anyway so the result depends on the rows alone.
    for (const db of [dbs.held, dbs.counters, dbs.refs] as LmdbDbs['held'][]) {
      for (const key of [...db.getKeys()]) db.remove(key);
    }
    const counters = new Map<number, [number, number]>();
    const refs = new Map<string, { key: [number, number]; n: number }>();
    for (const { key, value: row } of dbs.rows.getRange()) {
      const [qid] = key;
      const c = counters.get(qid) ?? [0, 0];
      c[0] += 1;
      c[1] += row.size;
      counters.set(qid, c);
      if (row.state !== 'active') dbs.held.put(key, true);
      if (row.bodyRef) {
        const ref = messageKey(row.bodyRef[0], row.bodyRef[1]);
        const id = `${ref[0]}:${ref[1]}`;
        const r = refs.get(id) ?? { key: ref, n: 0 };
        r.n++;
        refs.set(id, r);
      }
    }
    for (const [qid, c] of counters) dbs.counters.put(countersKey(qid), c);
    // Only bodies that are stored get a count: a row naming a missing body reads as having none, as before.
    for (const { key, n } of refs.values()) if (dbs.bodies.doesExist(key)) dbs.refs.put(key, n);
    // Last, in the same transaction: the version says the derived databases are complete.
    dbs.meta.put(SCHEMA_KEY, 2);
  });
}

/** Builds the version-3 session index from a version-2 store's rows and sets the version to 3, in one transaction. */
export async function migrateFrom2(dbs: LmdbDbs): Promise<void> {
  await dbs.env.transaction(() => {
    if (dbs.meta.get(SCHEMA_KEY) !== 2) return;
    for (const key of [...dbs.sessionRows.getKeys()]) dbs.sessionRows.remove(key);
    for (const { key, value: row } of dbs.rows.getRange()) {
      if (row.sessionId !== undefined) dbs.sessionRows.put(sessionRowKey(key[0], row.sessionId, key[1]), true);
    }
    dbs.meta.put(SCHEMA_KEY, 3);
  });
}

/** Marks a version-3 store as version 4 (written behind the write-ahead log), in one transaction; no data changes. */
export async function migrateFrom3(dbs: LmdbDbs): Promise<void> {
  await dbs.env.transaction(() => {
    if (dbs.meta.get(SCHEMA_KEY) !== 3) return;
    dbs.meta.put(SCHEMA_KEY, 4);
  });
}
