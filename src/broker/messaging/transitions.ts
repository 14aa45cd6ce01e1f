// The state changes of a stored message that do not depend on who asked for them: a committed message becomes
// visible (enqueue), a lock ends without a complete (abandon, expiry, a session lock lost), a message is
// dead-lettered or forwarded from its dead-letter queue, a message expires, a scheduled message falls due.
// Sends, settlements, the lock manager and the sessions all end in one of these.

import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from '../runtime/context.js';
import type { QueueState } from '../indexes/queue-state.js';
import type { Placement, Router } from './routing.js';
import { cloneRow, ignoreTtl, mergeProps, reasonProps, uncountDelivery } from '../indexes/rows.js';
import type { Deadline } from '../runtime/scheduler.js';
import type { IncomingMessage, MessageRow } from '../types.js';
import { inBackground } from '../runtime/journal.js';

/** The soonest a background transition whose write failed (an expiry, a schedule falling due) is tried again. */
export const STORE_RETRY_MS = 1_000;

/** Enqueue, lock end, dead-letter, forward and expiry: the transitions shared by every operation. */
export class Transitions {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly router: Router,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** Makes a committed row visible: ready now, or at its scheduled time; with its TTL deadline. */
  enqueue(q: QueueState, row: MessageRow): void {
    const { scheduler } = this.ctx;
    if (q.admitCold(row)) return; // a deep queue: it waits in the store until the window reaches it
    q.addRow(row);
    if (row.state === 'scheduled') {
      scheduler.add({ at: row.scheduledAt!, kind: 'scheduled', qid: q.id, seq: row.seq });
    } else {
      q.makeReady(row);
    }
    if (row.expiresAt !== null) scheduler.add({ at: row.expiresAt, kind: 'ttl', qid: q.id, seq: row.seq });
  }

  // A lock ended without a complete (abandon or expiry): one failed delivery. Service Bus dead-letters with
  // MaxDeliveryCountExceeded once the count reaches MaxDeliveryCount; otherwise the message returns under
  // its original sequence number, so it "pops back up at or near the front" of the queue.
  // In a dead-letter queue no delivery counts (Service Bus shows a message abandoned there with the count it
  // was dead-lettered with), so the attempt counted at lock time is taken back.
  // The claim is the lock itself: its token is already withdrawn (by the caller) and the row loses its lock, so
  // neither its deadline nor a settle can end it twice; it stays out of the ready set until the release is durable.
  /**
   * A lock ended without a complete: expire, dead-letter, re-defer or make the message available again. `was` is
   * the row as the store holds it (taken before the caller changed it), restored if the write fails.
   */
  async lockEnded(q: QueueState, row: MessageRow, was: MessageRow = cloneRow(row)): Promise<void> {
    if (q.kind === 'deadletter') uncountDelivery(row);
    if (q.hasExpired(row, this.ctx.clock.now())) {
      delete row.lock;
      return this.expire(q, row, was);
    }
    if (q.dlq && row.deliveryCount >= q.settings.maxDeliveryCount) {
      const reason = reasonProps(
        'MaxDeliveryCountExceeded',
        "Message couldn't be consumed after maximum delivery attempts.",
      );
      return this.deadLetter(q, row, reason, was);
    }
    delete row.lock;
    // A deferred message stays deferred: it can only be fetched again by its sequence number.
    const next = cloneRow(row);
    next.state = row.deferred ? 'deferred' : 'active';
    await this.ctx.journal.run({
      ops: [{ op: 'put', qid: q.id, row: next }],
      applied: () => {
        if (q.rows.get(row.seq) !== row || row.state !== 'locked' || row.lock) return; // purged or re-taken meanwhile
        if (row.deferred) q.setState(row, 'deferred');
        else {
          q.makeReady(row);
          this.pump(q);
        }
      },
      undo: () => this.putBack(q, row, was),
    });
  }

