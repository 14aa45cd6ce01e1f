// Opens the one LMDB environment of a store and its named databases, and checks the schema version. The options are the
// safety decisions of docs/durability.md, "The durability barrier"; they must never change between opens of the same
// directory (lmdb-js throws, and LMDB itself has been seen to panic, when sync flags disagree — lmdb-js #140).

import fs from 'node:fs';
import path from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { LmdbDbs } from './dbs.js';
import { diskFull, freeBytes } from './disk-space.js';
import { DiskFullError, SchemaError } from './errors.js';
import { SCHEMA_KEY, SCHEMA_VERSION } from './keys.js';
import { migrateFrom1, migrateFrom2, migrateFrom3 } from './migrate.js';
import { makeDirDurable, syncDir } from '../../fs/durable.js';

export type { LmdbDbs } from './dbs.js';

/**
 * Opens the environment at `dir` (creating the directory) and verifies or initialises the schema version.
 * `noMetaSync` is for the index behind the write-ahead log only (docs/durability.md, "LMDB behind the log").
 */
export async function openDbs(dir: string, opts: { noMetaSync?: boolean } = {}): Promise<LmdbDbs> {
  refuseNewStoreOnFullDisk(dir);
  let env: RootDatabase;
  try {
    makeDirDurable(dir, 0o700);
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    tightenModes(dir);
    env = open({
      path: dir,
      // data.mdb and lock.mdb hold every message: owner-only from creation (LMDB's own default is 0664). lmdb-js
      // hands this option to mdb_env_open but its typings omit it.
      ...({ permissionsMode: FILE_MODE } as object),
      // A directory even if its name has a dot in it (lmdb-js would otherwise guess "file").
      noSubdir: false,
      maxDbs: 32,
      // Off: with overlappingSync a commit promise resolves before fdatasync, and we settle sends on it.
      overlappingSync: false,
      // NEVER noSync: LMDB's data pages could then reach the disk after the meta page naming them (a corrupt file).
      noSync: false,
      // Behind the log only: each commit still fdatasyncs its pages, but not the meta page, which the next commit's
      // sync (or a checkpoint's mdb_env_sync) flushes; a power cut takes back at most the newest transactions, and
      // LMDB's documentation calls this integrity-preserving. The log holds every record those transactions applied.
      noMetaSync: opts.noMetaSync ?? false,
      useWritemap: false,
      cache: false,
      // 0 = commit at the next event turn; every write() issued in one turn shares that commit (group commit).
      commitDelay: 0,
      eventTurnBatching: true,
    });
  } catch (err) {
    throw openFailure(dir, err);
  }
  let dbs: LmdbDbs;
  try {
    dbs = {
      env,
      meta: env.openDB('meta', {}),
      names: env.openDB('names', {}),
      rows: env.openDB('rows', { sharedStructuresKey: Symbol.for('structures') }),
      bodies: env.openDB('bodies', { encoding: 'binary' }),
      dedup: env.openDB('dedup', {}),
      sessions: env.openDB('sessions', {}),
      held: env.openDB('held', {}),
      counters: env.openDB('counters', {}),
      refs: env.openDB('refs', {}),
      sessionRows: env.openDB('sessionRows', {}),
      history: env.openDB('history', {}),
    };
    observeBatchCommits(env);
    await checkSchema(dbs, dir);
    await dropLockTables(env);
    // LMDB fdatasyncs data.mdb but never its directory: without this a power cut can take back the names of
    // data.mdb and lock.mdb (and the lock file), i.e. the whole store, however many commits were synced.
    syncDir(dir);
  } catch (err) {
    await env.close().catch(() => undefined);
    if (err instanceof SchemaError || err instanceof DiskFullError) throw err;
    throw openFailure(dir, err);
  }
  return dbs;
}

/** Mode of the LMDB files: owner read/write only. */
const FILE_MODE = 0o600;

// Stores created before files were owner-only keep their 0644 files; LMDB applies its mode only on creation.
function tightenModes(dir: string): void {
  for (const f of ['data.mdb', 'lock.mdb']) {
    try {
      const file = path.join(dir, f);
      if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, FILE_MODE);
    } catch {
      // Absent (a new store), or not ours to change: the directory's mode still guards it.
    }
  }
}

/** Free bytes below which a new store is not created: LMDB's lock file and first pages, with room to spare. */
const NEW_STORE_NEEDS = 1024 * 1024;

