// What an operator does to chosen messages, by sequence number, from the admin API and the explorer: resubmit a
// copy, delete, or move to the dead-letter queue. Service Bus's own tools (the portal's explorer, the community
// Service Bus Explorer) do these by receiving the message and sending a copy, two steps a crash can split; here
// each batch is one atomic store write, so a failing step neither loses nor doubles a message. A message
// under a peek-lock belongs to its receiver and is skipped (its settlement would otherwise fail).

import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from '../runtime/context.js';
import { BrokerError, entityDisabled } from '../errors.js';
import type { QueueState } from '../indexes/queue-state.js';
import type { Placement, Router } from '../messaging/routing.js';
import { cloneRow, reasonProps } from '../indexes/rows.js';
import type { TopicState } from '../indexes/topic-state.js';
import { putBack, type Transitions } from '../messaging/transitions.js';
import type { Plan } from '../runtime/journal.js';
import type { IncomingMessage, MessageRow } from '../types.js';

/** What one action did: messages acted on, and chosen ones left alone (gone, or locked by a receiver). */
export interface ActionResult {
  count: number;
  skipped: number;
}

/** How to resubmit. */
export interface ResubmitOptions {
  /** Target queue or topic; default the message's queue, or the topic of a subscription (and of its DLQ). */
  to?: string;
  /** Keep the original where it is (the portal's plain "re-send"); by default it is removed in the same write. */
  keepOriginal?: boolean;
  /** Reads stored bytes back into a message to send (the protocol layer owns the encoding). */
  reparse: (body: Uint8Array) => IncomingMessage;
}

/** Messages written per store transaction. */
const BATCH = 200;

/** Resubmit, delete and dead-letter of chosen messages. */
export class MessageActions {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly router: Router,
    private readonly transitions: Transitions,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** Where a resubmit from `path` goes by default: its queue, or the topic for a subscription or its DLQ. */
  resubmitTarget(path: string): string {
    const q = this.ctx.entities.resolve(path);
    const owner = q.parent ?? q;
    if (owner.kind !== 'subscription') return owner.path;
    return this.topicOf(owner)?.path ?? owner.path;
  }

  /**
   * Sends a copy of each message to the target under a new sequence number (a topic routes it through its
   * rules again), and unless `keepOriginal`, removes the original in the same store write. The copy keeps body,
   * message-id, session and properties (settlement changes merged) without the dead-letter reason; it is
   * enqueued anew: fresh enqueued time, TTL and delivery count. Duplicate detection does not drop it (the
   * operator asked for it). Resolves with how many copies were sent.
   */
  async resubmit(path: string, seqs: number[], opts: ResubmitOptions): Promise<ActionResult> {
    const { journal, entities, store, clock, log } = this.ctx;
    journal.assertRunning();
    const q = entities.resolve(path);
    const target = entities.forSend(opts.to ?? this.resubmitTarget(path));
    if (target.status === 'Disabled' || target.status === 'SendDisabled') throw entityDisabled(target.path);
    const result: ActionResult = { count: 0, skipped: 0 };
    for (const chunk of chunks(seqs)) {
      const taken: MessageRow[] = [];
      const placements: Placement[] = [];
      const now = clock.now();
      for (const seq of chunk) {
        const row = q.rowAt(seq);
        const body = row && !row.lock ? store.readBody(q.id, seq) : undefined;
        if (!row || !body) {
          result.skipped++;
          continue;
        }
        this.router.route(target, copyOf(row, body, opts.reparse), now, placements);
        taken.push(row);
      }
      if (!taken.length) continue;
      await journal.run(this.resubmitPlan(q, taken, placements, !opts.keepOriginal));
      result.count += taken.length;
    }
    log.debug({ from: q.path, to: target.path, ...result }, 'resubmitted');
    return result;
  }

