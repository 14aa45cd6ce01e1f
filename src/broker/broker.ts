// The broker facade: sends, peek-lock deliveries, settlements, lock renewal and lock expiry, in Service Bus
// terms. It knows neither AMQP nor LMDB. Decisions are made synchronously on the in-memory index
// (`QueueState`); the store is told in the same turn and the client is answered once the store has synced.

import { randomUUID } from 'node:crypto';
import type { PeeklockConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { Store, StoreOp } from '../store/store.js';
import type { Clock } from './clock.js';
import { Entities } from './entities.js';
import { BrokerError, lockLost } from './errors.js';
import { LockRules, type LockRef } from './locks.js';
import { QueueState } from './queue-state.js';
import { Scheduler, type Deadline } from './scheduler.js';
import type { Consumer, IncomingMessage, MessageRow, Settlement } from './types.js';
import { cloneRow } from './rows.js';

/** What the broker needs to run. */
export interface BrokerDeps {
  config: PeeklockConfig;
  store: Store;
  clock: Clock;
  log: Logger;
}

/** What a receiving link gets back from `attach`. */
export interface ConsumerHandle {
  /** Offers messages up to the consumer's capacity; call after credit arrives. */
  pump(): void;
  /** Deliveries reserved for this consumer whose lock is not committed yet. */
  pending(): number;
  /** Removes the consumer; locks it holds stay until they are settled or expire (Service Bus keeps them). */
  detach(): void;
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

/** The Service Bus semantics over a `Store`. */
export class Broker {
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
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly scheduler: Scheduler;
  private readonly lockRules: LockRules;
  private readonly reserved = new Map<Consumer, number>();
  private readonly inflight = new Set<Promise<unknown>>();
  private stopping = false;

  constructor(private readonly deps: BrokerDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.log = deps.log;
    this.entities = new Entities(deps.config, deps.store, deps.log);
    this.scheduler = new Scheduler(deps.clock, (d) => this.onDeadline(d));
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

  /** Creates the configured entities and rebuilds every queue's index, locks and deadlines from the store. */
  async start(): Promise<void> {
    await this.entities.create();
    const now = this.clock.now();
    for (const q of this.entities.all()) this.recover(q, now);
  }

  /** Stops timers and waits for writes already issued; new work is refused with ShuttingDown. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.scheduler.stop();
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  /** Sends messages to a queue; resolves with their sequence numbers once they are on disk. */
  async send(path: string, msgs: IncomingMessage[]): Promise<number[]> {
    this.assertRunning();
    const q = this.entities.forSend(path);
    const now = this.clock.now();
    const rows: MessageRow[] = [];
    const ops: StoreOp[] = [];
    for (const m of msgs) {
      if (m.body.length > this.maxMessageSize) {
        throw new BrokerError(
          'MessageTooLarge',
          `The received message (size ${m.body.length} bytes) exceeds the limit (${this.maxMessageSize} bytes) of entity '${q.path}'.`,
        );
      }
      const row = newRow(q, m, q.nextSeq++, now);
      rows.push(row);
      ops.push({ op: 'put', qid: q.id, row: cloneRow(row), body: m.body });
    }
    ops.push({ op: 'nextSeq', qid: q.id, nextSeq: q.nextSeq });
    await this.persist(ops);
    // Visible only once durable: a consumer never sees a message the sender was not told is accepted.
    for (const row of rows) this.enqueue(q, row);
    this.counters.sent += rows.length;
    this.pump(q);
    return rows.map((r) => r.seq);
  }

  /** Attaches a receiver to a queue or dead-letter queue path. */
  attach(path: string, consumer: Consumer): ConsumerHandle {
    this.assertRunning();
    const q = this.entities.forReceive(path);
    q.consumers.push(consumer);
    return {
      pump: () => this.pump(q),
      pending: () => this.reserved.get(consumer) ?? 0,
      detach: () => {
        const i = q.consumers.indexOf(consumer);
        if (i >= 0) q.consumers.splice(i, 1);
      },
    };
  }

  /** Settles a peek-locked message by lock token; fails with LockLost if the lock is not current. */
  async settle(token: string, s: Settlement, entityPath?: string): Promise<void> {
    this.assertRunning();
    const { q, row } = this.currentLock(token, entityPath);
    // Refuse before releasing: a rejected settlement must leave the holder's lock intact.
    if (s.kind === 'deadLetter' && !q.dlq) {
      throw new BrokerError('InvalidOperation', `Cannot dead-letter a message in '${q.path}'.`);
    }
    const prevLock = row.lock;
    this.lockRules.release(token);
    switch (s.kind) {
      case 'complete':
        q.rows.delete(row.seq);
        this.counters.completed++;
        try {
          await this.persist([{ op: 'delete', qid: q.id, seq: row.seq, lock: prevLock }]);
        } catch (err) {
          // Not durable, so not completed: the message stays under the holder's lock (which may retry) and
          // comes back when the lock ends, as the store still has it.
          this.counters.completed--;
          if (!q.rows.has(row.seq) && prevLock) {
            q.rows.set(row.seq, row);
            this.lockRules.hold(token, q.id, row.seq);
            this.scheduler.add({ at: prevLock.until, kind: 'lock', qid: q.id, seq: row.seq, token });
          }
          throw err;
        }
        return;
      case 'abandon':
        mergeProps(row, s.props);
        this.counters.abandoned++;
        return this.lockEnded(q, row, prevLock);
      case 'defer':
        mergeProps(row, s.props);
        row.state = 'deferred';
        delete row.lock;
        await this.persist([{ op: 'put', qid: q.id, row: cloneRow(row), prevLock }]);
        return;
      case 'deadLetter':
        return this.deadLetter(q, row, { ...s.props, ...reasonProps(s.reason, s.description) }, prevLock);
    }
  }

  /** Extends a lock by the entity's LockDuration; resolves with the new locked-until (epoch ms). */
  async renewLock(token: string, entityPath?: string): Promise<number> {
    this.assertRunning();
    const { q, row } = this.currentLock(token, entityPath);
    const prevLock = row.lock!;
    row.lock = { token, until: this.clock.now() + q.settings.lockDurationMs };
    this.scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token });
    this.counters.renewed++;
    await this.persist([{ op: 'put', qid: q.id, row: cloneRow(row), prevLock }]);
    return row.lock.until;
  }

  /** Looks up a valid lock, or throws LockLost. */
  private currentLock(token: string, entityPath?: string): LockRef {
    const ref = this.lockRules.current(token, (qid) => this.entities.byId(qid));
    if (!ref) throw lockLost();
    if (entityPath !== undefined && !this.entities.sameEntity(ref.q, entityPath)) throw lockLost();
    return ref;
  }

  /** Offers ready messages to the queue's consumers, round-robin, within their credit. */
  private pump(q: QueueState): void {
    if (this.stopping) return;
    while (q.consumers.length) {
      const i = this.nextConsumer(q);
      if (i < 0) return;
      const row = q.takeReady();
      if (!row) return;
      if (row.expiresAt !== null && row.expiresAt <= this.clock.now() && q.kind !== 'deadletter') {
        void this.expire(q, row).catch(() => undefined);
        continue;
      }
      // The round-robin cursor moves only when a message is actually handed out.
      const c = q.consumers[i]!;
      q.rr = (i + 1) % q.consumers.length;
      if (c.receiveMode === 'peekLock') this.lockAndDeliver(q, row, c);
      else this.deleteAndDeliver(q, row, c);
    }
  }

  /** Index of the next consumer (round-robin from the cursor) with room for a message, or -1. */
  private nextConsumer(q: QueueState): number {
    const n = q.consumers.length;
    for (let i = 0; i < n; i++) {
      const k = (q.rr + i) % n;
      const c = q.consumers[k]!;
      if (c.isOpen() && c.capacity() - (this.reserved.get(c) ?? 0) > 0) return k;
    }
    return -1;
  }

  private reserve(c: Consumer, delta: number): void {
    const n = (this.reserved.get(c) ?? 0) + delta;
    if (n > 0) this.reserved.set(c, n);
    else this.reserved.delete(c);
  }

  // The lock clock starts when the message is taken from the entity, not when it reaches the wire
  // (Service Bus AMQP guide); the transfer goes out after the lock is committed.
  private lockAndDeliver(q: QueueState, row: MessageRow, c: Consumer): void {
    const prevLock = row.lock;
    const token = randomUUID();
    row.state = 'locked';
    row.deliveryCount++;
    row.lock = { token, until: this.clock.now() + q.settings.lockDurationMs };
    this.lockRules.hold(token, q.id, row.seq);
    this.scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token });
    const snapshot = cloneRow(row);
    this.reserve(c, 1);
    this.persist([{ op: 'put', qid: q.id, row: cloneRow(row), prevLock }]).then(
      () => {
        this.reserve(c, -1);
        if (!c.isOpen()) return this.unlock(q, row, token);
        const body = this.store.readBody(q.id, row.seq);
        if (!body) return this.log.error({ entity: q.path, seq: row.seq }, 'stored body missing');
        this.counters.delivered++;
        c.deliver({ entityPath: q.path, row: snapshot, body });
      },
      () => this.reserve(c, -1),
    );
  }

  // The receiver vanished before its transfer went out: the attempt never reached a client, so it is not
  // counted (NATS' didNotDeliver) and the message is available again at once.
  private unlock(q: QueueState, row: MessageRow, token: string): void {
    if (row.state !== 'locked' || row.lock?.token !== token) return;
    const prevLock = row.lock;
    this.lockRules.release(token);
    row.deliveryCount--;
    q.makeReady(row);
    void this.persist([{ op: 'put', qid: q.id, row: cloneRow(row), prevLock }]).catch(() => undefined);
    this.pump(q);
  }

  // Receive-and-delete is at-most-once: the message is deleted, then sent. If the receiver has gone by the
  // time the delete is durable, the message is put back rather than lost.
  private deleteAndDeliver(q: QueueState, row: MessageRow, c: Consumer): void {
    const body = this.store.readBody(q.id, row.seq);
    q.rows.delete(row.seq);
    if (!body) return void this.log.error({ entity: q.path, seq: row.seq }, 'stored body missing');
    const snapshot = cloneRow(row);
    this.reserve(c, 1);
    this.persist([{ op: 'delete', qid: q.id, seq: row.seq }]).then(
      () => {
        this.reserve(c, -1);
        if (c.isOpen()) {
          this.counters.delivered++;
          this.counters.completed++;
          return c.deliver({ entityPath: q.path, row: snapshot, body });
        }
        q.rows.set(row.seq, row);
        void this.persist([{ op: 'put', qid: q.id, row: cloneRow(row), body }]).then(
          () => {
            q.makeReady(row);
            this.pump(q);
          },
          () => undefined, // logged by persist; must not become an unhandled rejection
        );
      },
      () => {
        this.reserve(c, -1);
        // The delete did not land, so the message was not taken: it stays available (no pump here, so a
        // failing store is not retried in a loop; the next send, settlement or credit pumps again).
        if (!q.rows.has(row.seq)) {
          q.rows.set(row.seq, row);
          q.makeReady(row);
        }
      },
    );
  }

  // A lock ended without a complete (abandon or expiry): one failed delivery. Service Bus dead-letters with
  // MaxDeliveryCountExceeded once the count reaches MaxDeliveryCount; otherwise the message returns under
  // its original sequence number, so it "pops back up at or near the front" of the queue.
  private async lockEnded(q: QueueState, row: MessageRow, prevLock: MessageRow['lock']): Promise<void> {
    if (row.expiresAt !== null && row.expiresAt <= this.clock.now() && q.kind !== 'deadletter') {
      delete row.lock;
      return this.expire(q, row, prevLock);
    }
    if (q.dlq && row.deliveryCount >= q.settings.maxDeliveryCount) {
      const reason = reasonProps(
        'MaxDeliveryCountExceeded',
        "Message couldn't be consumed after maximum delivery attempts.",
      );
      return this.deadLetter(q, row, reason, prevLock);
    }
    q.makeReady(row);
    // Issue the release before pump() can re-take the row, so the store sees the writes in order (a
    // receive-and-delete consumer's delete must not be followed by a stale put that resurrects the row).
    const released = this.persist([{ op: 'put', qid: q.id, row: cloneRow(row), prevLock }]);
    this.pump(q);
    await released;
  }

  // Moves a message to the entity's dead-letter subqueue in one atomic write, keeping its sequence number,
  // body and delivery count; the reason travels as the DeadLetterReason application property.
  private async deadLetter(
    q: QueueState,
    row: MessageRow,
    props: Record<string, unknown>,
    prevLock: MessageRow['lock'],
  ): Promise<void> {
    const dlq = q.dlq!;
    const body = this.store.readBody(q.id, row.seq);
    q.rows.delete(row.seq);
    mergeProps(row, props);
    delete row.lock;
    row.state = 'active';
    row.expiresAt = null; // a dead-letter queue ignores TTL
    dlq.rows.set(row.seq, row);
    this.counters.deadLettered++;
    await this.persist([
      { op: 'delete', qid: q.id, seq: row.seq, lock: prevLock },
      { op: 'put', qid: dlq.id, row: cloneRow(row), body },
    ]);
    dlq.makeReady(row);
    this.pump(dlq);
  }

  // TTL: an expired message is never delivered; with DeadLetteringOnMessageExpiration it goes to the DLQ
  // with reason TTLExpiredException, otherwise it is removed.
  private async expire(q: QueueState, row: MessageRow, prevLock?: MessageRow['lock']): Promise<void> {
    if (q.settings.deadLetteringOnMessageExpiration && q.dlq) {
      return this.deadLetter(
        q,
        row,
        reasonProps('TTLExpiredException', 'The message expired and was dead lettered.'),
        prevLock,
      );
    }
    q.rows.delete(row.seq);
    await this.persist([{ op: 'delete', qid: q.id, seq: row.seq, lock: prevLock }]);
  }

  private onDeadline(d: Deadline): void {
    const q = this.entities.byId(d.qid);
    const row = q?.rows.get(d.seq);
    if (!q || !row) return;
    const now = this.clock.now();
    if (d.kind === 'lock') {
      // Stale entries (settled, renewed, or re-locked since) are skipped here rather than removed.
      const prevLock = row.lock;
      if (row.state !== 'locked' || !prevLock || prevLock.token !== d.token || prevLock.until > now) return;
      this.lockRules.release(prevLock.token);
      this.counters.lockExpired++;
      this.log.debug({ entity: q.path, seq: row.seq, deliveryCount: row.deliveryCount }, 'lock expired');
      void this.lockEnded(q, row, prevLock).catch(() => undefined);
    } else if (d.kind === 'scheduled') {
      if (row.state !== 'scheduled') return;
      delete row.scheduledAt;
      q.makeReady(row);
      void this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]).catch(() => undefined);
      this.pump(q);
    } else if (d.kind === 'ttl') {
      if ((row.state === 'active' || row.state === 'deferred') && row.expiresAt !== null && row.expiresAt <= now) {
        void this.expire(q, row).catch(() => undefined);
      }
    }
  }

  private enqueue(q: QueueState, row: MessageRow): void {
    q.rows.set(row.seq, row);
    if (row.state === 'scheduled') {
      this.scheduler.add({ at: row.scheduledAt!, kind: 'scheduled', qid: q.id, seq: row.seq });
    } else {
      q.makeReady(row);
    }
    if (row.expiresAt !== null) this.scheduler.add({ at: row.expiresAt, kind: 'ttl', qid: q.id, seq: row.seq });
  }

  // After a restart a locked message stays locked until its locked-until, then takes the normal expiry
  // path (reliability.md T5 "keep"). Its old token is not honoured: Service Bus cannot recover AMQP links
  // across connections, so settling it fails with MessageLockLost. A lock further out than one
  // LockDuration (the wall clock moved back while we were down) is clamped (T8).
  private recover(q: QueueState, now: number): void {
    const snap = this.store.load(q.id);
    q.nextSeq = snap.nextSeq;
    for (const row of snap.rows) {
      q.rows.set(row.seq, row);
      if (row.state === 'locked' && row.lock) {
        row.lock.until = Math.min(row.lock.until, now + q.settings.lockDurationMs);
        this.scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token: row.lock.token });
      } else if (row.state === 'scheduled') {
        this.scheduler.add({ at: row.scheduledAt ?? now, kind: 'scheduled', qid: q.id, seq: row.seq });
      } else if (row.state === 'active') {
        q.ready.push(row.seq);
      }
      if (row.expiresAt !== null) this.scheduler.add({ at: row.expiresAt, kind: 'ttl', qid: q.id, seq: row.seq });
    }
    if (snap.rows.length) this.log.info({ entity: q.path, ...q.counts() }, 'recovered');
  }

  private persist(ops: StoreOp[]): Promise<void> {
    const p = this.store.write(ops).catch((err: unknown) => {
      this.log.error({ err }, 'store write failed');
      throw new BrokerError('StoreUnavailable', 'The message store could not complete the operation.');
    });
    this.inflight.add(p);
    const done = (): void => void this.inflight.delete(p);
    p.then(done, done);
    return p;
  }

  private assertRunning(): void {
    if (this.stopping) throw new BrokerError('ShuttingDown', 'The broker is shutting down.');
  }
}

