// The durable store: one LMDB environment (lmdb-js), one write transaction per event turn. Every write() of a turn
// is queued as a child transaction of lmdb-js' next batched write transaction, so the turn's writes share one
// commit and one fdatasync (group commit), while each write() still lands all-or-nothing: if applying one write
// throws, only its child transaction is aborted. (A plain transaction() callback that throws half-way leaves its
// earlier puts in the batch, and they commit.) With overlappingSync off the commit promise resolves after the
// sync, which is the durability barrier the Store contract asks for (docs/durability.md, "The durability barrier").

import type { Store, StoreOp } from '../store.js';
import { applyOps, stageOps } from './apply-ops.js';
import { compactBatch } from './compact-batch.js';
import { lockDataDir, type DirLock } from './dir-lock.js';
import { diskFull } from './disk-space.js';
import type { StoreTables } from './dbs.js';
import { openDbs, type LmdbDbs } from './env.js';
import { DiskFullError, StoreFatalError } from './errors.js';
import { LOG_APPLIED_KEY, NEXT_QID_KEY, SCHEMA_KEY, messageKey, nameKey } from './keys.js';
import { TableReads } from './reads.js';

/** A `Store` on an LMDB environment in the directory `path`. */
export class LmdbStore extends TableReads implements Store {
  private readonly path: string;
  private dbs: LmdbDbs | null = null;
  /** The data directory's exclusive lock, held from before the environment opens until after it closes. */
  private lock: DirLock | null = null;
  /** Ids known to be committed; ids never change, so this cache never goes stale. */
  private readonly ids = new Map<string, number>();
  /** Allocations in flight, so concurrent first uses of one path share one id. */
  private readonly allocating = new Map<string, Promise<number>>();
  /** Rejecters of every transaction not yet settled by lmdb-js, for when it never will be (see `fail`). */
  private readonly inflight = new Set<(err: Error) => void>();
  private fatal: StoreFatalError | null = null;

  /** Opened with `noMetaSync`, as the index behind the write-ahead log (src/store/log/); see `behindLog`. */
  private readonly behindLog: boolean;

  /**
   * `behindLog`: this store is the index behind a write-ahead log, which is the durability point. LMDB is then
   * opened with `noMetaSync` (a power cut may take back the newest transactions, which the log replays) and is
   * written through `applyLogged`, not `write`; `queueId`, which the log does not carry, syncs the environment.
   */
  constructor(opts: { path: string; behindLog?: boolean }) {
    super();
    this.path = opts.path;
    this.behindLog = opts.behindLog ?? false;
  }

  async open(): Promise<void> {
    if (this.dbs) return;
    this.fatal = null;
    // Before LMDB opens anything: a second broker on this directory must not even read it (dir-lock.ts).
    this.lock ??= lockDataDir(this.path);
    try {
      this.dbs = await openDbs(this.path, { noMetaSync: this.behindLog });
    } catch (err) {
      this.releaseLock();
      throw err;
    }
  }

  async close(): Promise<void> {
    const dbs = this.dbs;
    if (!dbs) return;
    this.dbs = null;
    this.ids.clear();
    // After a fatal error lmdb-js' close would wait forever for transactions that can no longer commit; the
    // process is expected to exit, which releases the environment and the directory lock.
    if (this.fatal) return;
    // lmdb-js' close waits for every queued transaction to commit (or fail) before closing the environment.
    await dbs.env.close();
    this.releaseLock();
  }

  private releaseLock(): void {
    this.lock?.release();
    this.lock = null;
  }

  async queueId(path: string): Promise<number> {
    const known = this.ids.get(path);
    if (known !== undefined) return known;
    const dbs = this.requireOpen();
    const stored = dbs.names.get(nameKey(path));
    if (stored !== undefined) {
      this.ids.set(path, stored);
      return stored;
    }
    let pending = this.allocating.get(path);
    if (!pending) {
      // Read and allocate inside the write transaction: it is the only writer, so the check cannot race.
      pending = this.transact(dbs, () => {
        const existing = dbs.names.get(nameKey(path));
        if (existing !== undefined) return existing;
        const next = dbs.meta.get(NEXT_QID_KEY);
        const qid = typeof next === 'number' ? next : 1;
        // In the transaction these write at once (settled promises); `pending` is the commit.
        void dbs.meta.put(NEXT_QID_KEY, qid + 1);
        void dbs.names.put(nameKey(path), qid);
        return qid;
      }).then(
        async (qid) => {
          // Behind the log a commit is durable only at the next sync; an id must be, before any record names it.
          if (this.behindLog) await this.syncToDisk();
          this.allocating.delete(path);
          this.ids.set(path, qid);
          return qid;
        },
        (err: unknown) => {
          this.allocating.delete(path);
          throw err;
        },
      );
      this.allocating.set(path, pending);
    }
    return pending;
  }


  /** The databases, for the log's overlay and for reads through it. */
  tables(): StoreTables {
    return this.requireOpen();
  }

  /** The last write-ahead log LSN whose record LMDB holds (0 for a store never written through a log). */
  appliedLsn(): number {
    const lsn = this.requireOpen().meta.get(LOG_APPLIED_KEY);
    return typeof lsn === 'number' ? lsn : 0;
  }

