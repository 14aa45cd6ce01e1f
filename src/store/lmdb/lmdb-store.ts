// The durable store: one LMDB environment (lmdb-js), one write transaction per event turn. Every write() of a turn
// is queued as a child transaction of lmdb-js' next batched write transaction, so the turn's writes share one
// commit and one fdatasync (group commit), while each write() still lands all-or-nothing: if applying one write
// throws, only its child transaction is aborted. (A plain transaction() callback that throws half-way leaves its
// earlier puts in the batch, and they commit.) With overlappingSync off the commit promise resolves after the
// sync, which is the durability barrier the Store contract asks for (docs/durability.md, "The durability barrier").

import type { DedupEntry, DeliveryHistory, EntityRecord, QueueFront, QueueSnapshot, SessionRecord, Store, StoreOp } from '../store.js';
import { applyOps, stageOps } from './apply-ops.js';
import { lockDataDir, type DirLock } from './dir-lock.js';
import { diskFull } from './disk-space.js';
import { openDbs, type LmdbDbs } from './env.js';
import { DiskFullError, StoreFatalError } from './errors.js';
import {
  countersKey,
  ENTITY_DEF_RANGE,
  entityMetaKey,
  NEXT_QID_KEY,
  SCHEMA_KEY,
  messageKey,
  nameKey,
  nextSeqKey,
  queueEnd,
  queueStart,
  sessionRowKey,
  sessionRowsEnd,
  type MessageRow,
} from './keys.js';

/** A `Store` on an LMDB environment in the directory `path`. */
export class LmdbStore implements Store {
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

  constructor(opts: { path: string }) {
    this.path = opts.path;
  }

  async open(): Promise<void> {
    if (this.dbs) return;
    this.fatal = null;
    // Before LMDB opens anything: a second broker on this directory must not even read it (dir-lock.ts).
    this.lock ??= lockDataDir(this.path);
    try {
      this.dbs = await openDbs(this.path);
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
        (qid) => {
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

  load(qid: number): QueueSnapshot {
    const dbs = this.requireOpen();
    const rows: MessageRow[] = [];
    for (const { value } of dbs.rows.getRange({ start: queueStart(qid), end: queueEnd(qid) })) rows.push(value);
    const last = rows.length > 0 ? rows[rows.length - 1]!.seq : 0;
    return { nextSeq: this.nextSeqAfter(dbs, qid, last), rows };
  }

  // Reads the kept counters, the held index and the last key; never the queue's other rows. All reads are made in
  // one synchronous pass, so they share lmdb-js' read snapshot and agree with one another.
  loadFront(qid: number): QueueFront {
    const dbs = this.requireOpen();
    const [count, bytes] = dbs.counters.get(countersKey(qid)) ?? [0, 0];
    const held: MessageRow[] = [];
    for (const key of dbs.held.getKeys({ start: queueStart(qid), end: queueEnd(qid) })) {
      const row = dbs.rows.get(key);
      if (row) held.push(row);
    }
    let last = 0;
    for (const key of dbs.rows.getKeys({ start: queueEnd(qid), end: queueStart(qid), reverse: true, limit: 1 })) last = key[1];
    return { nextSeq: this.nextSeqAfter(dbs, qid, last), count, bytes, held };
  }

  // The mark alone would do if every put came with its nextSeq op; max() keeps seqs unique even if one did not.
  private nextSeqAfter(dbs: LmdbDbs, qid: number, lastSeq: number): number {
    const mark = dbs.meta.get(nextSeqKey(qid));
    return Math.max(typeof mark === 'number' ? mark : 1, lastSeq + 1, 1);
  }

  rowsFrom(qid: number, from: number, limit: number, to = Number.MAX_SAFE_INTEGER): MessageRow[] {
    const out: MessageRow[] = [];
    const range = { start: messageKey(qid, Math.max(0, from)), end: messageKey(qid, to + 1), limit };
    for (const { value } of this.requireOpen().rows.getRange(range)) out.push(value);
    return out;
  }

  readRow(qid: number, seq: number): MessageRow | undefined {
    return this.requireOpen().rows.get(messageKey(qid, seq));
  }

  readHistory(qid: number, seq: number): DeliveryHistory | undefined {
    return this.requireOpen().history.get(messageKey(qid, seq));
  }

  loadMeta(qid: number, key: string): unknown {
    return this.requireOpen().meta.get(entityMetaKey(qid, key));
  }

  loadEntities(): EntityRecord[] {
    const out: EntityRecord[] = [];
    for (const { value } of this.requireOpen().meta.getRange(ENTITY_DEF_RANGE)) out.push(value as EntityRecord);
    return out;
  }

  loadSessions(qid: number): Map<string, SessionRecord> {
    const out = new Map<string, SessionRecord>();
    for (const { key, value } of this.requireOpen().sessions.getRange({ start: [qid], end: [qid + 1] })) {
      out.set(key[1], { ...value, state: value.state ? new Uint8Array(value.state) : null });
    }
    return out;
  }

  loadDedup(qid: number): DedupEntry[] {
    const out: DedupEntry[] = [];
    for (const { key, value } of this.requireOpen().dedup.getRange({ start: [qid], end: [qid + 1] })) {
      out.push({ key: key[1], until: value });
    }
    return out;
  }

  *sessionIds(qid: number): Iterable<string> {
    // One seek per session: after a session's first key, jump past all of its keys to the next session's first.
    const index = this.requireOpen().sessionRows;
    let start: [number, string, number] | [number] = queueStart(qid);
    for (;;) {
      let id: string | undefined;
      for (const key of index.getKeys({ start, end: queueEnd(qid), limit: 1 })) id = key[1];
      if (id === undefined) return;
      yield id;
      start = sessionRowsEnd(qid, id);
    }
  }

  sessionRowsFrom(qid: number, sessionId: string, from: number, limit: number): MessageRow[] {
    const dbs = this.requireOpen();
    const out: MessageRow[] = [];
    const range = { start: sessionRowKey(qid, sessionId, Math.max(0, from)), end: sessionRowsEnd(qid, sessionId), limit };
    for (const key of dbs.sessionRows.getKeys(range)) {
      const row = dbs.rows.get(messageKey(qid, key[2]));
      if (row) out.push(row);
    }
    return out;
  }

  sessionSeqsFrom(qid: number, sessionId: string, from: number): Iterable<number> {
    const range = { start: sessionRowKey(qid, sessionId, Math.max(0, from)), end: sessionRowsEnd(qid, sessionId) };
    return this.requireOpen()
      .sessionRows.getKeys(range)
      .map((key) => key[2]);
  }

  seqsFrom(qid: number, from: number): Iterable<number> {
    // Keys only, in key order: a peek of the first few messages of a deep queue reads a few keys, not every row.
    return this.requireOpen()
      .rows.getKeys({ start: messageKey(qid, Math.max(0, from)), end: queueEnd(qid) })
      .map((key) => key[1]);
  }

  readBody(qid: number, seq: number): Uint8Array | undefined {
    // With encoding 'binary' lmdb-js returns a copy (or a dedicated buffer), never its reused read buffer.
    const dbs = this.requireOpen();
    const own = dbs.bodies.get(messageKey(qid, seq));
    if (own) return own;
    const ref = dbs.rows.get(messageKey(qid, seq))?.bodyRef;
    return ref && dbs.bodies.get(messageKey(ref[0], ref[1]));
  }

  /** Shared bodies stored and not yet freed (as MemoryStore's; for tests and diagnostics). */
  sharedBodies(): number {
    return this.requireOpen().refs.getCount();
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
