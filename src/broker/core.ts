// The broker's state transitions shared by every operation: how a lock ends (abandon or expiry), dead-lettering,
// TTL expiry, deadlines, recovery from the store, and the write path to the store. `Broker` adds the public
// operations on top. Nothing here knows AMQP or LMDB.

import { EventEmitter } from 'node:events';
import type { PeeklockConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { Store, StoreOp } from '../store/store.js';
import type { Clock } from './clock.js';
import { Entities } from './entities.js';
import { lockLost } from './errors.js';
import { Journal } from './journal.js';
import { LockRules, type LockRef } from './locks.js';
import type { QueueState } from './queue-state.js';
import { Scheduler, type Deadline } from './scheduler.js';
import type { IncomingMessage, MessageRow } from './types.js';
import type { Placement } from './routing.js';
import { cloneRow, mergeProps, reasonProps, uncountDelivery } from './rows.js';
import { Router } from './routing.js';
import { compileSubscriptionRules } from './subscription-rules.js';
import type { TopicState } from './topic-state.js';
import { RECOVERED_HOLDER } from './session-state.js';

/** What the broker needs to run. */
export interface BrokerDeps {
  config: PeeklockConfig;
  store: Store;
  clock: Clock;
  log: Logger;
  /** Called once when the store reports it can never commit again (the process should exit and restart). */
  onFatal?: (err: Error) => void;
}

/** Counters since start, for logs and the benchmark. */
export interface BrokerCounters {
  sent: number;
  delivered: number;
  completed: number;
  abandoned: number;
  deadLettered: number;
  lockExpired: number;
  renewed: number;
}

/** What the broker reports as it works, for metrics (each payload names the entity). */
export interface BrokerEventMap {
  sent: [{ entity: string; count: number; ms: number }];
  settled: [{ entity: string; kind: string; ms: number }];
  delivered: [{ entity: string; deliveryCount: number }];
  deadLettered: [{ entity: string; reason: string }];
  lockExpired: [{ entity: string }];
  renewed: [{ entity: string }];
}

/** Shared state and transitions; see `Broker` for the operations clients use. */
export abstract class BrokerCore {
  readonly entities: Entities;
  readonly counters: BrokerCounters = {
    sent: 0,
    delivered: 0,
    completed: 0,
    abandoned: 0,
    deadLettered: 0,
    lockExpired: 0,
    renewed: 0,
  };
  protected readonly store: Store;
  protected readonly clock: Clock;
  protected readonly log: Logger;
  protected readonly scheduler: Scheduler;
  protected readonly lockRules: LockRules;
  protected readonly router: Router;
  protected readonly journal: Journal;
  /** Events for metrics and alerting; listeners must not throw. */
  readonly events = new EventEmitter<BrokerEventMap>();

  constructor(protected readonly deps: BrokerDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.log = deps.log;
    this.entities = new Entities(deps.config, deps.store, (rules, path) => compileSubscriptionRules(rules, path));
    this.router = new Router(this.entities);
    this.journal = new Journal(deps.store, deps.log, deps.onFatal);
    this.scheduler = new Scheduler(deps.clock);
    for (const kind of ['lock', 'scheduled', 'ttl', 'session'] as const) this.scheduler.on(kind, (d) => this.onDeadline(d));
    this.lockRules = new LockRules(deps.clock);
  }

  /** Largest message accepted, in bytes (advertised as max-message-size). */
  get maxMessageSize(): number {
    return this.deps.config.broker.maxMessageSizeBytes;
  }

  /** Number of pending scheduler deadlines (for tests and metrics). */
  get deadlines(): number {
    return this.scheduler.size;
  }

  /** Offers ready messages of `q` to its consumers. */
  protected abstract pump(q: QueueState): void;

  /** A session lock's deadline fell due (implemented where sessions are). */
  protected onSessionDeadline(q: QueueState, sessionId: string): void {
    void q;
    void sessionId;
  }

  /** Looks up a valid lock, or throws LockLost. */
  protected currentLock(token: string, entityPath?: string): LockRef {
    const ref = this.lockRules.current(token, (qid) => this.entities.byId(qid));
    if (!ref) throw lockLost();
    if (entityPath !== undefined && !this.entities.sameEntity(ref.q, entityPath)) throw lockLost();
    return ref;
  }

  // A lock ended without a complete (abandon or expiry): one failed delivery. Service Bus dead-letters with
  // MaxDeliveryCountExceeded once the count reaches MaxDeliveryCount; otherwise the message returns under
  // its original sequence number, so it "pops back up at or near the front" of the queue.
  // In a dead-letter queue no delivery counts (Service Bus shows a message abandoned there with the count it
  // was dead-lettered with), so the attempt counted at lock time is taken back.
  protected async lockEnded(q: QueueState, row: MessageRow): Promise<void> {
    if (q.kind === 'deadletter') uncountDelivery(row);
    if (row.expiresAt !== null && row.expiresAt <= this.clock.now() && q.kind !== 'deadletter') {
      delete row.lock;
      return this.expire(q, row);
    }
    if (q.dlq && row.deliveryCount >= q.settings.maxDeliveryCount) {
      const reason = reasonProps(
        'MaxDeliveryCountExceeded',
        "Message couldn't be consumed after maximum delivery attempts.",
      );
      return this.deadLetter(q, row, reason);
    }
    if (row.deferred) {
      // A deferred message stays deferred: it can only be fetched again by its sequence number.
      q.setState(row, 'deferred');
      delete row.lock;
      return this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]);
    }
    q.makeReady(row);
    // Issue the release before pump() can re-take the row, so the store sees the writes in order (a
    // receive-and-delete consumer's delete must not be followed by a stale put that resurrects the row).
    const released = this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]);
    this.pump(q);
    await released;
  }

  // Moves a message to the entity's dead-letter subqueue in one atomic write, keeping its sequence number,
  // body and delivery count; the reason travels as the DeadLetterReason application property.
  protected async deadLetter(
    q: QueueState,
    row: MessageRow,
    props: Record<string, unknown>,
  ): Promise<void> {
    const dlq = q.dlq!;
    const body = this.store.readBody(q.id, row.seq);
    if (q.settings.forwardDeadLetteredMessagesTo && body) return this.forwardDeadLetter(q, row, props, body);
    q.removeRow(row.seq);
    mergeProps(row, props);
    delete row.lock;
    // In the dead-letter queue the message starts over as active: neither deferred nor scheduled there.
    delete row.deferred;
    delete row.scheduledAt;
    row.state = 'active';
    row.expiresAt = null; // a dead-letter queue ignores TTL
    dlq.addRow(row);
    this.counters.deadLettered++;
    this.events.emit('deadLettered', { entity: q.path, reason: String(row.props?.DeadLetterReason ?? '') });
    await this.persist([
      { op: 'delete', qid: q.id, seq: row.seq },
      { op: 'put', qid: dlq.id, row: cloneRow(row), body },
    ]);
    dlq.makeReady(row);
    this.pump(dlq);
  }

  // ForwardDeadLetteredMessagesTo: a message dead-lettered here goes to the target entity instead of this
  // DLQ, in the same transaction as its removal, with its reason and x-opt-deadletter-source (the entity it
  // was dead-lettered in).
  private async forwardDeadLetter(
    q: QueueState,
    row: MessageRow,
    props: Record<string, unknown>,
    body: Uint8Array,
  ): Promise<void> {
    const merged = { ...(row.props ?? {}) };
    for (const [k, v] of Object.entries(props)) if (v !== null && v !== undefined) merged[k] = v;
    const m: IncomingMessage = { body, messageId: row.messageId, patch: { props: merged, deadLetterSource: q.path } };
    if (row.sessionId !== undefined) m.sessionId = row.sessionId;
    if (row.sys) m.patch!.sys = row.sys;
    const out: Placement[] = [];
    this.router.route(this.entities.forSend(q.settings.forwardDeadLetteredMessagesTo!), m, this.clock.now(), out, 1);
    q.removeRow(row.seq);
    this.counters.deadLettered++;
    this.events.emit('deadLettered', { entity: q.path, reason: String(merged.DeadLetterReason ?? '') });
    await this.persist([{ op: 'delete', qid: q.id, seq: row.seq }, ...this.placementOps(out)]);
    for (const p of out) this.enqueue(p.q, p.row);
    for (const p of out) this.pump(p.q);
  }

  /** Store ops for placements: each row with its body, and the sequence marks of the entities that numbered them. */
  protected placementOps(placements: Placement[]): StoreOp[] {
    const ops: StoreOp[] = [];
    const owners = new Set<QueueState>();
    for (const p of placements) {
      ops.push({ op: 'put', qid: p.q.id, row: cloneRow(p.row), body: p.body });
      owners.add(this.seqOwner(p.q));
    }
    for (const q of owners) ops.push({ op: 'nextSeq', qid: q.id, nextSeq: q.nextSeq });
    return ops;
  }

  // A dead-letter queue has no sequence of its own: its messages keep (or take) their parent's numbers.
  protected seqOwner(q: QueueState): QueueState {
    return q.kind === 'deadletter' ? (this.entities.all().find((p) => p.dlq === q) ?? q) : q;
  }

  // TTL: an expired message is never delivered; with DeadLetteringOnMessageExpiration it goes to the DLQ
  // with reason TTLExpiredException, otherwise it is removed.
  protected async expire(q: QueueState, row: MessageRow): Promise<void> {
    if (q.settings.deadLetteringOnMessageExpiration && q.dlq) {
      return this.deadLetter(q, row, reasonProps('TTLExpiredException', 'The message expired and was dead lettered.'));
    }
    q.removeRow(row.seq);
    await this.persist([{ op: 'delete', qid: q.id, seq: row.seq }]);
  }

  protected onDeadline(d: Deadline): void {
    const q = this.entities.byId(d.qid);
    if (q && d.kind === 'session') return this.onSessionDeadline(q, d.session!);
    const row = q?.rows.get(d.seq);
    if (!q || !row) return;
    const now = this.clock.now();
    if (d.kind === 'lock') {
      // Stale entries (settled, renewed, or re-locked since) are skipped here rather than removed.
      const prevLock = row.lock;
      if (row.state !== 'locked' || !prevLock || prevLock.token !== d.token || prevLock.until > now) return;
      this.lockRules.release(prevLock.token);
      this.counters.lockExpired++;
      this.events.emit('lockExpired', { entity: q.path });
      this.log.debug({ entity: q.path, seq: row.seq, deliveryCount: row.deliveryCount }, 'lock expired');
      void this.lockEnded(q, row).catch(() => undefined);
    } else if (d.kind === 'scheduled') {
      if (row.state !== 'scheduled') return;
      // scheduledAt stays on the row: Service Bus goes on reporting the message as scheduled once it is visible.
      q.makeReady(row);
      void this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]).catch(() => undefined);
      this.pump(q);
    } else if (d.kind === 'ttl') {
      // Deferred messages are checked for expiry only when fetched by sequence number (message-deferral docs).
      if (row.state === 'active' && row.expiresAt !== null && row.expiresAt <= now) {
        void this.expire(q, row).catch(() => undefined);
      }
    }
  }

  protected enqueue(q: QueueState, row: MessageRow): void {
    q.addRow(row);
    if (row.state === 'scheduled') {
      this.scheduler.add({ at: row.scheduledAt!, kind: 'scheduled', qid: q.id, seq: row.seq });
    } else {
      q.makeReady(row);
    }
    if (row.expiresAt !== null) this.scheduler.add({ at: row.expiresAt, kind: 'ttl', qid: q.id, seq: row.seq });
  }

  // After a restart a locked message stays locked until its locked-until, then takes the normal expiry path
  // (docs/durability.md, "Restarts: locks and delivery counts"). Its old token is not honoured: Service Bus cannot
  // recover AMQP links across connections, so settling it fails with MessageLockLost. A lock further out than one
  // LockDuration (the wall clock moved back while we were down) is clamped.
  protected recover(q: QueueState, now: number): void {
    this.recoverDedup(q, now);
    if (q.sessionful) this.recoverSessions(q, now);
    const snap = this.store.load(q.id);
    q.nextSeq = snap.nextSeq;
    for (const row of snap.rows) {
      q.addRow(row);
      if (row.state === 'locked' && row.lock) {
        row.lock.until = Math.min(row.lock.until, now + q.settings.lockDurationMs);
        this.scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token: row.lock.token });
      } else if (row.state === 'scheduled') {
        this.scheduler.add({ at: row.scheduledAt ?? now, kind: 'scheduled', qid: q.id, seq: row.seq });
      } else if (row.state === 'active') {
        q.makeReady(row);
      }
      if (row.expiresAt !== null) this.scheduler.add({ at: row.expiresAt, kind: 'ttl', qid: q.id, seq: row.seq });
    }
    if (snap.rows.length) this.log.info({ entity: q.path, ...q.counts() }, 'recovered');
  }

  // Session state survives restarts; a session that was locked stays locked (by nobody) until its lock lapses,
  // like a message lock (clamped to one LockDuration in case the wall clock moved back while we were down).
  private recoverSessions(q: QueueState, now: number): void {
    for (const [id, rec] of this.store.loadSessions(q.id)) {
      const s = q.session(id);
      s.state = rec.state;
      s.updatedAt = rec.updatedAt;
      if (rec.lockedUntil > now) {
        s.holder = RECOVERED_HOLDER;
        s.lockedUntil = Math.min(rec.lockedUntil, now + q.settings.lockDurationMs);
        this.scheduler.add({ at: s.lockedUntil, kind: 'session', qid: q.id, seq: 0, session: id });
      }
    }
  }

  /** Reloads a queue's or topic's duplicate-detection history, forgetting windows that have passed. */
  protected recoverDedup(q: QueueState | TopicState, now: number): void {
    const stale: StoreOp[] = [];
    for (const { key, until } of this.store.loadDedup(q.id)) {
      if (until > now) q.dedup.set(key, until);
      else stale.push({ op: 'undedup', qid: q.id, key });
    }
    if (stale.length) void this.persist(stale).catch(() => undefined);
  }

  /** Forgets duplicate-detection entries whose window has passed; returns the store ops to persist that. */
  protected pruneDedup(q: QueueState | TopicState, now: number): StoreOp[] {
    q.dedupSincePrune = 0;
    const ops: StoreOp[] = [];
    for (const [key, until] of q.dedup) {
      if (until > now) continue;
      q.dedup.delete(key);
      ops.push({ op: 'undedup', qid: q.id, key });
    }
    return ops;
  }

  protected persist(ops: StoreOp[]): Promise<void> {
    return this.journal.persist(ops);
  }

  protected assertRunning(): void {
    this.journal.assertRunning();
  }
}