  /**
   * Applies log records, in LSN order, in one LMDB transaction that also records the last LSN; resolves once it is
   * committed (visible to reads; durable only after the next commit or `syncToDisk`, under noMetaSync).
   */
  applyLogged(records: readonly { lsn: number; ops: StoreOp[] }[]): Promise<void> {
    let dbs: LmdbDbs;
    try {
      dbs = this.requireOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    const last = records[records.length - 1];
    if (!last) return Promise.resolve();
    return this.transact(dbs, () => {
      // Read before any op of the batch is applied: whether LMDB holds the row, for compactBatch's rule on new rows.
      const exists = (qid: number, seq: number): boolean => dbs.rows.get(messageKey(qid, seq)) !== undefined;
      for (const ops of compactBatch(records, exists)) applyOps(dbs, ops);
      void dbs.meta.put(LOG_APPLIED_KEY, last.lsn);
    });
  }

  /** Makes every committed transaction durable, meta page included (mdb_env_sync with force, on a pool thread). */
  syncToDisk(): Promise<void> {
    let dbs: LmdbDbs;
    try {
      dbs = this.requireOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) =>
      // lmdb-js has `sync(callback)` (open.js: mdb_env_sync(env, 1) in a worker) but its typings omit it.
      (dbs.env as unknown as { sync(cb: (err?: unknown) => void): void }).sync((err?: unknown) => {
        if (!err) return resolve();
        this.checkAfterFailure(dbs);
        reject(this.fatal ?? (err instanceof Error ? err : new Error(String(err))));
      }),
    );
  }

  /**
   * Checks that the environment is not dead (MDB_PANIC): a commit whose meta-page write failed may never settle,
   * so a caller waiting too long on one asks here; a dead environment fails every transaction in flight.
   */
  checkHealth(): void {
    if (this.dbs) this.checkAfterFailure(this.dbs);
  }

  /** The fatal error this store has stopped on, if any. */
  get failed(): StoreFatalError | null {
    return this.fatal;
  }

  write(ops: StoreOp[]): Promise<void> {
    let dbs: LmdbDbs;
    let staged: StoreOp[];
    try {
      dbs = this.requireOpen();
      staged = stageOps(ops);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.transact(dbs, () => applyOps(dbs, staged)).then(() => undefined);
  }

  protected readTables(): StoreTables {
    return this.requireOpen();
  }

  private requireOpen(): LmdbDbs {
    if (this.fatal) throw this.fatal;
    if (!this.dbs) throw new Error(`the message store at ${this.path} is not open`);
    return this.dbs;
  }

  // Queues `apply` as a child transaction of the next batched commit and settles when that commit is synced.
  private transact<T>(dbs: LmdbDbs, apply: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const abandon = (err: Error): void => reject(err);
      this.inflight.add(abandon);
      dbs.env.childTransaction(apply).then(
        (value) => {
          this.inflight.delete(abandon);
          resolve(value);
        },
        (err: unknown) => {
          this.inflight.delete(abandon);
          // lmdb-js also rejects a side promise, `err.commitError`, with the cause (ENOSPC, EIO); unobserved it
          // would be an unhandled rejection, which ends a Node 20 process (docs/durability.md, "Disk full and disk errors"). The error
          // itself only says "Commit failed (see commitError for details)", so the cause is waited for (briefly:
          // lmdb-js has rejected it by now) and named in the message the broker logs. On a full disk LMDB
          // reports EIO, its code for a short write, so the free space decides whether to say "disk full".
          const side = (err as { commitError?: unknown } | null)?.commitError;
          const named = (cause: unknown): Error => {
            const free = diskFull(this.path, cause);
            if (free !== null) return new DiskFullError(this.path, free, cause ?? err);
            return cause instanceof Error ? new Error(`${(err as Error).message}: ${cause.message}`, { cause }) : (err as Error);
          };
          if (side instanceof Promise) {
            const timeout = new Promise<undefined>((r) => setTimeout(r, 100, undefined));
            void Promise.race([side.then(() => undefined, (cause: unknown) => cause), timeout]).then((cause) =>
              reject(named(cause)),
            );
          } else reject(named(undefined));
          this.checkAfterFailure(dbs);
        },
      );
    });
  }

  // A failed commit is usually transient (one ENOSPC: later commits succeed). But if the meta-page write failed,
  // LMDB marks the environment fatal and lmdb-js then neither commits nor settles any later write — their
  // promises hang (measured with strace fault injection). A fatal environment makes every new read transaction
  // fail with MDB_PANIC, so one read tells the two apart.
  private checkAfterFailure(dbs: LmdbDbs): void {
    if (this.fatal) return;
    try {
      dbs.meta.get(SCHEMA_KEY);
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(cause: unknown): void {
    this.fatal = new StoreFatalError(
      `the message store at ${this.path} hit a fatal LMDB error and accepts no more writes; restart the process`,
      { cause },
    );
    for (const abandon of this.inflight) abandon(this.fatal);
    this.inflight.clear();
  }
}
