// The store on disk: a write-ahead log as the durability point, LMDB applied behind it as the index and the lock
// table (docs/durability.md, "The write-ahead log"). A write is one log record; every write of one event-loop turn
// goes down in one write and one fdatasync, on the main thread, and only then do the writes resolve ("accepted means
// on disk"). LMDB gets the records every APPLY_MS (or APPLY_RECORDS) in one transaction that also stores the last
// LSN applied; until it has, reads see them through the overlay. A checkpoint syncs LMDB and deletes the segments
// it now holds durably. Recovery (in `open`) replays every complete record after LMDB's LSN.

import path from 'node:path';
import { applyOps, stageOps } from '../lmdb/apply-ops.js';
import { DISK_FULL_BELOW, freeBytes } from '../lmdb/disk-space.js';
import { DiskFullError, formatBytes, StoreFatalError } from '../lmdb/errors.js';
import { LmdbStore } from '../lmdb/lmdb-store.js';
import { TableReads } from '../lmdb/reads.js';
import type { Store, StoreOp, StoreWaitObserver, WriteStamp } from '../store.js';
import { Overlay } from './overlay.js';
import { WriteAheadLog, type WalOptions } from './wal.js';

/** LMDB applies the log at least this often (ms) while records wait. */
export const APPLY_MS = 10;
/** ... or at once when this many records wait. */
export const APPLY_RECORDS = 2000;
/** A checkpoint runs this often (ms) when LMDB has applied records since the last one. */
export const CHECKPOINT_MS = 10_000;
/** Records replayed per LMDB transaction at start-up. */
const REPLAY_BATCH = 5000;
/** How often an LMDB apply that has not settled asks whether the environment is dead. */
const APPLY_WATCHDOG_MS = 2000;
/** How long close waits for LMDB to apply the log; past it, the next open replays what is left. */
const CLOSE_WAIT_MS = 10_000;
/** Failed LMDB applies in a row after which the store stops (about half a minute of retries). */
const APPLY_ATTEMPTS = 30;

/**
 * Free bytes a write that stores a new body must leave: what LMDB needs to apply what the log has taken (its
 * copy-on-write pages, its growth) and to settle messages. lmdb-js can abort the process when a page write fails
 * (ENOSPC inside mdb_page_flush), so LMDB must never be the one to find the disk full; the log refuses first.
 */
export const WRITE_RESERVE = DISK_FULL_BELOW / 2;

interface Waiting {
  lsn: number;
  ops: StoreOp[];
  bytes: number;
  stamp: WriteStamp | undefined;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** Options of a logged store; the defaults are the documented ones. */
export interface LoggedStoreOptions {
  path: string;
  log?: Omit<WalOptions, 'onFull'>;
  /** LMDB apply interval (ms); tests set a long one to read through the overlay. */
  applyMs?: number;
  /** The clock the waits are measured on (ms; performance.now by default; a test's fake one). */
  now?: () => number;
}

/** A `Store` whose writes are durable in a write-ahead log and applied to LMDB behind it. */
export class LoggedStore extends TableReads implements Store {
  private readonly path: string;
  private readonly index: LmdbStore;
  private wal: WriteAheadLog | null = null;
  private overlay: Overlay | null = null;
  private waiting: Waiting[] = [];
  private flushScheduled = false;
  /** Records on disk, not yet given to LMDB, with when their flush returned (for the apply lag). */
  private toApply: { lsn: number; ops: StoreOp[]; bytes: number; flushedAt: number }[] = [];
  private toApplyBytes = 0;
  private applying: Promise<void> | null = null;
  private applyTimer: NodeJS.Timeout | null = null;
  private applyFailures = 0;
  /** The last LSN whose LMDB transaction has committed. */
  private appliedLsn = 0;
  private checkpointed = 0;
  private checkpointing: Promise<void> | null = null;
  private checkpointTimer: NodeJS.Timeout | null = null;
  private fatal: StoreFatalError | null = null;
  private free = { bytes: Infinity, at: 0 };
  private readonly applyMs: number;
  private readonly now: () => number;
  private waits: StoreWaitObserver | undefined;

