// The messaging operations: sends, peek-lock deliveries, settlements, lock renewal and the sequence-number
// operations, in Service Bus terms. It knows neither AMQP nor LMDB. Decisions are made synchronously on the in-memory index (`QueueState`); the store is
// told in the same turn and the client is answered once the store has synced.

import { randomUUID } from 'node:crypto';
import { BrokerCore } from './core.js';
import { dedupKey, mergeProps, reasonProps } from './rows.js';
import { BrokerError } from './errors.js';
import type { QueueState } from './queue-state.js';
import type { StoreOp } from '../store/store.js';
import type { Placement } from './routing.js';
import type { Consumer, IncomingMessage, MessageRow, ReceiveMode, Settlement, StoredMessage } from './types.js';
import { BrokerError as Err } from './errors.js';
import { cloneRow, uncountDelivery } from './rows.js';

export type { BrokerDeps, BrokerCounters } from './core.js';

/** What a receiving link gets back from `attach`. */
export interface ConsumerHandle {
  /** Offers messages up to the consumer's capacity; call after credit arrives. */
  pump(): void;
  /** Deliveries reserved for this consumer whose lock is not committed yet. */
  pending(): number;
  /** Removes the consumer; locks it holds stay until they are settled or expire (Service Bus keeps them). */
  detach(): void;
}

/** The Service Bus messaging semantics over a `Store`; `Broker` adds the operator's operations. */
export class MessagingCore extends BrokerCore {
  private readonly reserved = new Map<Consumer, number>();


  /** Creates the configured entities and rebuilds every queue's index, locks and deadlines from the store. */
  async start(): Promise<void> {
    await this.entities.create();
    const now = this.clock.now();
    for (const q of this.entities.all()) this.recover(q, now);
    for (const t of this.entities.allTopics()) {
      t.nextSeq = this.store.load(t.id).nextSeq;
      this.recoverDedup(t, now);
    }
  }

  /** Stops timers and waits for writes already issued; new work is refused with ShuttingDown. */
  async stop(): Promise<void> {
    this.journal.stop();
    this.scheduler.stop();
    await this.journal.drain();
  }

  /**
   * Sends messages to a queue; resolves with their sequence numbers once they are on disk. With
   * RequiresDuplicateDetection, a message whose message-id was sent within DuplicateDetectionHistoryTimeWindow
   * is accepted and dropped (its number is reported as 0).
   */
  async send(path: string, msgs: IncomingMessage[]): Promise<number[]> {
    const t0 = performance.now();
    this.assertRunning();
    const target = this.entities.forSend(path);
    const now = this.clock.now();
    for (const m of msgs) {
      if (m.body.length > this.maxMessageSize) {
        throw new BrokerError(
          'MessageTooLarge',
          `The received message (size ${m.body.length} bytes) exceeds the limit (${this.maxMessageSize} bytes) of entity '${target.path}'.`,
        );
      }
    }
    if (target.kind !== 'topic') {
      this.checkQuota(target, msgs);
      if (target.sessionful && msgs.some((m) => !m.sessionId)) {
        throw new BrokerError(
          'InvalidOperation',
          `The SessionId was not set on a message, and it cannot be sent to the entity '${target.path}'. Entities that have session support enabled can only receive messages that have the SessionId set.`,
        );
      }
    }
    const placements: Placement[] = [];
    const ops: StoreOp[] = [];
    const seqs: number[] = [];
    const remembered: [string, number][] = [];
    for (const m of msgs) {
      if (target.settings.requiresDuplicateDetection) {
        const key = dedupKey(m.messageId);
        const until = target.dedup.get(key);
        if (until !== undefined && until > now) {
          seqs.push(0);
          continue;
        }
        const end = now + target.settings.duplicateDetectionWindowMs;
        target.dedup.set(key, end);
        remembered.push([key, end]);
        ops.push({ op: 'dedup', qid: target.id, key, until: end });
      }
      const before = placements.length;
      const topicSeq = this.router.route(target, m, now, placements);
      seqs.push(topicSeq ?? placements[before]?.row.seq ?? 0);
    }
    if (!remembered.length && !placements.length) return seqs;
    const touched = new Set(placements.map((p) => p.q));
    ops.push(...this.placementOps(placements));
    if (target.kind === 'topic') ops.push({ op: 'nextSeq', qid: target.id, nextSeq: target.nextSeq });
    if (target.settings.requiresDuplicateDetection && ++target.dedupSincePrune >= 1024) ops.push(...this.pruneDedup(target, now));
    try {
      await this.persist(ops);
    } catch (err) {
      // Not stored, so not seen: a retry of the same message-id must not be dropped as a duplicate.
      for (const [key, end] of remembered) if (target.dedup.get(key) === end) target.dedup.delete(key);
      throw err;
    }
    // Visible only once durable: a consumer never sees a message the sender was not told is accepted.
    for (const p of placements) this.enqueue(p.q, p.row);
    this.counters.sent += msgs.length;
    this.events.emit('sent', { entity: target.path, count: msgs.length, ms: performance.now() - t0 });
    for (const q of touched) this.pump(q);
    return seqs;
  }

