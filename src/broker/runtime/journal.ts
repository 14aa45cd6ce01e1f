// The broker's one write path to the store. Every change the broker makes is a plan run by `Journal.run`, and a
// client is answered only when that promise resolves, i.e. once the change is committed and synced
// (docs/durability.md, "The durability barrier"). Nothing else in the broker writes to the store: `commit` is
// private, and the lint rules refuse `.persist(` and `store.write(` elsewhere in src/broker (test/eslint.config.js).
// The journal also owns the broker's running flag, because the one thing that can stop a broker on its own is a
// store that can never commit again.

import type { Logger } from '../../log/logger.js';
import type { Store, StoreOp, WriteStamp } from '../../store/store.js';
import { BrokerError } from '../errors.js';

/**
 * One state change, as `Journal.run` executes it. The caller has already made the in-memory claim that stops a
 * second taker (a row removed from its queue, a lock token withdrawn); the plan says what the store must hold,
 * what memory becomes once that is durable, and how memory returns to what the store still holds if it is not.
 */
export interface Plan<T = void> {
  /** The store operations, committed in one write. */
  ops: StoreOp[];
  /** Runs once the operations are committed and synced: the change becomes visible. */
  applied?: () => T;
  /**
   * Runs if the store refused the write (nothing of it was stored): memory is put back to what the store holds; the
   * error then reaches the caller. A write the store has acknowledged is never undone; one that failed for good
   * (StoreFatalError: its outcome unknown) is undone too, but the broker then stops and a restart reloads the store.
   */
  undo?: () => void;
}

/**
 * Adds store operations a plan implies beyond its own (the delivery history, messaging/history.ts) to the plan's
 * write, and hears when that write settled. `derive` runs when the plan is run, before its write is queued.
 */
export interface PlanObserver {
  derive(ops: StoreOp[]): { ops: StoreOp[]; undo: () => void } | undefined;
  /** The write of a plan `derive` answered for settled (all its ops, the plan's own included). */
  settled(ops: StoreOp[]): void;
}

/**
 * One group commit that succeeded, for metrics: its operations; ms from its first plan to its resolution; and, from
 * a store with a log (NaN otherwise), ms from that first plan to the start of the log write carrying it (queueing)
 * and the write + fdatasync itself (flush).
 */
export interface CommitTimes {
  ops: number;
  ms: number;
  queuedMs: number;
  flushMs: number;
}

/** A group commit being gathered: it is its own WriteStamp, so timing it allocates nothing more. */
interface Batch extends WriteStamp {
  ops: StoreOp[];
  promise: Promise<void>;
}

/** Group-commits store operations and tracks the writes still in flight. */
export class Journal {
  /** Writes issued and not yet settled; `drain` waits for them. */
  private readonly inflight = new Set<Promise<unknown>>();
  /** The store write being gathered in the current task (see commit). */
  private batch: Batch | null = null;
  private stopped = false;
  private observer: PlanObserver | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    /** Called once when the store reports it can never commit again. */
    private readonly onFatal?: (err: Error) => void,
    /** Told of each group commit that succeeded, with its waits. */
    private readonly onCommit?: (c: CommitTimes) => void,
  ) {}

  /** True once the broker is stopping (asked to, or because the store failed for good): new work is refused. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** Refuses new work once stopping, with ShuttingDown. */
  assertRunning(): void {
    if (this.stopped) throw new BrokerError('ShuttingDown', 'The broker is shutting down.');
  }

  /** Marks the broker as stopping; writes already issued still complete. */
  stop(): void {
    this.stopped = true;
  }

  /** Writes issued and not yet settled (the manual clock waits for none before its next deadline). */
  get pending(): number {
    return this.inflight.size + (this.batch ? 1 : 0);
  }

  /** Waits until every write issued so far (and any issued while waiting) has settled. */
  async drain(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  // Every state change the broker makes goes through here, in one order: claim (done by the caller), write, then
  // apply or undo. A transition that applied its change before the write, and forgot to take it back when the
  // write failed, left memory and store disagreeing until a restart (issue 27: a dead-letter, a cancel-scheduled,
  // a purge, a receive of deferred messages and a rule change did).
  /** Executes a plan: commits its ops, then applies it (resolving with its result) or undoes it and rejects. */
  run<T = void>(plan: Plan<T>): Promise<T> {
    const o = this.observer;
    const extra = o?.derive(plan.ops);
    if (!extra) {
      return this.commit(plan.ops).then(
        () => plan.applied?.() as T,
        (err: unknown) => {
          plan.undo?.();
          throw err;
        },
      );
    }
    const ops = plan.ops.concat(extra.ops);
    return this.commit(ops).then(
      () => {
        o!.settled(ops);
        return plan.applied?.() as T;
      },
      (err: unknown) => {
        o!.settled(ops);
        extra.undo();
        plan.undo?.();
        throw err;
      },
    );
  }

  /** Sets the one plan observer (the delivery history); every plan run from now on passes through it. */
  observe(o: PlanObserver): void {
    this.observer = o;
  }

  // Group commit at the broker: every plan run in one task (a socket read, a timer firing, a pump) joins one
  // store write, flushed at the end of the task. The store turns it into one atomic transaction and one sync,
  // instead of a transaction per operation (1,000 separate writes cost ~50 ms of CPU; one costs a few); see
  // docs/durability.md, "Group commit". Operations that share a write share its fate: a commit failure rejects
  // them all, as it would anyway.
  // Queues `ops` into this task's store write; resolves once it is committed, rejects with StoreUnavailable.
  private commit(ops: StoreOp[]): Promise<void> {
    let batch = this.batch;
    if (!batch) {
      batch = this.batch = { ops: [], promise: null as unknown as Promise<void>, flushAt: NaN, flushMs: NaN };
      const b = batch;
      const t0 = performance.now();
      b.promise = new Promise<void>((resolve, reject) => {
        queueMicrotask(() => {
          this.batch = null;
          this.store.write(b.ops, b).then(resolve, reject);
        });
      }).then(() => this.onCommit?.({ ops: b.ops.length, ms: performance.now() - t0, queuedMs: b.flushAt - t0, flushMs: b.flushMs }), (err: unknown) => {
        this.log.error({ err }, 'store write failed');
        // A store that can never commit again must not keep taking work it cannot acknowledge.
        if (err instanceof Error && err.name === 'StoreFatalError' && !this.stopped) {
          this.stopped = true;
          this.onFatal?.(err);
        }
        throw new BrokerError('StoreUnavailable', 'The message store could not complete the operation.');
      });
      this.inflight.add(b.promise);
      const done = (): void => void this.inflight.delete(b.promise);
      b.promise.then(done, done);
    }
    for (const op of ops) batch.ops.push(op);
    return batch.promise;
  }
}

/**
 * Runs work nobody waits for: a timer's expiry, a lock released when its consumer went away, a recovery clean-up.
 * Its store failure needs no handler here: `Journal.run` has logged it (and undone the plan), and a store that fails for good has
 * already stopped the broker. The in-memory change stands; a restart reloads what was committed.
 */
export function inBackground(work: Promise<unknown>): void {
  work.catch(() => undefined);
}