  /** Deletes the chosen messages (any state but locked), one store write per batch. */
  async delete(path: string, seqs: number[]): Promise<ActionResult> {
    const { journal, entities } = this.ctx;
    journal.assertRunning();
    const q = entities.resolve(path);
    const result: ActionResult = { count: 0, skipped: 0 };
    for (const chunk of chunks(seqs)) {
      const taken: MessageRow[] = [];
      for (const seq of chunk) {
        const row = q.rowAt(seq);
        if (!row || row.lock) {
          result.skipped++;
          continue;
        }
        q.removeRow(seq);
        taken.push(row);
      }
      if (!taken.length) continue;
      await journal.run({
        ops: taken.map((row) => ({ op: 'delete' as const, qid: q.id, seq: row.seq })),
        undo: () => this.restore(q, taken),
      });
      result.count += taken.length;
    }
    return result;
  }

  // The claim is the originals' removal (when they go): nothing else can take them while the write is in flight.
  // The copies become visible once durable; if the write fails, the originals are back as the store holds them and
  // no copy exists (their sequence numbers stay taken: unique and increasing, not gap-free).
  /** The plan of one resubmit batch: the originals out (unless kept), the copies in, in one write. */
  private resubmitPlan(q: QueueState, taken: MessageRow[], placements: Placement[], removeOriginals: boolean): Plan {
    const ops: StoreOp[] = [];
    if (removeOriginals) {
      for (const row of taken) {
        q.removeRow(row.seq);
        ops.push({ op: 'delete', qid: q.id, seq: row.seq });
      }
    }
    ops.push(...this.transitions.placementOps(placements));
    return {
      ops,
      applied: () => {
        for (const p of placements) this.transitions.enqueue(p.q, p.row);
        for (const t of new Set(placements.map((p) => p.q))) this.pump(t);
      },
      undo: () => {
        if (removeOriginals) this.restore(q, taken);
      },
    };
  }

  /**
   * Moves the chosen messages to the dead-letter queue with the reason and description given, as a receiver's
   * dead-letter settlement would (each one atomic; ForwardDeadLetteredMessagesTo is honoured). A message already
   * in a dead-letter queue cannot be dead-lettered again.
   */
  async deadLetter(path: string, seqs: number[], reason?: string, description?: string): Promise<ActionResult> {
    const { journal, entities } = this.ctx;
    journal.assertRunning();
    const q = entities.resolve(path);
    if (!q.dlq) throw new BrokerError('InvalidOperation', `'${q.path}' is a dead-letter queue: its messages cannot be dead-lettered again.`);
    const result: ActionResult = { count: 0, skipped: 0 };
    const props = reasonProps(reason, description);
    for (const chunk of chunks(seqs)) {
      const moves: Promise<void>[] = [];
      for (const seq of chunk) {
        const row = q.rowAt(seq);
        if (!row || row.lock) {
          result.skipped++;
          continue;
        }
        // A scheduled message leaves its schedule: its deadline finds no row here when it fires.
        moves.push(this.transitions.deadLetter(q, row, props));
      }
      await Promise.all(moves);
      result.count += moves.length;
    }
    return result;
  }

  // Puts rows back after a failed write, as the store holds them (with their deadlines).
  private restore(q: QueueState, rows: MessageRow[]): void {
    for (const row of rows) putBack(this.ctx, q, row, cloneRow(row));
  }

  private topicOf(sub: QueueState): TopicState | undefined {
    return this.ctx.entities.allTopics().find((t) => t.subscriptions.includes(sub));
  }
}

// The message to send for a stored row: its bytes read back, with the row's identity and settlement changes.
function copyOf(row: MessageRow, body: Uint8Array, reparse: (b: Uint8Array) => IncomingMessage): IncomingMessage {
  const m = reparse(body);
  m.messageId = row.messageId;
  if (row.sessionId !== undefined) m.sessionId = row.sessionId;
  const props = { ...(row.props ?? {}) };
  delete props.DeadLetterReason;
  delete props.DeadLetterErrorDescription;
  delete props.RuleName; // a subscription's rule action named the copy; the topic routes it again
  m.patch = { props };
  if (row.sys) m.patch.sys = { ...row.sys };
  return m;
}

function* chunks(seqs: number[]): Generator<number[]> {
  const unique = [...new Set(seqs)];
  for (let i = 0; i < unique.length; i += BATCH) yield unique.slice(i, i + BATCH);
}