  // Service Bus rejects sends once the entity (with its dead-letter subqueue) is at MaxSizeInMegabytes.
  private checkQuota(q: QueueState, msgs: IncomingMessage[]): void {
    const used = q.bytes + (q.dlq?.bytes ?? 0);
    const incoming = msgs.reduce((n, m) => n + m.body.length, 0);
    if (used + incoming > q.settings.maxSizeBytes) {
      throw new BrokerError(
        'QuotaExceeded',
        `The maximum entity size has been reached or exceeded for Queue: '${q.path}'. Size of entity in bytes:${used}, Max entity size in bytes:${q.settings.maxSizeBytes}.`,
      );
    }
  }



  /** Attaches a receiver to a queue or dead-letter queue path. */
  attach(path: string, consumer: Consumer): ConsumerHandle {
    this.assertRunning();
    const q = this.entities.forReceive(path);
    if (q.sessionful && consumer.sessionId === undefined) {
      // "It is not possible for an entity that requires sessions to create a non-sessionful message receiver."
      throw new BrokerError('InvalidOperation', `The entity '${q.path}' requires sessions; accept a session to receive from it.`);
    }
    q.consumers.push(consumer);
    return {
      pump: () => this.pump(q),
      pending: () => this.reserved.get(consumer) ?? 0,
      detach: () => {
        const i = q.consumers.indexOf(consumer);
        if (i >= 0) q.consumers.splice(i, 1);
        this.consumerGone(q, consumer);
      },
    };
  }

  /** Settles a peek-locked message by lock token; fails with LockLost if the lock is not current. */
  async settle(token: string, s: Settlement, entityPath?: string): Promise<void> {
    const t0 = performance.now();
    this.assertRunning();
    const { q, row } = this.currentLock(token, entityPath);
    await this.settleLocked(q, row, token, s);
    this.events.emit('settled', { entity: q.path, kind: s.kind, ms: performance.now() - t0 });
  }

