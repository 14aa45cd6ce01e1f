// Sending (Service Bus "send"): checks, duplicate detection, routing, one durable write, then visibility.
// Decisions are made synchronously on the in-memory index; the store is told in the same turn and the sender is
// answered once the store has synced (docs/durability.md, "The durability barrier").

import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from '../runtime/context.js';
import { BrokerError, entityDisabled, messageTooLarge } from '../errors.js';
import type { QueueState } from '../indexes/queue-state.js';
import type { TopicState } from '../indexes/topic-state.js';
import type { Placement, Router } from './routing.js';
import { dedupKey } from '../indexes/rows.js';
import type { Transitions } from './transitions.js';
import type { Plan } from '../runtime/journal.js';
import type { IncomingMessage } from '../types.js';

/**
 * Sequence numbers reserved for the messages of one send before it is made (a schedule-message staged in a
 * transaction): `seqs[i]` is message i's number in `owner`, the entity `Router.numbering` named.
 */
export interface Reservation {
  owner: QueueState | TopicState;
  seqs: number[];
}

/** Accepts sends to queues and topics. */
/** Service Bus Premium's batch limit with large messages on (1 MB). */
const MAX_BATCH_BYTES = 1_048_576;

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
   * Largest batch transfer accepted, in bytes (advertised as com.microsoft:max-message-batch-size): the message
   * size, but at most 1 MB, as on Premium, where messages may be up to 100 MB but a batch stays within 1 MB.
   */
  get maxBatchSize(): number {
    return Math.min(this.maxMessageSize, MAX_BATCH_BYTES);
  }

  /**
   * Sends messages to a queue; resolves with their sequence numbers once they are on disk. With
   * RequiresDuplicateDetection, a message whose message-id was sent within DuplicateDetectionHistoryTimeWindow
   * is accepted and dropped (its number is reported as 0). With `reserved`, each message takes its reserved
   * number where it lands in the reserving entity (a transaction's schedule-message told its client so already).
   */
  async send(path: string, msgs: IncomingMessage[], reserved?: Reservation): Promise<number[]> {
    const target = this.check(path, msgs);
    const { seqs, plan } = this.sendPlan(target, msgs, reserved);
    return plan ? this.ctx.journal.run(plan) : seqs;
  }

  // The claim is the duplicate-detection entry: a second send of the same message-id in this window is dropped
  // while the first is being written. Nothing else is visible before the write is durable: a consumer never sees
  // a message the sender was not told is accepted. If the write fails, the entries are forgotten (not stored, so
  // not seen: a retry of the same message-id must not be dropped as a duplicate). Sequence numbers taken stay
  // taken: Service Bus numbers are unique and increasing, not gap-free.
  /**
   * The plan of a send: each message routed to where it lands, the rows, bodies, marks and dedup entries to store,
   * and their enqueue once durable; `plan` is null when nothing is to be written (every message a duplicate).
   */
  private sendPlan(target: QueueState | TopicState, msgs: IncomingMessage[], reserved?: Reservation): { seqs: number[]; plan: Plan<number[]> | null } {
    const { clock, counters, events } = this.ctx;
    const t0 = performance.now();
    const now = clock.now();
    const placements: Placement[] = [];
    const ops: StoreOp[] = [];
    const seqs: number[] = [];
    const remembered: [string, number][] = [];
    for (const [i, m] of msgs.entries()) {
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
      const seq = reserved?.seqs[i];
      const topicSeq = this.router.route(target, m, now, placements, 0, seq === undefined ? undefined : { owner: reserved!.owner, seq });
      seqs.push(topicSeq ?? placements[before]?.row.seq ?? 0);
    }
    if (!remembered.length && !placements.length) return { seqs, plan: null };
    ops.push(...this.transitions.placementOps(placements));
    // The reserving entity's mark goes into the same write, so after a restart its numbering resumes above every
    // reserved number this commit stored (the entity still in service; one deleted meanwhile has no mark to keep).
    if (reserved && reserved.owner !== target && this.live(reserved.owner)) {
      ops.push({ op: 'nextSeq', qid: reserved.owner.id, nextSeq: reserved.owner.nextSeq });
    }
    if (target.settings.requiresDuplicateDetection) {
      for (const key of target.dedup.prune(now)) ops.push({ op: 'undedup', qid: target.id, key });
    }
    const plan: Plan<number[]> = {
      ops,
      applied: () => {
        for (const p of placements) this.transitions.enqueue(p.q, p.row);
        counters.sent += msgs.length;
        events.emit('sent', { entity: target.path, count: msgs.length, ms: performance.now() - t0 });
        for (const q of new Set(placements.map((p) => p.q))) this.pump(q);
        return seqs;
      },
      undo: () => {
        for (const [key, end] of remembered) target.dedup.forget(key, end);
      },
    };
    return { seqs, plan };
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
    this.checkQuota(target, msgs);
    if (target.kind !== 'topic') {
      if (target.sessionful && msgs.some((m) => !m.sessionId)) {
        throw new BrokerError(
          'InvalidOperation',
          `The SessionId was not set on a message, and it cannot be sent to the entity '${target.path}'. Entities that have session support enabled can only receive messages that have the SessionId set.`,
        );
      }
    }
    return target;
  }

  /**
   * Checks a send of `msgs` to `path` and reserves their sequence numbers now, for a send made later (a
   * schedule-message staged in a transaction, whose reply names the numbers before the commit). The numbers are
   * taken from the entity's counter at once, so nothing else in this process can be given them, whether or not
   * the send is ever made: Service Bus sequence numbers are unique and increasing, not gap-free.
   */
  reserve(path: string, msgs: IncomingMessage[]): Reservation {
    const owner = this.router.numbering(this.check(path, msgs));
    return { owner, seqs: msgs.map(() => owner.nextSeq++) };
  }

  private live(e: QueueState | TopicState): boolean {
    try {
      return this.ctx.entities.forSend(e.path) === e;
    } catch {
      return false;
    }
  }

  /**
   * Service Bus rejects sends once the entity (with its dead-letter subqueue) is at MaxSizeInMegabytes. A topic's
   * size is what its subscriptions hold (each keeps its own copy: "a large message sent to a topic is counted X + 1
   * times, where X is the number of subscriptions", quotas docs), so a send is counted once per subscription it may
   * reach; which ones keep it is decided by their rules only later, so the check assumes every one does and a topic
   * never holds more than its size.
   */
  private checkQuota(target: QueueState | TopicState, msgs: IncomingMessage[]): void {
    const subs = target.kind === 'topic' ? target.subscriptions : [target];
    const used = subs.reduce((n, q) => n + q.bytes + (q.dlq?.bytes ?? 0), 0);
    const max = target.settings.maxSizeBytes;
    const incoming = msgs.reduce((n, m) => n + m.body.length, 0) * Math.max(1, subs.length);
    if (used + incoming > max) {
      const kind = target.kind === 'topic' ? 'Topic' : 'Queue';
      throw new BrokerError(
        'QuotaExceeded',
        `The maximum entity size has been reached or exceeded for ${kind}: '${target.path}'. Size of entity in bytes:${used}, Max entity size in bytes:${max}.`,
      );
    }
  }
}

