// What operators need beyond the messaging operations: entity counts, browsing every message state with its
// lock holder, purge, batch delete, redrive, and a subscription's rules. Azure has no real redrive (its portal
// copies a dead-lettered message and leaves the original); here each move is one atomic store write, so a
// crash mid-redrive neither loses nor doubles a message.

import { setImmediate } from 'node:timers/promises';
import type { RuleDescription } from '../../filters/index.js';
import { selectForDelete, type DeleteMessagesRequest } from '../messaging/batch-delete.js';
import type { BrokerContext } from '../runtime/context.js';
import { waitTimer } from '../runtime/clock.js';
import { BrokerError } from '../errors.js';
import type { LockManager } from '../messaging/locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { cloneRow } from '../indexes/rows.js';
import { rulesPlan, ruleSetOf } from '../catalog/rule-store.js';
import { checkFilterQuota, topicOf } from '../catalog/quotas.js';
import { putBack, type Transitions } from '../messaging/transitions.js';
import type { Plan } from '../runtime/journal.js';
import type { MessageRow, MessageState } from '../types.js';
import { MAX_VIEW_COUNT } from '../runtime/limits.js';
import { heldOnly, walkHeld, walkStored } from '../indexes/walk.js';

/** Counts of one entity for the admin API and metrics. */
export interface EntityInfo {
  path: string;
  kind: QueueState['kind'];
  active: number;
  locked: number;
  deferred: number;
  scheduled: number;
  deadLettered: number;
  /** Messages in the transfer dead-letter queue (send-via messages their destination refused). */
  transferDeadLettered: number;
  bytes: number;
  deadLetterBytes: number;
  consumers: number;
}

/** A stored message as the admin API shows it (row plus who holds its lock). */
export interface BrowsedMessage {
  row: MessageRow;
  body: Uint8Array;
  lockHolder?: string;
}

/** Which messages a browse returns. */
export interface BrowseOptions {
  /** Only messages in this state (or one of these); default every state. */
  state?: MessageState | readonly MessageState[];
  /** First sequence number; default 1. */
  from?: number;
  /** Most messages; default 50, at most MAX_VIEW_COUNT. */
  count?: number;
}

/** One bounded page of a browse. */
export interface BrowsePage {
  messages: BrowsedMessage[];
  /** Where to go on from, when the page stopped at MAX_BROWSE_SCAN rows looked at before the entity's end. */
  next?: number;
}

/** What to redrive and how. */
export interface RedriveOptions {
  /** Target entity; default the dead-letter queue's own queue. */
  to?: string;
  /** Only messages whose DeadLetterReason equals this. */
  reason?: string;
  /** Only messages whose application property `key` (after settlement changes) equals `value` as text. */
  where?: { key: string; value: string };
  /** Stop after this many moves. */
  max?: number;
  /** Moves per second at most. */
  ratePerSec?: number;
  /** Report what would move without moving anything. */
  dryRun?: boolean;
  /** Called after each message with the running totals. */
  onProgress?: (r: RedriveResult) => void;
  /** Reads application properties of a stored message (the broker does not decode bodies itself). */
  appProperties?: (body: Uint8Array) => Record<string, unknown>;
}

/** What a redrive did. */
export interface RedriveResult {
  moved: number;
  skipped: number;
  failed: number;
  dryRun: boolean;
}

const PURGE_BATCH = 500;
/** Dead-lettered messages a redrive looks at between two yields to the event loop. */
const REDRIVE_PAGE = 500;
/** Most rows one entity's oldest-message scan looks at. */
const OLDEST_SCAN = 1000;
/** Rows looked at past the first waiting one. */
const OLDEST_LOOKAHEAD = 64;

/** The operator's operations on entities and their messages. */
export class Admin {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    private readonly transitions: Transitions,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** A subscription's rules, sorted by name (enumerate-rules). */
  listRules(subscriptionPath: string): RuleDescription[] {
    return ruleSetOf(this.subscription(subscriptionPath)).list().map((r) => r.description);
  }

  /**
   * Adds a rule durably; invalid rules and duplicate names throw RuleDefinitionError, a rule past the topic's filter
   * quota QuotaExceeded (checked and added in one turn, so concurrent adds cannot pass it together).
   */
  async addRule(subscriptionPath: string, rule: RuleDescription): Promise<void> {
    const sub = this.subscription(subscriptionPath);
    const set = ruleSetOf(sub);
    const topic = topicOf(this.ctx.entities, sub);
    if (topic) checkFilterQuota(topic, [rule.filter]);
    const added = set.add(rule);
    await this.ctx.journal.run(rulesPlan(sub, () => set.get(added.name) === added && set.remove(added.name)));
  }