// LMDB sizes lock.mdb with ftruncate and then writes it through a shared mapping; on a full filesystem that write
// has no page to land on and the kernel kills the process with SIGBUS (seen on a full tmpfs), which no error
// handler can turn into a message. So a new store (no data.mdb yet, or an empty one left by such a crash) is only
// created with room to spare. An existing store opens on a full disk: reading and draining it needs no new space.
function refuseNewStoreOnFullDisk(dir: string): void {
  let size = 0;
  try {
    size = fs.statSync(path.join(dir, 'data.mdb')).size;
  } catch {
    // No store yet.
  }
  if (size > 0) return;
  const free = freeBytes(dir);
  if (free !== null && free < NEW_STORE_NEEDS) throw new DiskFullError(dir, free, undefined, 'cannot create the message store');
}

// Creating data.mdb on a full disk fails with ENOSPC or, from LMDB, EIO; either is named as a full disk.
function openFailure(dir: string, err: unknown): Error {
  const free = diskFull(dir, err);
  if (free !== null) return new DiskFullError(dir, free, err);
  return new Error(`cannot open the message store at ${dir}: ${(err as Error).message}`, { cause: err });
}

// A new store gets the current version; a version-1 store is migrated (migrate.ts). A store with data but no
// version, or with another version, is refused rather than "repaired": LMDB has no repair tool and the data may
// be someone's only copy.
async function checkSchema(dbs: LmdbDbs, dir: string): Promise<void> {
  let found = dbs.meta.get(SCHEMA_KEY);
  if (found === 1) {
    await migrateFrom1(dbs);
    found = dbs.meta.get(SCHEMA_KEY);
  }
  if (found === 2) {
    await migrateFrom2(dbs);
    found = dbs.meta.get(SCHEMA_KEY);
  }
  if (found === 3) {
    await migrateFrom3(dbs);
    found = dbs.meta.get(SCHEMA_KEY);
  }
  if (found === SCHEMA_VERSION) return;
  if (typeof found === 'number' && found > SCHEMA_VERSION) {
    throw new SchemaError(
      `the data directory ${dir} holds a store written by a newer peeklock (schema version ${found}; this build ` +
        `reads version ${SCHEMA_VERSION}); run that newer peeklock, or choose another --data-dir (or Broker.DataDir)`,
    );
  }
  if (found !== undefined) {
    throw new SchemaError(
      `the data directory ${dir} holds a store with schema version ${JSON.stringify(found)}, which this build ` +
        `(version ${SCHEMA_VERSION}) cannot read; nothing was changed; choose another --data-dir (or Broker.DataDir)`,
    );
  }
  if (!isEmpty(dbs)) {
    throw new SchemaError(
      `the data directory ${dir} holds LMDB data but no peeklock schema version; nothing was changed; ` +
        `choose another --data-dir (or Broker.DataDir)`,
    );
  }
  // Inside a transaction lmdb-js writes at once and returns a settled promise; the commit is awaited here.
  await dbs.env.transaction(() => {
    if (dbs.meta.get(SCHEMA_KEY) === undefined) void dbs.meta.put(SCHEMA_KEY, SCHEMA_VERSION);
  });
}

// lmdb-js opens each event-turn batch with an internal instruction whose own commit promise nobody holds; when the
// commit fails (ENOSPC, EIO) that promise rejects unobserved and Node 20 exits on the unhandled rejection, even though
// every caller handled its own (docs/durability.md, "Disk full and disk errors"; reproduced with strace fault
// injection). The batch's `beforecommit` hook runs just before lmdb-js creates that promise in the same task, so a
// microtask queued here runs right after it and can attach a no-op handler through `committed`, which returns the
// current commit promise. The failure itself still reaches every write() caller through its own rejected promise.
function observeBatchCommits(env: RootDatabase): void {
  env.on('beforecommit', () =>
    queueMicrotask(() => {
      env.committed.then(undefined, () => undefined);
    }),
  );
}

// Stores written before the lock table was dropped (the lock lives in its row; see store.ts) still hold the
// `locks` and `lockexp` databases. Nothing reads them; their entries are cleared once so they do not keep space.
// Same schema version: the rows never changed, and an older build reads these rows the same way.
async function dropLockTables(env: RootDatabase): Promise<void> {
  for (const name of ['locks', 'lockexp']) {
    // Without `create`, lmdb-js returns undefined for a database that was never created (a store made by this build).
    const db = env.openDB(name, { create: false } as object) as Database | undefined;
    if (db && db.getKeysCount({ limit: 1 }) > 0) await db.clearAsync();
  }
}

function isEmpty(dbs: LmdbDbs): boolean {
  const all = [dbs.meta, dbs.names, dbs.rows, dbs.bodies, dbs.dedup, dbs.sessions, dbs.held, dbs.counters, dbs.refs] as Database<unknown, never>[];
  return all.every((db) => db.getKeysCount({ limit: 1 }) === 0);
}