function newRow(q: QueueState, m: IncomingMessage, seq: number, now: number): MessageRow {
  // The entity's DefaultMessageTimeToLive caps the message's own TTL: the smaller wins.
  const ttls = [m.ttlMs, q.settings.defaultMessageTtlMs].filter((t): t is number => typeof t === 'number' && t > 0);
  let expiresAt = ttls.length ? now + Math.min(...ttls) : null;
  if (m.absoluteExpiry !== undefined && m.ttlMs === undefined) {
    expiresAt = expiresAt === null ? m.absoluteExpiry : Math.min(expiresAt, m.absoluteExpiry);
  }
  const scheduled = m.scheduledAt !== undefined && m.scheduledAt > now;
  const row: MessageRow = {
    seq,
    state: scheduled ? 'scheduled' : 'active',
    deliveryCount: 0,
    enqueuedAt: now,
    expiresAt,
    messageId: m.messageId,
    size: m.body.length,
  };
  if (scheduled) row.scheduledAt = m.scheduledAt;
  if (m.sessionId !== undefined) row.sessionId = m.sessionId;
  return row;
}

function mergeProps(row: MessageRow, props: Record<string, unknown> | undefined): void {
  if (!props) return;
  for (const [k, v] of Object.entries(props)) {
    // The JS SDK sends null for a dead-letter reason it was not given; null means "leave unset".
    if (v === null || v === undefined) continue;
    (row.props ??= {})[k] = v;
  }
}

function reasonProps(reason?: string, description?: string): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  if (reason != null) p.DeadLetterReason = reason;
  if (description != null) p.DeadLetterErrorDescription = description;
  return p;
}

