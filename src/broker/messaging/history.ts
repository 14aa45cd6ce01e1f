// The delivery history of every message (issue 39): each lock taken on it, who took it, its renewals, how it
// ended, the events that moved it, and the overlaps between a holder whose lock lapsed and the one after it.
// Nothing here writes on its own: the recorder watches every plan `Journal.run` executes and adds one 'history' op
// per message whose history the plan changes, into that same plan's write (no extra commit per message). Each op is
// the whole image (full images make replay idempotent). It reads what a plan does from its row ops (a put that
// takes or renews a lock, a put or delete that ends one, a delete and a put that move a message) and learns the
// why of a lock's end from the settlement that ends it (`ending`). Only the open attempt of a message locked now
// lives in memory (`open`; written when it ends, is renewed or overlaps), plus a bounded list of lapsed tokens so a
// late settle can be recognised.

import type { Store, StoreOp } from '../../store/store.js';
import { copyAttempt, copyHistory } from '../../store/history.js';
import type { Entities } from '../catalog/entities.js';
import type { Clock } from '../runtime/clock.js';
import { inBackground, type Journal, type PlanObserver } from '../runtime/journal.js';
import type { QueueState } from '../indexes/queue-state.js';
import {
  addAttempt, addEvent, addOverlap, attemptNumbered, capHistory, emptyHistory, historyPattern, HISTORY_MAX_LATE,
  HISTORY_MAX_NAME, HISTORY_MAX_RENEWALS, plainProps, type AttemptEnd, type AttemptHolder, type DeliveryAttempt, type DeliveryHistory,
  type LateAction, type MessageHistoryView,
} from '../indexes/history-image.js';

import type { Consumer, MessageRow, Settlement } from '../types.js';

/** Lapsed tokens remembered, so a holder's late settle or renewal is recognised (the oldest are forgotten first). */
export const LAPSED_TOKENS = 10_000;

/** How the next end of a message's lock comes about, told by whoever ends it before its plan runs. */
export interface AttemptEnding {
  how: AttemptEnd;
  reason?: string;
  description?: string;
  props?: Record<string, unknown>;
}

// The open attempt lives here until it ends: a receive that is completed writes no history at all (a complete
// deletes the row, and its history with it). It is written early only when something must survive a crash with it:
// a renewal, or an overlap found when it was taken. Its number is given when it is first put in an image: one more
// than the last stored attempt's (an open attempt is always the newest).
interface OpenAttempt {
  token: string;
  until: number;
  attempt: DeliveryAttempt;
  consumer?: Consumer;
  ending?: AttemptEnding;
}

interface Lapsed {
  qid: number;
  seq: number;
  n: number;
  /** Held weakly: a remembered lapse must not keep a closed link alive (one that was collected is not open). */
  consumer?: WeakRef<Consumer>;
  /** Set once the overlap this lapse caused was counted. */
  counted?: boolean;
}

/** Records delivery histories in the broker's plans; see the file comment. */
export class DeliveryRecorder implements PlanObserver {
  /** The open attempt of each message locked now, by `qid:seq`. */
  private readonly open = new Map<string, OpenAttempt>();
  /** Who each token being taken now is for (set by the deliverer just before the lock's plan runs). */
  private readonly takers = new Map<string, Consumer>();
  /** Lapsed tokens, oldest first (bounded by LAPSED_TOKENS). */
  private readonly lapsed = new Map<string, Lapsed>();
  /** The last lapse of each message, by `qid:seq`, while remembered. */
  private readonly lastLapse = new Map<string, string>();
  /** Images written and not yet committed: the next change builds on them, not on the store's older one. */
  private readonly pending = new Map<string, DeliveryHistory>();
  /** Overlaps counted since start, by entity path. */
  private readonly overlapsByEntity = new Map<string, number>();

  constructor(
    private readonly ctx: {
      readonly store: Store;
      readonly clock: Clock;
      readonly entities: Entities;
      readonly journal: Journal;
      /** Told of each overlap counted (the broker's `overlap` event). */
      readonly onOverlap: (entity: string, seq: number) => void;
    },
  ) {}

  /** Tells who a token being taken now is for (its plan runs next, in the same task). */
  takenBy(token: string, c: Consumer): void {
    this.takers.set(token, c);
  }

  /** Tells how the current lock of a message is about to end (a settlement, a session lock lost). */
  ending(qid: number, seq: number, e: AttemptEnding): void {
    const a = this.open.get(key(qid, seq));
    if (a) a.ending = e;
  }