  /** Removes a rule durably; an unknown name throws RuleDefinitionError (amqp:not-found). */
  async removeRule(subscriptionPath: string, name: string): Promise<void> {
    const sub = this.subscription(subscriptionPath);
    const set = ruleSetOf(sub);
    const removed = set.remove(name);
    await this.ctx.journal.run(rulesPlan(sub, () => !set.get(removed.name) && set.add(removed)));
  }

  private subscription(path: string): QueueState {
    this.ctx.journal.assertRunning();
    const q = this.ctx.entities.resolve(path);
    if (q.kind !== 'subscription') throw new BrokerError('InvalidOperation', `'${q.path}' is not a subscription.`);
    return q;
  }

  /** Every queue with its counts (dead-letter queues are reported with their queue). */
  listEntities(): EntityInfo[] {
    return this.ctx.entities
      .all()
      .filter((q) => q.kind !== 'deadletter')
      .map((q) => {
        const c = q.counts();
        return {
          path: q.path,
          kind: q.kind,
          ...c,
          deadLettered: q.dlq?.size ?? 0,
          transferDeadLettered: q.tdlq?.size ?? 0,
          bytes: q.bytes,
          deadLetterBytes: q.dlq?.bytes ?? 0,
          consumers: q.consumers.length,
        };
      });
  }

  /**
   * For each queue and subscription, when its oldest message waiting for a consumer (available or locked) was
   * enqueued, or null when none waits. Rows sit in the index in arrival order, so the scan stops at the first
   * waiting one (and OLDEST_LOOKAHEAD rows after it), after at most OLDEST_SCAN rows (deferred and scheduled
   * ones, which wait on purpose, are passed over), which keeps a scrape cheap on a deep backlog.
   */
  oldestWaiting(): { path: string; enqueuedAt: number | null }[] {
    return this.ctx.entities
      .all()
      .filter((q) => q.kind !== 'deadletter')
      .map((q) => {
        let budget = OLDEST_SCAN;
        let more = -1; // rows still looked at after the first waiting one (re-inserted rows may be older)
        let oldest: number | null = null;
        for (const row of q.rows.values()) {
          if (budget-- === 0 || more === 0) break;
          if (more > 0) more--;
          if (row.state !== 'active' && row.state !== 'locked') continue;
          if (oldest === null || row.enqueuedAt < oldest) oldest = row.enqueuedAt;
          if (more < 0) more = OLDEST_LOOKAHEAD;
        }
        return { path: q.path, enqueuedAt: oldest };
      });
  }

  /** Messages of an entity (queue or `…/$DeadLetterQueue`) in sequence order, optionally of some states. */
  browse(path: string, opts: BrowseOptions = {}): BrowsedMessage[] {
    return this.browsePage(path, opts).messages;
  }

  /**
   * One bounded page of {@link browse}: at most `count` (≤ MAX_VIEW_COUNT) messages, found by looking at no more
   * than MAX_BROWSE_SCAN stored rows; when the look stopped before the entity's end, `next` is the sequence
   * number to go on from. Views of locked, deferred or scheduled messages read each row from memory (every such
   * row is held there), within the same MAX_BROWSE_SCAN bound (walkHeld).
   */
  browsePage(path: string, opts: BrowseOptions = {}): BrowsePage {
    const { journal, entities, store } = this.ctx;
    journal.assertRunning();
    const q = entities.resolve(path);
    const from = opts.from ?? 1;
    const count = Math.min(MAX_VIEW_COUNT, Math.max(0, opts.count ?? 50));
    const states = opts.state === undefined ? [] : Array.isArray(opts.state) ? opts.state : [opts.state];
    const out: BrowsedMessage[] = [];
    if (count === 0) return { messages: out };
    const take = (row: MessageRow): boolean => {
      const body = store.readBody(q.id, row.seq);
      if (!body) return true;
      const m: BrowsedMessage = { row: cloneRow(row), body };
      const holder = row.lock && this.locks.holderOf(row.lock.token);
      if (holder) m.lockHolder = holder;
      out.push(m);
      return out.length < count;
    };
    const end = heldOnly(states)
      ? walkHeld(store, q, states, from, take)
      : walkStored(store, q, from, (row) => (states.length > 0 && !states.includes(row.state)) || take(row));
    return end.next === undefined ? { messages: out } : { messages: out, next: end.next };
  }