  // The message keeps its sequence number, body and delivery count; the reason travels as the DeadLetterReason
  // application property. The claim is the row's removal from its queue; it reaches the dead-letter queue only
  // once the move is durable, and goes back, as the store still holds it, if the move is not.
  /** Moves a message to the entity's dead-letter subqueue (or its ForwardDeadLetteredMessagesTo) in one atomic write. */
  async deadLetter(q: QueueState, row: MessageRow, props: Record<string, unknown>, was: MessageRow = cloneRow(row)): Promise<void> {
    const { store, counters, events, journal } = this.ctx;
    const dlq = q.dlq!;
    const body = store.readBody(q.id, row.seq);
    if (q.settings.forwardDeadLetteredMessagesTo && body) return this.forwardDeadLetter(q, row, props, body, was);
    q.removeRow(row.seq);
    const dead = cloneRow(row);
    mergeProps(dead, props);
    delete dead.lock;
    // In the dead-letter queue the message starts over as active: neither deferred nor scheduled there.
    delete dead.deferred;
    delete dead.scheduledAt;
    dead.state = 'active';
    ignoreTtl(dead);
    // It is stored with the body just read (the store drops the reference to a shared one with the original).
    delete dead.bodyRef;
    await journal.run({
      ops: [
        { op: 'delete', qid: q.id, seq: row.seq },
        { op: 'put', qid: dlq.id, row: cloneRow(dead), body },
      ],
      applied: () => {
        dlq.addRow(dead);
        counters.deadLettered++;
        events.emit('deadLettered', { entity: q.path, reason: String(dead.props?.DeadLetterReason ?? '') });
        if (!dlq.spill(dead)) dlq.makeReady(dead);
        this.pump(dlq);
      },
      undo: () => this.putBack(q, row, was),
    });
  }

  // ForwardDeadLetteredMessagesTo: a message dead-lettered here goes to the target entity instead of this
  // DLQ, in the same transaction as its removal, with its reason and x-opt-deadletter-source (the entity it
  // was dead-lettered in).
  private async forwardDeadLetter(
    q: QueueState,
    row: MessageRow,
    props: Record<string, unknown>,
    body: Uint8Array,
    was: MessageRow,
  ): Promise<void> {
    const { entities, clock, counters, events, journal } = this.ctx;
    const merged = { ...(row.props ?? {}) };
    for (const [k, v] of Object.entries(props)) if (v !== null && v !== undefined) merged[k] = v;
    const m: IncomingMessage = { body, messageId: row.messageId, patch: { props: merged, deadLetterSource: q.path } };
    if (row.sessionId !== undefined) m.sessionId = row.sessionId;
    if (row.sys) m.patch!.sys = row.sys;
    const out: Placement[] = [];
    this.router.route(entities.forSend(q.settings.forwardDeadLetteredMessagesTo!), m, clock.now(), out, 1);
    q.removeRow(row.seq);
    await journal.run({
      ops: [{ op: 'delete', qid: q.id, seq: row.seq }, ...this.placementOps(out)],
      applied: () => {
        counters.deadLettered++;
        events.emit('deadLettered', { entity: q.path, reason: String(merged.DeadLetterReason ?? '') });
        for (const p of out) this.enqueue(p.q, p.row);
        for (const p of out) this.pump(p.q);
      },
      undo: () => this.putBack(q, row, was),
    });
  }

  /** Restores a row claimed by a transition whose write failed to its stored state (see putBack below). */
  putBack(q: QueueState, row: MessageRow, was: MessageRow): void {
    putBack(this.ctx, q, row, was);
  }

  /**
   * Store ops for placements: each row with its body, and the sequence marks of the entities that numbered them
   * (the queues they landed in, and every topic routing took a number from). Copies of one topic send in two or
   * more entities share one stored body: one `sharedBody` op before their rows, each row naming it in `bodyRef`
   * and stored without a body of its own; the store frees it with the last copy.
   */
  placementOps(placements: Placement[]): StoreOp[] {
    const ops: StoreOp[] = [];
    const owners = new Set<QueueState>();
    const refKey = (p: Placement): string | undefined => p.shared && `${p.shared[0]}:${p.shared[1]}`;
    const sharers = new Map<string, number>();
    for (const key of placements.map(refKey)) if (key) sharers.set(key, (sharers.get(key) ?? 0) + 1);
    const written = new Set<string>();
    for (const p of placements) {
      const key = refKey(p);
      if (key && sharers.get(key)! >= 2) {
        if (!written.has(key)) {
          written.add(key);
          ops.push({ op: 'sharedBody', qid: p.shared![0], seq: p.shared![1], body: p.body });
        }
        p.row.bodyRef = p.shared!;
        ops.push({ op: 'put', qid: p.q.id, row: cloneRow(p.row) });
      } else {
        delete p.row.bodyRef;
        ops.push({ op: 'put', qid: p.q.id, row: cloneRow(p.row), body: p.body });
      }
      p.q.expectInsert(p.row);
      owners.add(this.seqOwner(p.q));
    }
    for (const q of owners) ops.push({ op: 'nextSeq', qid: q.id, nextSeq: q.nextSeq });
    for (const t of this.router.takeNumberedTopics()) ops.push({ op: 'nextSeq', qid: t.id, nextSeq: t.nextSeq });
    return ops;
  }