  /**
   * A lock taken ahead of its receiver's credit is given back unsent (lock-ahead.ts): no client saw it, so its attempt
   * is dropped, unless it was already written (an overlap found when it was taken), which then ends as notDelivered.
   */
  withdraw(qid: number, seq: number, token: string): void {
    const k = key(qid, seq);
    const a = this.open.get(k);
    if (!a || a.token !== token) return;
    if (a.attempt.n) a.ending = { how: 'notDelivered' };
    else this.open.delete(k);
  }

  /** A lock taken ahead changed hands before it was sent (lock-ahead.ts): its attempt is the new receiver's. */
  reassigned(qid: number, seq: number, token: string, c: Consumer): void {
    const a = this.open.get(key(qid, seq));
    if (!a || a.token !== token) return;
    a.consumer = c;
    if (c.client) a.attempt.holder = trimHolder(c.client);
    else delete a.attempt.holder;
  }

  /** A lock taken ahead went out now, its locked-until cut to `until` (locks.ts, handOver): its attempt starts now. */
  handedOver(qid: number, seq: number, token: string, until: number): void {
    const a = this.open.get(key(qid, seq));
    if (!a || a.token !== token) return;
    a.until = until;
    a.attempt.lockedAt = this.ctx.clock.now();
    a.attempt.lockedUntil = until;
  }

  /** The ending of a settlement (abandon, defer, dead-letter, complete). */
  settling(qid: number, seq: number, s: Settlement): void {
    if (s.kind === 'complete') return this.ending(qid, seq, { how: 'completed' });
    const props = 'props' in s && s.props ? { props: plainProps(s.props) } : {};
    switch (s.kind) {
      case 'abandon':
        return this.ending(qid, seq, { how: s.released ? 'released' : 'abandoned', ...props });
      case 'defer':
        return this.ending(qid, seq, { how: 'deferred', ...props });
      case 'deadLetter':
        return this.ending(qid, seq, {
          how: 'deadLettered',
          ...(s.reason !== undefined ? { reason: s.reason } : {}),
          ...(s.description !== undefined ? { description: s.description } : {}),
          ...props,
        });
    }
  }

  /** The history of a message as stored, with what is being written now; null if it has none. */
  read(qid: number, seq: number): DeliveryHistory | null {
    const k = key(qid, seq);
    // The store hands each reader its own copy; an image being written is shared with the plan, so it is copied.
    const p = this.pending.get(k);
    return p ? copyHistory(p) : (this.ctx.store.readHistory(qid, seq) ?? null);
  }

  /** A message's history as the ports show it; null when the message has none. */
  view(q: QueueState, seq: number): MessageHistoryView | null {
    const a = this.open.get(key(q.id, seq));
    const h = this.read(q.id, seq) ?? (a ? emptyHistory() : null);
    if (!h) return null;
    if (a) withOpen(h, a, false);
    return {
      entity: q.path,
      seq,
      lockedNow: this.open.has(key(q.id, seq)),
      deliveries: h.attempts,
      droppedDeliveries: h.dropped ?? 0,
      events: h.events,
      overlaps: h.overlaps,
      pattern: historyPattern(h),
    };
  }

  /** Overlaps counted since start, by entity path. */
  overlapCounts(): Record<string, number> {
    return Object.fromEntries(this.overlapsByEntity);
  }

  // A settle or renewal by a token that is no longer current. If the token lapsed (and was not given back), its
  // holder was still working after its lock ended: recorded on its attempt, and when someone else locked the
  // message meanwhile, an overlap. Written in a plan of its own: it is the one history change no row change carries.
  /** Records a settle or renewal refused with MessageLockLost (in the background: the refusal does not wait). */
  late(token: string, action: LateAction['action']): void {
    const ops = this.lateOps(token, action);
    if (ops.length) inBackground(this.ctx.journal.run({ ops }));
  }