  constructor(private readonly opts: LoggedStoreOptions) {
    super();
    this.path = opts.path;
    this.index = new LmdbStore({ path: opts.path, behindLog: true });
    this.applyMs = opts.applyMs ?? APPLY_MS;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Tells `o` how long each flushed group of records waited for LMDB (the apply lag). */
  observeWaits(o: StoreWaitObserver): void {
    this.waits = o;
  }

  // Recovery: LMDB's applied LSN, then every complete record after it, applied in large transactions; then LMDB is
  // synced (a checkpoint) and the old segments go. Start-up reads (load, loadFront, ...) run after this.
  async open(): Promise<void> {
    if (this.wal) return;
    await this.index.open();
    try {
      const wal = new WriteAheadLog(path.join(this.path, 'log'), { ...this.opts.log, onFull: () => void this.checkpoint() });
      let batch: { lsn: number; ops: StoreOp[] }[] = [];
      for (const rec of wal.recover(this.index.appliedLsn())) {
        batch.push(rec);
        if (batch.length >= REPLAY_BATCH) {
          await this.index.applyLogged(batch);
          batch = [];
        }
      }
      await this.index.applyLogged(batch);
      await this.index.syncToDisk();
      wal.start();
      this.wal = wal;
      this.appliedLsn = this.checkpointed = wal.next - 1;
      this.overlay = new Overlay(this.index.tables());
      this.fatal = null;
      this.checkpointTimer = setInterval(() => void this.checkpoint(), CHECKPOINT_MS).unref();
    } catch (err) {
      await this.index.close();
      throw err;
    }
  }

  /** What recovery found at the end of the log (for the start-up log line and the tests). */
  get recovered(): WriteAheadLog['ended'] {
    return this.wal?.ended ?? null;
  }

  // Every acknowledged write reaches LMDB and a checkpoint before the log closes, so a clean stop replays nothing.
  async close(): Promise<void> {
    const wal = this.wal;
    if (!wal) return;
    if (this.flushScheduled) this.flush();
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    if (this.applyTimer) clearTimeout(this.applyTimer);
    this.applyTimer = this.checkpointTimer = null;
    if (!this.fatal) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)));
      const drain = (async (): Promise<void> => {
        while ((this.toApply.length > 0 || this.applying) && !this.fatal) await (this.applying ?? this.apply());
        await this.checkpoint();
      })();
      // Left to recovery if it fails or takes too long: the log still holds every record.
      await Promise.race([drain.catch(() => undefined), late]);
      clearTimeout(timer);
    }
    this.wal = null;
    this.overlay = null;
    await wal.close();
    await this.index.close();
  }

  queueId(p: string): Promise<number> {
    return this.index.queueId(p);
  }

  write(ops: StoreOp[], stamp?: WriteStamp): Promise<void> {
    let lsn: number;
    let staged: StoreOp[];
    let bytes = 0;
    try {
      const wal = this.requireOpen();
      staged = stageOps(ops);
      for (const op of staged) bytes += op.op === 'put' ? (op.body?.length ?? 0) : op.op === 'sharedBody' ? op.body.length : 0;
      if (bytes > 0) this.checkReserve(bytes);
      lsn = wal.append(staged);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ lsn, ops: staged, bytes, stamp, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // After this turn's I/O callbacks: every write they issue shares the one flush (group commit).
        setImmediate(() => this.flush());
      }
    });
  }

  // A write that stores new bytes is refused (DiskFullError: the broker answers server-busy) while the disk's free
  // space, less what LMDB has yet to apply, is below the reserve. Settlements still go through: they free space.
  private checkReserve(bytes: number): void {
    // The free space is asked at most every 50 ms while there is room, and again before every refusal (space that
    // came back is seen at once).
    const now = Date.now();
    const left = (): number => this.free.bytes - this.toApplyBytes - bytes;
    if (now - this.free.at > 50 || left() < WRITE_RESERVE) this.free = { bytes: freeBytes(this.path) ?? Infinity, at: now };
    if (left() < WRITE_RESERVE) {
      // Deleting the segments LMDB holds durably is the one thing the store itself can free.
      void this.checkpoint();
      const why = `Write refused (the last ${formatBytes(WRITE_RESERVE)} are kept for the index)`;
      throw new DiskFullError(this.path, Math.max(0, this.free.bytes), undefined, why);
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.waiting;
    this.waiting = [];
    if (batch.length === 0) return;
    const wal = this.wal;
    if (!wal) {
      for (const w of batch) w.reject(new Error(`the message store at ${this.path} is closed`));
      return;
    }
    const flushAt = this.now();
    try {
      wal.flush();
    } catch (err) {
      if (err instanceof StoreFatalError) this.stop(err);
      for (const w of batch) w.reject(err as Error);
      return;
    }
    // On disk: now readable (through the overlay), then answered, then queued for LMDB.
    try {
      for (const w of batch) this.overlay!.record(w.lsn, (tables) => applyOps(tables, w.ops));
    } catch (err) {
      this.stop(new StoreFatalError(`the message store at ${this.path} could not index a logged write; restart the process`, { cause: err }));
    }
    const flushedAt = this.now();
    for (const w of batch) {
      this.toApply.push({ lsn: w.lsn, ops: w.ops, bytes: w.bytes, flushedAt });
      this.toApplyBytes += w.bytes;
      if (w.stamp) {
        w.stamp.flushAt = flushAt;
        w.stamp.flushMs = flushedAt - flushAt;
      }
      w.resolve();
    }
    this.scheduleApply();
  }

  private scheduleApply(): void {
    if (this.applying || this.applyTimer || this.toApply.length === 0 || this.fatal) return;
    const delay = this.toApply.length >= APPLY_RECORDS ? 0 : this.applyFailures > 0 ? Math.min(1000, 50 * this.applyFailures) : this.applyMs;
    this.applyTimer = setTimeout(() => {
      this.applyTimer = null;
      void this.apply();
    }, delay);
  }

  // One LMDB transaction for every record waiting. Once it has committed, reads find them in LMDB and the overlay
  // lets them go. A failed apply is retried (the records stay queued, in order); it is never undone, since the log
  // has acknowledged them. An MDB_PANIC, or failures that do not clear, stop the store.
  private apply(): Promise<void> {
    if (this.applying) return this.applying;
    const batch = this.toApply.slice(0, 50_000);
    if (batch.length === 0) return Promise.resolve();
    const last = batch[batch.length - 1]!.lsn;
    // An LMDB whose meta-page write failed (MDB_PANIC) may never settle this commit: asked after a while, it then
    // fails every transaction in flight, this one included.
    const watchdog = setInterval(() => this.index.checkHealth(), APPLY_WATCHDOG_MS).unref();
    this.applying = this.index.applyLogged(batch).finally(() => clearInterval(watchdog)).then(
      () => {
        this.toApply.splice(0, batch.length);
        for (const r of batch) this.toApplyBytes -= r.bytes;
        this.appliedLsn = last;
        this.applyFailures = 0;
        this.overlay?.prune(last);
        if (this.waits) reportLag(this.waits, batch, this.now());
      },
      (err: unknown) => {
        this.applyFailures++;
        const fatal = this.index.failed;
        if (fatal || this.applyFailures >= APPLY_ATTEMPTS) {
          this.stop(fatal ?? new StoreFatalError(`the message store at ${this.path} cannot apply its log to LMDB; restart the process`, { cause: err }));
        }
      },
    );
    const done = this.applying.finally(() => {
      this.applying = null;
      this.scheduleApply();
    });
    return done;
  }

  /**
   * Makes LMDB durable through the last LSN it has committed (an env sync flushes its meta page), then deletes the
   * log segments whose records are all at or below it. Runs every CHECKPOINT_MS and when the log passes its bound.
   */
  checkpoint(): Promise<void> {
    if (this.checkpointing) return this.checkpointing;
    const wal = this.wal;
    if (!wal || this.fatal) return Promise.resolve();
    const through = this.appliedLsn;
    if (through === this.checkpointed && wal.segmentStarts.length <= 1) return Promise.resolve();
    this.checkpointing = this.index
      .syncToDisk()
      .then(() => {
        this.checkpointed = through;
        if (this.wal === wal) wal.deleteThrough(through);
      })
      .catch(() => {
        // The segments stay (the next checkpoint tries again); an LMDB that can no longer sync stops the store.
        if (this.index.failed) this.stop(this.index.failed);
      })
      .finally(() => {
        this.checkpointing = null;
      });
    return this.checkpointing;
  }

  // Refuses every later write and fails those waiting; the broker's Journal stops on the StoreFatalError.
  private stop(err: StoreFatalError): void {
    if (this.fatal) return;
    this.fatal = err;
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w.reject(err);
    if (this.applyTimer) clearTimeout(this.applyTimer);
    this.applyTimer = null;
  }

  private requireOpen(): WriteAheadLog {
    if (this.fatal) throw this.fatal;
    if (!this.wal) throw new Error(`the message store at ${this.path} is not open`);
    return this.wal;
  }

  protected readTables(): Overlay['tables'] {
    if (this.fatal) throw this.fatal;
    if (!this.overlay) throw new Error(`the message store at ${this.path} is not open`);
    return this.overlay.tables;
  }

  /** Keys the overlay holds (0 once LMDB has applied everything; for tests). */
  get overlaySize(): number {
    return this.overlay?.size ?? 0;
  }

  /** Settles once LMDB has applied every record acknowledged so far (for tests). */
  async applied(): Promise<void> {
    if (this.flushScheduled) this.flush();
    while ((this.toApply.length > 0 || this.applying) && !this.fatal) await (this.applying ?? this.apply());
  }

}

// One report per flush in the batch: the records of one flush share their flush time, so a run of them is one lag.
function reportLag(o: StoreWaitObserver, batch: readonly { flushedAt: number }[], now: number): void {
  for (let i = 0; i < batch.length; ) {
    const at = batch[i]!.flushedAt;
    let j = i + 1;
    while (j < batch.length && batch[j]!.flushedAt === at) j++;
    o.applied(now - at, j - i);
    i = j;
  }
}
