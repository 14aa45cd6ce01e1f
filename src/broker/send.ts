// Sending (Service Bus "send"): checks, duplicate detection, routing, one durable write, then visibility.
// Decisions are made synchronously on the in-memory index; the store is told in the same turn and the sender is
// answered once the store has synced (docs/durability.md, "The durability barrier").

import type { StoreOp } from '../store/store.js';
import type { BrokerContext } from './context.js';
import { BrokerError, entityDisabled, messageTooLarge } from './errors.js';
import type { QueueState } from './queue-state.js';
import type { TopicState } from './topic-state.js';
import type { Placement, Router } from './routing.js';
import { dedupKey } from './rows.js';
import type { Transitions } from './transitions.js';
import type { IncomingMessage } from './types.js';

/** Accepts sends to queues and topics. */
export class Sender {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly router: Router,
    private readonly transitions: Transitions,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** Largest message accepted, in bytes (advertised as max-message-size). */
  get maxMessageSize(): number {
    return this.ctx.config.broker.maxMessageSizeBytes;
  }

  /**
   * Sends messages to a queue; resolves with their sequence numbers once they are on disk. With
   * RequiresDuplicateDetection, a message whose message-id was sent within DuplicateDetectionHistoryTimeWindow
   * is accepted and dropped (its number is reported as 0).
   */
  async send(path: string, msgs: IncomingMessage[]): Promise<number[]> {
    const { journal, clock, counters, events } = this.ctx;
    const t0 = performance.now();
    const target = this.check(path, msgs);
    const now = clock.now();
    const placements: Placement[] = [];
    const ops: StoreOp[] = [];
    const seqs: number[] = [];
    const remembered: [string, number][] = [];
    for (const m of msgs) {
      if (target.settings.requiresDuplicateDetection) {
        const key = dedupKey(m.messageId);
        if (target.dedup.seen(key, now)) {
          seqs.push(0);
          continue;
        }
        const end = now + target.settings.duplicateDetectionWindowMs;
        target.dedup.remember(key, end);
        remembered.push([key, end]);
        ops.push({ op: 'dedup', qid: target.id, key, until: end });
      }
      const before = placements.length;
      const topicSeq = this.router.route(target, m, now, placements);
      seqs.push(topicSeq ?? placements[before]?.row.seq ?? 0);
    }
    if (!remembered.length && !placements.length) return seqs;
    const touched = new Set(placements.map((p) => p.q));
    ops.push(...this.transitions.placementOps(placements));
    if (target.kind === 'topic') ops.push({ op: 'nextSeq', qid: target.id, nextSeq: target.nextSeq });
    if (target.settings.requiresDuplicateDetection) {
      for (const key of target.dedup.prune(now)) ops.push({ op: 'undedup', qid: target.id, key });
    }
    try {
      await journal.persist(ops);
    } catch (err) {
      // Not stored, so not seen: a retry of the same message-id must not be dropped as a duplicate.
      for (const [key, end] of remembered) target.dedup.forget(key, end);
      throw err;
    }
    // Visible only once durable: a consumer never sees a message the sender was not told is accepted.
    for (const p of placements) this.transitions.enqueue(p.q, p.row);
    counters.sent += msgs.length;
    events.emit('sent', { entity: target.path, count: msgs.length, ms: performance.now() - t0 });
    for (const q of touched) this.pump(q);
    return seqs;
  }

  /**
   * Every refusal a send can meet before it is written (entity, status, sizes, quota, session id), without
   * changing anything: a transaction checks all its sends with this before it commits any of them.
   */
  check(path: string, msgs: IncomingMessage[]): QueueState | TopicState {
    this.ctx.journal.assertRunning();
    const target = this.ctx.entities.forSend(path);
    if (target.status === 'Disabled' || target.status === 'SendDisabled') throw entityDisabled(target.path);
    for (const m of msgs) {
      if (m.body.length > this.maxMessageSize) {
        throw messageTooLarge(m.body.length, this.maxMessageSize, target.path);
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
    return target;
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
}