  private lateOps(token: string, action: LateAction['action']): StoreOp[] {
    const l = this.lapsed.get(token);
    if (!l) return [];
    const now = this.ctx.clock.now();
    const q = this.ctx.entities.byId(l.qid);
    const h = this.read(l.qid, l.seq);
    const act: LateAction = { action, at: now };
    if (!q || !h) {
      // Completed (or removed) since: the history went with the message; the overlap is still counted once.
      if (q && !l.counted) this.overlapped(q, l);
      return [];
    }
    const a = attemptNumbered(h, l.n);
    if (a) a.late = [...(a.late ?? []), act].slice(-HISTORY_MAX_LATE);
    const current = this.open.get(key(l.qid, l.seq));
    if (current) withOpen(h, current, true);
    const later = h.attempts.find((x) => x.n > l.n);
    if (later) {
      const o = h.overlaps.find((x) => x.attempts[0] === l.n && x.attempts[1] === later.n);
      if (o) {
        o.until = now;
        o.late ??= act;
      } else addOverlap(h, { attempts: [l.n, later.n], from: later.lockedAt, until: now, late: act });
      if (!l.counted) this.overlapped(q, l);
    }
    return [this.image(l.qid, l.seq, h)];
  }

  /** Closes, at start-up, every attempt the store holds open: its holder's token died with the process. */
  recovered(q: QueueState, row: MessageRow, ops: StoreOp[]): void {
    if (!row.lock) return;
    const h = this.read(q.id, row.seq) ?? emptyHistory();
    // The locked-until the lock had is kept with the end, so a second restart under the same lock adds nothing.
    const end = { how: 'brokerRestarted' as const, at: this.ctx.clock.now(), lockedUntil: row.lock.until };
    const last = h.attempts[h.attempts.length - 1];
    if (last?.end?.how === 'brokerRestarted' && last.end.lockedUntil === row.lock.until) return;
    if (last && !last.end) last.end = end;
    else {
      // Never written (taken and not renewed): known only by its row. Who held it died with the process; it was
      // taken one LockDuration before its locked-until, as it was never renewed.
      const via = row.sessionId !== undefined ? 'session' : row.deferred ? 'receiveDeferred' : 'receive';
      addAttempt(h, { n: (last?.n ?? 0) + 1, via, lockedAt: row.lock.until - q.settings.lockDurationMs, lockedUntil: row.lock.until, end });
    }
    ops.push(this.image(q.id, row.seq, h));
  }

  /**
   * The history ops a plan's own ops imply (Journal's plan observer). Returns undefined when there are none, and
   * an undo for the memory it changed, run if the write fails.
   */
  derive(ops: StoreOp[]): { ops: StoreOp[]; undo: () => void } | undefined {
    let out: StoreOp[] | undefined;
    const undo: (() => void)[] = [];
    // A delete and a put of a new row with the same message id in one plan are one message moving (dead-letter,
    // redrive, resubmit, a dead-letter forward): its history travels with it. Only such plans read the store.
    const newRows = ops.some((op) => op.op === 'put' && op.body !== undefined);
    const moving = new Map<string, { from: QueueState; h: DeliveryHistory }>();
    for (const op of ops) {
      if (op.op === 'delete') {
        const h = this.closeOnDelete(op.qid, op.seq, newRows, undo);
        const from = this.ctx.entities.byId(op.qid);
        const messageId = h && from && this.ctx.store.readRow(op.qid, op.seq)?.messageId;
        if (h && from && messageId !== undefined) moving.set(messageId, { from, h });
      } else if (op.op === 'put') {
        const made = this.onPut(op.qid, op.row, op.body !== undefined, moving, undo);
        if (made) (out ??= []).push(made);
      } else if (op.op === 'clear') {
        this.forgetEntity(op.qid, undo);
      }
    }
    // A plan of history ops alone (a late settle, the restart's closing) needs telling when it settled, too.
    if (!out && !ops.some((op) => op.op === 'history')) return undefined;
    return { ops: out ?? [], undo: () => undo.forEach((f) => f()) };
  }

  /** Told when a plan's write settled: images written are now the store's (or, failed, dropped). */
  settled(ops: StoreOp[]): void {
    for (const op of ops) {
      if (op.op !== 'history') continue;
      const k = key(op.qid, op.seq);
      if (this.pending.get(k) === op.record) this.pending.delete(k);
    }
  }

  // An entity deleted: its histories go with it (the store's clear), and so do its open attempts here, or an entity
  // created again under the same path (and id) would find them.
  private forgetEntity(qid: number, undo: (() => void)[]): void {
    const prefix = `${qid}:`;
    for (const [k, a] of this.open) {
      if (!k.startsWith(prefix)) continue;
      this.open.delete(k);
      undo.push(() => this.open.set(k, a));
    }
  }