  // A dead-letter queue has no sequence of its own: its messages keep (or take) their parent's numbers.
  private seqOwner(q: QueueState): QueueState {
    return q.parent ?? q;
  }

  // TTL: an expired message is never delivered; with DeadLetteringOnMessageExpiration it goes to the DLQ
  // with reason TTLExpiredException, otherwise it is removed.
  /** Expires a message: dead-letters it (DeadLetteringOnMessageExpiration) or deletes it; `was` as for lockEnded. */
  async expire(q: QueueState, row: MessageRow, was: MessageRow = cloneRow(row)): Promise<void> {
    if (q.settings.deadLetteringOnMessageExpiration && q.dlq) {
      return this.deadLetter(q, row, reasonProps('TTLExpiredException', 'The message expired and was dead lettered.'), was);
    }
    q.removeRow(row.seq);
    await this.ctx.journal.run({ ops: [{ op: 'delete', qid: q.id, seq: row.seq }], undo: () => this.putBack(q, row, was) });
  }

  /** The `scheduled` deadline handler: a scheduled message becomes available. */
  onScheduledDeadline(d: Deadline): void {
    const found = this.rowOf(d);
    if (!found) return;
    const { q, row } = found;
    if (row.state !== 'scheduled') return;
    // scheduledAt stays on the row: Service Bus goes on reporting the message as scheduled once it is visible.
    // It becomes visible once that is durable; a failed write leaves it scheduled, its deadline re-armed.
    const next = cloneRow(row);
    next.state = 'active';
    inBackground(
      this.ctx.journal.run({
        ops: [{ op: 'put', qid: q.id, row: next }],
        applied: () => {
          if (q.rows.get(row.seq) !== row || row.state !== 'scheduled') return; // cancelled meanwhile
          q.makeReady(row);
          this.pump(q);
        },
        undo: () => this.putBack(q, row, cloneRow(row)),
      }),
    );
  }

  /** The `ttl` deadline handler: an available message whose time to live has passed expires. */
  onTtlDeadline(d: Deadline): void {
    const found = this.rowOf(d);
    if (!found) return;
    const { q, row } = found;
    // Deferred messages are checked for expiry only when fetched by sequence number (message-deferral docs).
    if (row.state === 'active' && q.hasExpired(row, this.ctx.clock.now())) {
      inBackground(this.expire(q, row));
    }
  }

  // Entries are never removed from the scheduler, so the row a deadline names may be gone by now.
  private rowOf(d: Deadline): { q: QueueState; row: MessageRow } | undefined {
    const q = this.ctx.entities.byId(d.qid);
    const row = q?.rows.get(d.seq);
    return q && row ? { q, row } : undefined;
  }
}

// A transition whose write failed leaves the message as the store still holds it (`was`): back in its queue,
// in its state, under its lock. Nothing waits for a failed background transition to be retried, so its
// deadline is armed again, no sooner than STORE_RETRY_MS (a failing store is not retried in a tight loop).
/** Restores a row claimed by a transition whose write failed to its stored state, and re-arms its deadlines. */
export function putBack(ctx: BrokerContext, q: QueueState, row: MessageRow, was: MessageRow): void {
  const { clock, scheduler } = ctx;
  const current = q.rows.get(row.seq);
  if (current && current !== row) return; // something else took its place since
  const state = row.state;
  for (const key of Object.keys(row) as (keyof MessageRow)[]) delete row[key];
  Object.assign(row, cloneRow(was));
  if (current) {
    row.state = state;
    q.setState(row, was.state);
  } else {
    q.addRow(row);
  }
  const retryAt = clock.now() + STORE_RETRY_MS;
  if (row.state === 'active') q.makeReady(row);
  if (row.lock) scheduler.add({ at: Math.max(row.lock.until, retryAt), kind: 'lock', qid: q.id, seq: row.seq, token: row.lock.token });
  if (row.state === 'scheduled') scheduler.add({ at: Math.max(row.scheduledAt!, retryAt), kind: 'scheduled', qid: q.id, seq: row.seq });
  if (row.expiresAt !== null) scheduler.add({ at: Math.max(row.expiresAt, retryAt), kind: 'ttl', qid: q.id, seq: row.seq });
}