  private async settleLocked(q: QueueState, row: MessageRow, token: string, s: Settlement): Promise<void> {
    // Refuse before releasing: a rejected settlement must leave the holder's lock intact.
    if (s.kind === 'deadLetter' && !q.dlq) {
      throw new BrokerError('InvalidOperation', `Cannot dead-letter a message in '${q.path}'.`);
    }
    const prevLock = row.lock;
    this.lockRules.release(token);
    switch (s.kind) {
      case 'complete':
        q.removeRow(row.seq);
        this.counters.completed++;
        try {
          await this.persist([{ op: 'delete', qid: q.id, seq: row.seq }]);
        } catch (err) {
          // Not durable, so not completed: the message stays under the holder's lock (which may retry) and
          // comes back when the lock ends, as the store still has it.
          this.counters.completed--;
          if (!q.rows.has(row.seq) && prevLock) {
            q.addRow(row);
            this.lockRules.hold(token, q.id, row.seq);
            this.scheduler.add({ at: prevLock.until, kind: 'lock', qid: q.id, seq: row.seq, token });
          }
          throw err;
        }
        return;
      case 'abandon':
        mergeProps(row, s.props);
        this.counters.abandoned++;
        return this.lockEnded(q, row);
      case 'defer':
        mergeProps(row, s.props);
        if (q.kind === 'deadletter') uncountDelivery(row);
        q.setState(row, 'deferred');
        row.deferred = true;
        delete row.lock;
        await this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]);
        return;
      case 'deadLetter':
        // Dead-lettering is the receiver's decision, not a failed delivery: the attempt it ends is not counted
        // (a message received once and dead-lettered shows delivery count 0 in the dead-letter queue).
        uncountDelivery(row);
        return this.deadLetter(q, row, { ...s.props, ...reasonProps(s.reason, s.description) });
    }
  }

  /** Extends a lock by the entity's LockDuration; resolves with the new locked-until (epoch ms). */
  async renewLock(token: string, entityPath?: string): Promise<number> {
    this.assertRunning();
    const { q, row } = this.currentLock(token, entityPath);
    row.lock = { token, until: this.clock.now() + q.settings.lockDurationMs };
    this.scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token });
    this.counters.renewed++;
    this.events.emit('renewed', { entity: q.path });
    await this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]);
    return row.lock.until;
  }

  /** Offers ready messages to the queue's consumers, round-robin, within their credit. */
  protected pump(q: QueueState): void {
    if (this.journal.stopping) return;
    if (q.sessionful) return this.pumpSessions(q);
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
  // On a session-enabled entity each receiver holds one session and takes only that session's messages, in
  // order; a session's messages are never offered to anyone else while its lock is held.
  private pumpSessions(q: QueueState): void {
    for (const c of q.consumers) {
      if (c.sessionId === undefined || !c.isOpen() || q.sessions.get(c.sessionId)?.holder !== c) continue;
      while (c.capacity() - (this.reserved.get(c) ?? 0) > 0) {
        const row = q.takeReady(c.sessionId);
        if (!row) break;
        if (row.expiresAt !== null && row.expiresAt <= this.clock.now()) {
          void this.expire(q, row).catch(() => undefined);
          continue;
        }
        if (c.receiveMode === 'peekLock') this.lockAndDeliver(q, row, c);
        else this.deleteAndDeliver(q, row, c);
      }
    }
    this.offerSessions(q);
  }

  // A consumer whose capacity was bounded by deliveries still in flight (not by credit) can take more once
  // they are out; nothing else would wake it, so pump again once per batch of completed deliveries.
  private readonly pumpQueued = new Set<QueueState>();
  private pumpSoon(q: QueueState): void {
    if (this.pumpQueued.has(q)) return;
    this.pumpQueued.add(q);
    queueMicrotask(() => {
      this.pumpQueued.delete(q);
      this.pump(q);
    });
  }

  /** A consumer detached (sessions release its session here). */
  protected consumerGone(q: QueueState, c: Consumer): void {
    void q;
    void c;
  }

  /** Grants waiting accept-next-session requests (implemented where sessions are). */
  protected offerSessions(q: QueueState): void {
    void q;
  }

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
    const token = this.takeLock(q, row, c.holder);
    const snapshot = cloneRow(row);
    this.reserve(c, 1);
    this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]).then(
      () => {
        this.reserve(c, -1);
        if (!c.isOpen()) return this.unlock(q, row, token);
        const body = this.store.readBody(q.id, row.seq);
        if (!body) return this.log.error({ entity: q.path, seq: row.seq }, 'stored body missing');
        this.counters.delivered++;
        c.deliver({ entityPath: q.path, row: snapshot, body });
        this.events.emit('delivered', { entity: q.path, deliveryCount: snapshot.deliveryCount });
        this.pumpSoon(q);
      },
      () => this.reserve(c, -1),
    );
  }

  /** Locks a row for LockDuration and counts the delivery; returns the new token. */
  private takeLock(q: QueueState, row: MessageRow, holder?: string): string {
    const token = randomUUID();
    q.setState(row, 'locked');
    row.deliveryCount++;
    const session = q.sessionful && row.sessionId !== undefined ? q.sessions.get(row.sessionId) : undefined;
    if (session?.isLocked(this.clock.now())) {
      // Locked by the session: the message lock lasts as long as the session lock (no deadline of its own).
      row.lock = { token, until: session.lockedUntil };
      this.lockRules.hold(token, q.id, row.seq, holder);
      return token;
    }
    row.lock = { token, until: this.clock.now() + q.settings.lockDurationMs };
    this.lockRules.hold(token, q.id, row.seq, holder);
    this.scheduler.add({ at: row.lock.until, kind: 'lock', qid: q.id, seq: row.seq, token });
    return token;
  }

  // The receiver vanished before its transfer went out: the attempt never reached a client, so it is not
  // counted (NATS' didNotDeliver) and the message is available again at once.
  private unlock(q: QueueState, row: MessageRow, token: string): void {
    if (row.state !== 'locked' || row.lock?.token !== token) return;
    this.lockRules.release(token);
    row.deliveryCount--;
    q.makeReady(row);
    void this.persist([{ op: 'put', qid: q.id, row: cloneRow(row) }]).catch(() => undefined);
    this.pump(q);
  }

  // Receive-and-delete is at-most-once: the message is deleted, then sent. If the receiver has gone by the
  // time the delete is durable, the message is put back rather than lost.
  private deleteAndDeliver(q: QueueState, row: MessageRow, c: Consumer): void {
    const body = this.store.readBody(q.id, row.seq);
    q.removeRow(row.seq);
    if (!body) return void this.log.error({ entity: q.path, seq: row.seq }, 'stored body missing');
    const snapshot = cloneRow(row);
    this.reserve(c, 1);
    this.persist([{ op: 'delete', qid: q.id, seq: row.seq }]).then(
      () => {
        this.reserve(c, -1);
        if (c.isOpen()) {
          this.counters.delivered++;
          this.counters.completed++;
          c.deliver({ entityPath: q.path, row: snapshot, body });
          this.events.emit('delivered', { entity: q.path, deliveryCount: snapshot.deliveryCount + 1 });
          return;
        }
        q.addRow(row);
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
          q.addRow(row);
          q.makeReady(row);
        }
      },
    );
  }

  /**
   * Peeks up to `count` messages from sequence number `from` on, in order, without locking: active, locked,
   * deferred and scheduled ones alike (Service Bus peek-message; docs/wire-contract.md, "$management operations").
   */
  peek(path: string, from: number, count: number, sessionId?: string): StoredMessage[] {
    this.assertRunning();
    const q = this.entities.forReceive(path);
    const out: StoredMessage[] = [];
    if (count <= 0) return out;
    // The store walks rows in sequence order; memory says which of them still exist and in what state (a
    // complete not yet committed is already gone here).
    for (const seq of this.store.seqsFrom(q.id, from)) {
      const row = q.rows.get(seq);
      if (!row || (sessionId !== undefined && row.sessionId !== sessionId)) continue;
      const body = this.store.readBody(q.id, seq);
      if (body) out.push({ row: cloneRow(row), body });
      if (out.length >= count) break;
    }
    return out;
  }

  /**
   * Fetches deferred messages by sequence number: under a new lock in peek-lock mode, deleted in
   * receive-and-delete mode. A number that is not a deferred message fails with MessageNotFound.
   */
  async receiveDeferred(path: string, seqs: number[], mode: ReceiveMode): Promise<StoredMessage[]> {
    this.assertRunning();
    const q = this.entities.forReceive(path);
    const now = this.clock.now();
    const rows = seqs.map((seq) => {
      const row = q.rows.get(seq);
      // "When a client tries to retrieve a deferred message, it's checked for expired condition and moved
      // to a dead-letter queue if it's already expired" (Service Bus message-deferral docs).
      if (row?.state === 'deferred' && row.expiresAt !== null && row.expiresAt <= now && q.kind !== 'deadletter') {
        void this.expire(q, row).catch(() => undefined);
      }
      if (!row || row.state !== 'deferred' || !q.rows.has(seq)) {
        throw new Err('MessageNotFound', `Failed to retrieve the deferred message with sequence number ${seq}.`);
      }
      return row;
    });
    const ops: StoreOp[] = [];
    const out: StoredMessage[] = [];
    for (const row of rows) {
      const body = this.store.readBody(q.id, row.seq)!;
      if (mode === 'receiveAndDelete') {
        q.removeRow(row.seq);
        ops.push({ op: 'delete', qid: q.id, seq: row.seq });
      } else {
        this.takeLock(q, row);
        ops.push({ op: 'put', qid: q.id, row: cloneRow(row) });
      }
      out.push({ row: cloneRow(row), body });
    }
    await this.persist(ops);
    return out;
  }

  /**
   * Cancels scheduled messages by the sequence numbers the send reported (for a topic, the topic's number,
   * which every subscription copy carries). An unknown number fails with MessageNotFound.
   */
  async cancelScheduled(path: string, seqs: number[]): Promise<void> {
    this.assertRunning();
    const target = this.entities.forSend(path);
    const found: [QueueState, number][] = [];
    for (const seq of seqs) {
      const hits: [QueueState, number][] =
        target.kind === 'topic'
          ? target.subscriptions.flatMap((sub) =>
              [...sub.rows.values()].filter((r) => r.topicSeq === seq && r.state === 'scheduled').map((r): [QueueState, number] => [sub, r.seq]),
            )
          : target.rows.get(seq)?.state === 'scheduled'
            ? [[target, seq]]
            : [];
      if (!hits.length) throw new Err('MessageNotFound', `The scheduled message with sequence number ${seq} was not found.`);
      found.push(...hits);
    }
    for (const [q, seq] of found) q.removeRow(seq);
    await this.persist(found.map(([q, seq]) => ({ op: 'delete' as const, qid: q.id, seq })));
  }
}