  // A delete ends the open attempt (completed, received-and-deleted, dead-lettered, purged). Its history goes with
  // the row (the store removes it); when the plan also stores a new row, it may be the message moving, so the
  // closed image is kept for that put.
  private closeOnDelete(qid: number, seq: number, mayMove: boolean, undo: (() => void)[]): DeliveryHistory | undefined {
    const k = key(qid, seq);
    const a = this.open.get(k);
    if (a) {
      this.open.delete(k);
      undo.push(() => this.open.set(k, a));
    }
    // A completed message does not move, even if the same plan sends one with its id (a transaction).
    if (!mayMove || a?.ending?.how === 'completed') return undefined;
    const h = this.read(qid, seq) ?? (a ? emptyHistory() : null);
    if (!h) return undefined;
    // Moved without a settlement saying why: its lock ran out (MaxDeliveryCount after an expiry, or a TTL).
    if (a) this.close(h, a, a.ending ?? { how: 'lockExpired' }, qid, seq);
    return h;
  }

  private onPut(
    qid: number,
    row: MessageRow,
    isNew: boolean,
    moving: Map<string, { from: QueueState; h: DeliveryHistory }>,
    undo: (() => void)[],
  ): StoreOp | undefined {
    const k = key(qid, row.seq);
    const now = this.ctx.clock.now();
    const a = this.open.get(k);
    if (isNew) {
      const m = moving.get(row.messageId);
      const q = this.ctx.entities.byId(qid);
      if (m && q) {
        moving.delete(row.messageId);
        addEvent(m.h, movedEvent(m.from, q, row, now));
        return this.image(qid, row.seq, m.h);
      }
      if (row.state === 'scheduled' && row.scheduledAt !== undefined) {
        const h = emptyHistory();
        addEvent(h, { kind: 'scheduled', at: now, detail: row.scheduledAt });
        return this.image(qid, row.seq, h);
      }
      return undefined;
    }
    if (row.state === 'locked' && row.lock) {
      if (a && a.token === row.lock.token) {
        if (a.until === row.lock.until) return undefined;
        const was = { until: a.until, attempt: copyAttempt(a.attempt) };
        a.until = row.lock.until;
        undo.push(() => Object.assign(a, was));
        return this.renewed(qid, row.seq, a, now);
      }
      return this.opened(qid, row, a, now, undo);
    }
    if (a) {
      this.open.delete(k);
      undo.push(() => this.open.set(k, a));
      const h = this.read(qid, row.seq) ?? emptyHistory();
      this.close(h, a, a.ending ?? { how: 'lockExpired' }, qid, row.seq);
      return this.image(qid, row.seq, h);
    }
    // A scheduled message falling due (it keeps scheduledAt once visible, as Service Bus reports it).
    if (row.state === 'active' && row.scheduledAt !== undefined) {
      const h = this.read(qid, row.seq);
      const last = h?.events[h.events.length - 1];
      if (h && last?.kind === 'scheduled') {
        addEvent(h, { kind: 'due', at: now });
        return this.image(qid, row.seq, h);
      }
    }
    return undefined;
  }

  // A lock taken: a new attempt, with who took it, kept in memory. If the message's previous attempt lapsed while
  // its holder's link is still open, that holder may still be working on it: the two attempts overlap from now,
  // which is written at once (with the new attempt) so that it survives a crash.
  private opened(qid: number, row: MessageRow, prev: OpenAttempt | undefined, now: number, undo: (() => void)[]): StoreOp | undefined {
    const k = key(qid, row.seq);
    const token = row.lock!.token;
    let h: DeliveryHistory | undefined;
    if (prev) {
      h = this.read(qid, row.seq) ?? emptyHistory();
      this.close(h, prev, prev.ending ?? { how: 'lockExpired' }, qid, row.seq);
    }
    const consumer = this.takers.get(token);
    this.takers.delete(token);
    const via = row.sessionId !== undefined ? 'session' : row.deferred ? 'receiveDeferred' : 'receive';
    const attempt: DeliveryAttempt = { n: 0, via, lockedAt: now, lockedUntil: row.lock!.until, ...(consumer?.client ? { holder: trimHolder(consumer.client) } : {}) };
    const a: OpenAttempt = { token, until: row.lock!.until, attempt, ...(consumer ? { consumer } : {}) };
    this.open.set(k, a);
    undo.push(() => (this.open.get(k) === a ? this.open.delete(k) : undefined));
    const lapsedToken = this.lastLapse.get(k);
    const l = lapsedToken === undefined ? undefined : this.lapsed.get(lapsedToken);
    const q = this.ctx.entities.byId(qid);
    if (l && q && !l.counted && l.consumer?.deref()?.isOpen()) {
      h ??= this.read(qid, row.seq) ?? emptyHistory();
      withOpen(h, a, true);
      addOverlap(h, { attempts: [l.n, a.attempt.n], from: now });
      this.overlapped(q, l);
    }
    return h && this.image(qid, row.seq, h);
  }

