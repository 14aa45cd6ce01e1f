// Start-up: the store is the truth and memory is rebuilt from it (docs/durability.md, "Restarts: locks and
// delivery counts"). Every entity's rows come back into its index in their stored state; locks, scheduled
// enqueues, TTLs and session locks get their deadlines again; duplicate-detection history and subscription rules
// are reloaded. Nothing is written except forgetting dedup windows that passed while the broker was down.

import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from './context.js';
import type { LockManager } from '../messaging/locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { restoreRules } from '../catalog/rule-store.js';
import type { Sessions } from '../messaging/sessions.js';
import type { TopicState } from '../indexes/topic-state.js';
import type { MessageRow } from '../types.js';
import { inBackground } from './journal.js';

/** Rebuilds the in-memory broker from the store. */
export class Recovery {
  /** History ops closing the attempts found open while recovering. */
  private readonly closed: StoreOp[] = [];

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    private readonly sessions: Sessions,
  ) {}

  /** Creates the configured entities and rebuilds every queue's index, locks, deadlines and rules from the store. */
  async run(): Promise<void> {
    const { entities, clock, store } = this.ctx;
    await entities.create(clock.now());
    const now = clock.now();
    for (const q of entities.all()) this.recover(q, now);
    // Every attempt the store holds open ended with the process: closed in one write (its own plan, in the background).
    const closed = this.closed.splice(0);
    if (closed.length) inBackground(this.ctx.journal.run({ ops: closed }));
    for (const t of entities.allTopics()) {
      t.nextSeq = store.loadFront(t.id).nextSeq;
      this.recoverDedup(t, now);
    }
    for (const q of entities.all()) if (q.kind === 'subscription') restoreRules(store, q);
  }

  // A locked message stays locked until its locked-until (see LockManager.recover); an active one is ready at
  // once; a scheduled one waits for its time (at once if the stored row has lost it). A queue that can keep only
  // its front in memory reads its held rows (locked, deferred, scheduled) and counters, then one window of
  // available rows; the rest stays in the store (cold-tail.ts), so a restart costs the same for a deep backlog.
  // A session-enabled entity reads its held rows and the first available message of each session.
  private recover(q: QueueState, now: number): void {
    const { store, log } = this.ctx;
    this.recoverDedup(q, now);
    if (q.sessionful) this.sessions.recover(q, now);
    const front = store.loadFront(q.id);
    q.nextSeq = front.nextSeq;
    if (q.cold) {
      let heldBytes = 0;
      for (const row of front.held) {
        heldBytes += row.size;
        this.restore(q, row, now);
      }
      q.cold.init(front.count - front.held.length, front.bytes - heldBytes, front.nextSeq - 1);
      q.fillWindow(true);
    } else if (q.sessionTails) {
      // Each session likewise: its held rows, then its first available message, found through the store's
      // session index; the rest of every session stays in the store (session-tail.ts).
      for (const row of front.held) this.restore(q, row, now);
      q.recoverSessions(store.sessionIds(q.id), front.count, front.bytes);
    } else {
      for (const row of store.rowsFrom(q.id, 0, Number.MAX_SAFE_INTEGER)) this.restore(q, row, now);
    }
    if (front.count) log.info({ entity: q.path, ...q.counts() }, 'recovered');
  }

  // One stored row back into memory in its stored state, with its deadlines.
  private restore(q: QueueState, row: MessageRow, now: number): void {
    const { scheduler } = this.ctx;
    q.addRow(row);
    if (row.state === 'locked' && row.lock) {
      this.locks.recover(q, row, now);
      this.ctx.history.recovered(q, row, this.closed);
    } else if (row.state === 'scheduled') {
      scheduler.add({ at: row.scheduledAt ?? now, kind: 'scheduled', qid: q.id, seq: row.seq });
    } else if (row.state === 'active') {
      q.makeReady(row);
    }
    if (row.expiresAt !== null) scheduler.add({ at: row.expiresAt, kind: 'ttl', qid: q.id, seq: row.seq });
  }

  // Reloads a queue's or topic's duplicate-detection history, forgetting windows that have passed.
  private recoverDedup(q: QueueState | TopicState, now: number): void {
    const stale: StoreOp[] = [];
    for (const { key, until } of this.ctx.store.loadDedup(q.id)) {
      if (until > now) q.dedup.remember(key, until);
      else stale.push({ op: 'undedup', qid: q.id, key });
    }
    if (stale.length) inBackground(this.ctx.journal.run({ ops: stale })); // memory holds none of them: nothing to undo
  }
}