  /** Deletes every message of an entity (locked ones too; their holders' settlements then fail). */
  async purge(path: string): Promise<number> {
    const { journal, entities } = this.ctx;
    journal.assertRunning();
    const q = entities.resolve(path);
    let purged = 0;
    for (;;) {
      // The first PURGE_BATCH rows, not a copy of every row in memory per batch (held rows may be many).
      const batch: MessageRow[] = [];
      for (const row of q.rows.values()) {
        if (batch.length >= PURGE_BATCH) break;
        batch.push(row);
      }
      if (!batch.length && q.fillWindow(true)) continue; // a deep queue: its next window comes from the store
      if (!batch.length) return purged;
      await journal.run(this.purgePlan(q, batch));
      purged += batch.length;
    }
  }

  // The claim is the rows' removal: a settlement of a purged message fails with MessageLockLost at once. Their
  // tokens are forgotten only once the delete is durable: if it is not, every row is back as the store holds it,
  // a locked one under its lock, which its holder may still settle (Service Bus: a failed operation changes nothing).
  /** The plan of one purge batch: remove the rows now, put them back if the delete is not durable. */
  private purgePlan(q: QueueState, rows: MessageRow[]): Plan {
    for (const row of rows) q.removeRow(row.seq);
    return {
      ops: rows.map((row) => ({ op: 'delete' as const, qid: q.id, seq: row.seq })),
      applied: () => {
        for (const row of rows) if (row.lock) this.locks.release(row.lock.token);
      },
      undo: () => this.putBackAll(q, rows),
    };
  }

  // Rows claimed by removal whose delete failed: back as the store holds them (no pump here, so a failing store is
  // not retried in a loop; the next send, settlement or credit pumps again).
  private putBackAll(q: QueueState, rows: MessageRow[]): void {
    for (const row of rows) putBack(this.ctx, q, row, cloneRow(row));
  }

  /**
   * Batch delete (com.microsoft:batch-delete-messages): removes up to `req.count` of the oldest available
   * messages enqueued before `req.before` from a queue, subscription or dead-letter queue, in one store
   * transaction; resolves with how many were deleted. Locked, deferred and scheduled messages stay.
   */
  async deleteMessages(path: string, req: DeleteMessagesRequest): Promise<number> {
    const { journal, entities, store, clock, log } = this.ctx;
    journal.assertRunning();
    const q = entities.forReceive(path);
    const rows = selectForDelete(store, q, { ...req, before: req.before ?? clock.now() });
    if (!rows.length) return 0;
    for (const row of rows) q.removeRow(row.seq);
    await journal.run({
      ops: rows.map((row) => ({ op: 'delete' as const, qid: q.id, seq: row.seq })),
      undo: () => this.putBackAll(q, rows),
    });
    log.info({ entity: q.path, deleted: rows.length }, 'batch delete');
    return rows.length;
  }

  /**
   * Moves dead-lettered messages back to their queue (or `opts.to`). Each move is one atomic store write:
   * delete from the dead-letter queue and insert into the target under a new sequence number, with the body
   * and properties kept, the dead-letter reason removed and a fresh delivery count.
   */
  async redrive(dlqPath: string, opts: RedriveOptions = {}): Promise<RedriveResult> {
    const { journal, entities, store, clock, log } = this.ctx;
    journal.assertRunning();
    const dlq = entities.resolve(dlqPath);
    if (dlq.kind !== 'deadletter') {
      throw new BrokerError('InvalidOperation', `'${dlq.path}' is not a dead-letter queue.`);
    }
    const parent = entities.all().find((q) => q.dlq === dlq || q.tdlq === dlq);
    const target = opts.to ? entities.queueForSend(opts.to) : parent;
    if (!target) throw new BrokerError('InvalidOperation', `No target entity for '${dlq.path}'.`);
    const result: RedriveResult = { moved: 0, skipped: 0, failed: 0, dryRun: !!opts.dryRun };
    // A deep dead-letter queue keeps only its front in memory: its stored keys say what to walk, read a page at a
    // time with a yield to the event loop between two pages (a dry run moves nothing, so it would not yield else).
    const gapMs = opts.ratePerSec && opts.ratePerSec > 0 ? 1000 / opts.ratePerSec : 0;
    for (const seq of redriveOrder(store, dlq)) {
      if (seq === YIELD) {
        await setImmediate();
        continue;
      }
      if (opts.max !== undefined && result.moved >= opts.max) break;
      const row = dlq.rowAt(seq);
      if (!row || row.state !== 'active') {
        result.skipped++;
        continue;
      }
      const body = store.readBody(dlq.id, seq);
      if (!body || !matches(row, body, opts)) {
        result.skipped++;
        continue;
      }
      if (opts.dryRun) {
        result.moved++;
        continue;
      }
      try {
        await this.moveOne(dlq, row, body, target);
        result.moved++;
      } catch (err) {
        log.error({ err, entity: dlq.path, seq }, 'redrive move failed');
        result.failed++;
      }
      opts.onProgress?.({ ...result });
      if (gapMs) await new Promise<void>((r) => waitTimer(clock, r, gapMs));
    }
    return result;
  }