  private renewed(qid: number, seq: number, a: OpenAttempt, now: number): StoreOp {
    a.attempt.renewals = [...(a.attempt.renewals ?? []), now].slice(-HISTORY_MAX_RENEWALS);
    a.attempt.renewCount = (a.attempt.renewCount ?? 0) + 1;
    const h = this.read(qid, seq) ?? emptyHistory();
    withOpen(h, a, true);
    return this.image(qid, seq, h);
  }

  private close(h: DeliveryHistory, a: OpenAttempt, e: AttemptEnding, qid: number, seq: number): void {
    const at = withOpen(h, a, true);
    const now = this.ctx.clock.now();
    if (at && !at.end) {
      at.end = { how: e.how, at: now, ...(e.reason !== undefined ? { reason: e.reason } : {}), ...(e.description !== undefined ? { description: e.description } : {}), ...(e.props ? { props: e.props } : {}) };
      if (e.how === 'lockExpired' && a.consumer && !a.consumer.isOpen()) at.end.holderGone = true;
    }
    // An open overlap ends when the later attempt does.
    for (const o of h.overlaps) if (o.until === undefined && o.attempts[1] === at.n) o.until = now;
    if (e.how === 'lockExpired') this.remember(a.token, { qid, seq, n: at.n, ...(a.consumer ? { consumer: new WeakRef(a.consumer) } : {}) });
  }

  private remember(token: string, l: Lapsed): void {
    this.lapsed.set(token, l);
    this.lastLapse.set(key(l.qid, l.seq), token);
    if (this.lapsed.size <= LAPSED_TOKENS) return;
    const [oldest, o] = this.lapsed.entries().next().value as [string, Lapsed];
    this.lapsed.delete(oldest);
    const k = key(o.qid, o.seq);
    if (this.lastLapse.get(k) === oldest) this.lastLapse.delete(k);
  }

  private overlapped(q: QueueState, l: Lapsed): void {
    l.counted = true;
    this.overlapsByEntity.set(q.path, (this.overlapsByEntity.get(q.path) ?? 0) + 1);
    this.ctx.onOverlap(q.path, l.seq);
  }

  private image(qid: number, seq: number, h: DeliveryHistory): StoreOp {
    const record = capHistory(h);
    this.pending.set(key(qid, seq), record);
    return { op: 'history', qid, seq, record };
  }
}

function key(qid: number, seq: number): string {
  return `${qid}:${seq}`;
}

function trimHolder(h: AttemptHolder): AttemptHolder {
  const out: AttemptHolder = {};
  for (const k of ['container', 'connection', 'link', 'receiver'] as const) {
    const v = h[k];
    if (typeof v === 'string') out[k] = v.slice(0, HISTORY_MAX_NAME);
  }
  return out;
}

// The event a move records on the message's history, named by where it went.
function movedEvent(from: QueueState, to: QueueState, row: MessageRow, at: number): DeliveryHistory['events'][number] {
  if (to.kind === 'deadletter' || row.deadLetterSource !== undefined) return { kind: 'deadLettered', at, detail: String(row.props?.DeadLetterReason ?? '') };
  if (from.kind === 'deadletter') return { kind: 'redriven', at, detail: from.path };
  return { kind: 'resubmitted', at, detail: from.path };
}

// Puts the open attempt into image `h` (replacing an earlier written copy) and returns the copy in `h`. Its number,
// if it has none yet, is one more than the last attempt `h` holds; `keep` records that number on the open attempt
// (an image that will be written), where a mere view must not.
function withOpen(h: DeliveryHistory, a: OpenAttempt, keep: boolean): DeliveryAttempt {
  const n = a.attempt.n || (h.attempts[h.attempts.length - 1]?.n ?? 0) + 1;
  if (keep) a.attempt.n = n;
  const copy = copyAttempt(a.attempt);
  copy.n = n;
  const i = h.attempts.findIndex((x) => x.n === n);
  if (i >= 0) h.attempts[i] = copy;
  else addAttempt(h, copy);
  return copy;
}