  private async moveOne(dlq: QueueState, row: MessageRow, body: Uint8Array, target: QueueState): Promise<void> {
    await this.ctx.journal.run(this.movePlan(dlq, row, body, target));
  }

  // The claim is the row's removal from the dead-letter queue (a second redrive or a receiver cannot take it); it
  // reaches the target only once the move is durable, and is dead-lettered again as before if it is not.
  /** The plan of one redrive move: the row out of the dead-letter queue, a fresh copy into the target. */
  private movePlan(dlq: QueueState, row: MessageRow, body: Uint8Array, target: QueueState): Plan {
    const moved: MessageRow = { ...cloneRow(row), seq: target.nextSeq++, state: 'active', deliveryCount: 0 };
    delete moved.lock;
    delete moved.deferred;
    delete moved.bodyRef; // stored with the body read, its own: the dead-lettered row's reference goes with it
    delete moved.reportedExpiry; // it expires anew on the target (below)
    if (moved.props) {
      delete moved.props.DeadLetterReason;
      delete moved.props.DeadLetterErrorDescription;
      if (!Object.keys(moved.props).length) delete moved.props;
    }
    // Enqueued anew: a fresh enqueued time and TTL on the target.
    const now = this.ctx.clock.now();
    moved.enqueuedAt = now;
    moved.expiresAt = target.settings.defaultMessageTtlMs === null ? null : now + target.settings.defaultMessageTtlMs;
    dlq.removeRow(row.seq);
    target.expectInsert(moved);
    return {
      ops: [
        { op: 'delete', qid: dlq.id, seq: row.seq },
        { op: 'put', qid: target.id, row: cloneRow(moved), body },
        { op: 'nextSeq', qid: target.id, nextSeq: target.nextSeq },
      ],
      applied: () => {
        this.transitions.enqueue(target, moved);
        this.pump(target);
      },
      undo: () => this.putBackAll(dlq, [row]),
    };
  }
}

/** Marks a page boundary in redriveOrder: the walk yields to the event loop there. */
const YIELD = -1;

// The sequence numbers of a dead-letter queue in order, REDRIVE_PAGE at a time, each page read anew from the
// store (the walk moves messages between two pages, so no store iterator is held across them).
function* redriveOrder(store: BrokerContext['store'], dlq: QueueState): Generator<number> {
  if (!dlq.cold) {
    const all = [...dlq.rows.keys()].sort((a, b) => a - b);
    for (let i = 0; i < all.length; i++) {
      if (i > 0 && i % REDRIVE_PAGE === 0) yield YIELD;
      yield all[i]!;
    }
    return;
  }
  for (let from = 1, first = true; ; first = false) {
    const page: number[] = [];
    for (const seq of store.seqsFrom(dlq.id, from)) {
      page.push(seq);
      if (page.length >= REDRIVE_PAGE) break;
    }
    if (!page.length) return;
    if (!first) yield YIELD;
    yield* page;
    from = page[page.length - 1]! + 1;
  }
}

// Whether a dead-lettered message passes the redrive's filters.
function matches(row: MessageRow, body: Uint8Array, opts: RedriveOptions): boolean {
  if (opts.reason !== undefined && row.props?.DeadLetterReason !== opts.reason) return false;
  if (opts.where) {
    const props = { ...(opts.appProperties?.(body) ?? {}), ...(row.props ?? {}) };
    const v = props[opts.where.key];
    if (v === undefined || v === null || String(v) !== opts.where.value) return false;
  }
  return true;
}
