// Local transactions (AMQP 1.0 part 4, as Service Bus implements them): a coordinator declares a transaction,
// sends and settlements carrying its id are staged, and a discharge commits them all or none. Service Bus's rules:
// - until the commit, staged sends are invisible and staged settlements change nothing (the message stays locked
//   by its holder); a rollback forgets the staged work, locks included, which run on to their expiry;
// - a transaction holds at most 100 operations (each message of a batch counts), and its operations address one
//   top-level entity (a queue, or a topic with its subscriptions) unless cross-entity transactions are enabled;
//   send-via is how work on other entities joins: sent via the entity the transaction works on, forwarded on commit;
// - a schedule-message answers with the sequence numbers before the commit: they are reserved when it is staged
//   (taken from the entity's counter, so a rollback leaves a gap, never a number used twice) and the commit
//   stores the scheduled messages under exactly those numbers;
// - a transaction still open after 2 minutes, or whose connection or coordinator link closes, is rolled back.
// The commit is one store write: every operation is checked first, then all of them are issued in one event-loop
// task, which the Journal's group commit turns into one atomic, synced write (docs/durability.md, "Transactions").

import { randomBytes } from 'node:crypto';
import type { BrokerContext } from '../runtime/context.js';
import { BrokerError, transactionRolledBack, transactionTimedOut, transactionUnknown } from '../errors.js';
import { entityKey } from '../catalog/entities.js';
import type { LockManager } from './locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { ignoreTtl, newRow } from '../indexes/rows.js';
import type { SequenceOps } from './by-sequence.js';
import type { Reservation, Sender } from './send.js';
import type { Settlements } from './settlement.js';
import type { Transitions } from './transitions.js';
import type { IncomingMessage, Settlement } from '../types.js';
import type { Plan } from '../runtime/journal.js';

/** Operations one transaction may hold (Service Bus quota). */
export const MAX_TRANSACTION_OPERATIONS = 100;
/** How long a transaction may stay open before it is rolled back (Service Bus: 2 minutes). */
export const TRANSACTION_TIMEOUT_MS = 120_000;

/** One staged piece of transactional work. */
export type TxnOp =
  | { kind: 'send'; path: string; msgs: IncomingMessage[]; destination?: string }
  | { kind: 'settle'; token: string; settlement: Settlement; entityPath?: string }
  | { kind: 'cancelScheduled'; path: string; seqs: number[] }
  /** A schedule-message: `stage` fills `seqs` with the reserved sequence numbers the reply reports. */
  | { kind: 'schedule'; path: string; msgs: IncomingMessage[]; seqs: number[]; reserved?: Reservation };

/** Who declared a transaction: its connection, and the coordinator link on it. */
export interface TxnOwner {
  connection: string;
  link: string;
  /** True while its coordinator is on a cross-entity session (a Service Bus transaction group): work may span entities. */
  readonly crossEntity?: boolean;
}

interface Txn {
  id: string;
  owner: TxnOwner;
  /** The top-level entity its first operation addressed (lower case). */
  entity?: string;
  ops: TxnOp[];
  count: number;
  /** Why a commit must fail (an operation was refused); the discharge then rolls back. */
  doomed?: string;
  timedOut: boolean;
  cancelTimer: () => void;
}

/** Declares, stages into, commits and rolls back local transactions. */
export class Transactions {
  private readonly open = new Map<string, Txn>();

  constructor(
    private readonly ctx: BrokerContext,
    private readonly sender: Sender,
    private readonly settlements: Settlements,
    private readonly bySequence: SequenceOps,
    private readonly locks: LockManager,
    private readonly transitions: Transitions,
    private readonly pump: (q: QueueState) => void,
    private readonly timeoutMs = TRANSACTION_TIMEOUT_MS,
  ) {}

  /** Transactions declared and not yet discharged (for tests and metrics). */
  get size(): number {
    return this.open.size;
  }

  /** Declares a transaction for `owner`; returns its id (the txn-id, as hex of 16 random bytes). */
  declare(owner: TxnOwner): string {
    this.ctx.journal.assertRunning();
    const id = randomBytes(16).toString('hex');
    const timer = this.ctx.clock.setTimer(() => this.timeout(id), this.timeoutMs);
    this.open.set(id, { id, owner, ops: [], count: 0, timedOut: false, cancelTimer: () => timer.cancel() });
    return id;
  }

  /**
   * Stages one operation. Refusals (unknown id, too many operations, a second entity, a message too large) are
   * thrown; apart from an unknown id, a refusal also dooms the transaction, so its commit rolls back.
   */
  stage(id: string, connection: string, op: TxnOp): void {
    const txn = this.find(id, connection);
    if (txn.timedOut) throw transactionTimedOut(id, this.timeoutMs);
    try {
      this.admit(txn, op);
      if (op.kind === 'schedule') {
        op.reserved = this.sender.reserve(op.path, op.msgs);
        op.seqs = op.reserved.seqs;
      }
    } catch (err) {
      txn.doomed ??= err instanceof Error ? err.message : String(err);
      throw err;
    }
    txn.ops.push(op);
  }

  /**
   * Ends a transaction: with `fail` it is rolled back; otherwise every operation is checked and then all are
   * committed in one store write, resolving once it is synced. A commit that cannot be made rolls back and
   * rejects with TransactionRolledBack (amqp:transaction:rollback).
   */
  async discharge(id: string, connection: string, fail: boolean): Promise<void> {
    const txn = this.find(id, connection);
    this.end(txn);
    if (txn.timedOut) throw transactionTimedOut(id, this.timeoutMs);
    if (fail) return;
    if (txn.doomed) throw transactionRolledBack(id, txn.doomed);
    try {
      this.checkAll(txn.ops);
    } catch (err) {
      throw transactionRolledBack(id, err instanceof Error ? err.message : String(err));
    }
    await this.apply(txn.ops);
  }

  /** Rolls back every transaction of a connection (or, given `link`, of one coordinator link) that closed. */
  rollbackOwner(connection: string, link?: string): number {
    let n = 0;
    for (const txn of [...this.open.values()]) {
      if (txn.owner.connection !== connection || (link !== undefined && txn.owner.link !== link)) continue;
      this.end(txn);
      n++;
    }
    if (n) this.ctx.log.debug({ connection, link, rolledBack: n }, 'open transactions rolled back');
    return n;
  }

  /**
   * Sends `msgs` through the via entity `via` to `destination` now (a send-via outside a transaction): the
   * destination receives them, or, if it cannot, the via entity's transfer dead-letter queue does.
   */
  async sendVia(via: string, destination: string, msgs: IncomingMessage[]): Promise<void> {
    const op: TxnOp = { kind: 'send', path: via, msgs, destination };
    this.checkAll([op]);
    await this.apply([op]);
  }

  private find(id: string, connection: string): Txn {
    const txn = this.open.get(id);
    // Service Bus: a transaction cannot span connections; on another connection the id means nothing.
    if (!txn || txn.owner.connection !== connection) throw transactionUnknown(id);
    return txn;
  }

  private end(txn: Txn): void {
    txn.cancelTimer();
    this.open.delete(txn.id);
  }

  // The timed-out transaction's work is dropped now; its id stays known until discharged (or its connection goes)
  // so the discharge learns why, with amqp:transaction:timeout.
  private timeout(id: string): void {
    const txn = this.open.get(id);
    if (!txn) return;
    txn.timedOut = true;
    txn.ops = [];
    this.ctx.log.info({ txn: id, afterMs: this.timeoutMs }, 'transaction timed out; rolled back');
  }

  private admit(txn: Txn, op: TxnOp): void {
    const weight = op.kind === 'send' || op.kind === 'schedule' ? op.msgs.length : op.kind === 'cancelScheduled' ? op.seqs.length : 1;
    if (txn.count + weight > MAX_TRANSACTION_OPERATIONS) {
      throw new BrokerError(
        'QuotaExceeded',
        `Cannot have more than ${MAX_TRANSACTION_OPERATIONS} operations in a single transaction.`,
      );
    }
    const entity = topLevel(op.kind === 'settle' ? this.settledEntity(op) : op.path);
    if (txn.entity === undefined) txn.entity = entity;
    else if (txn.entity !== entity && !txn.owner.crossEntity && !this.ctx.config.broker.enableCrossEntityTransactions) {
      throw new BrokerError(
        'InvalidOperation',
        `Local transactions cannot span multiple top-level entities such as queue or topic; this one works on '${txn.entity}', not '${entity}'. Send via '${txn.entity}', or set Broker.EnableCrossEntityTransactions.`,
      );
    }
    txn.count += weight;
  }

  // The entity a settlement works on: where its locked message lives (a lock that is gone fails at commit).
  private settledEntity(op: Extract<TxnOp, { kind: 'settle' }>): string {
    try {
      return this.locks.current(op.token, op.entityPath).q.path;
    } catch {
      return op.entityPath ?? '';
    }
  }

  // Everything that could refuse an operation, checked before any is issued: a commit applies all or none.
  private checkAll(ops: TxnOp[]): void {
    this.ctx.journal.assertRunning();
    const tokens = new Set<string>();
    for (const op of ops) {
      if (op.kind === 'send') {
        if (op.destination === undefined) this.sender.check(op.path, op.msgs);
        else this.viaEntity(op.path);
        continue;
      }
      if (op.kind === 'schedule') {
        this.sender.check(op.path, op.msgs);
        continue;
      }
      if (op.kind === 'cancelScheduled') {
        for (const seq of op.seqs) {
          const key = `${topLevel(op.path)}#${seq}`;
          if (tokens.has(key)) throw new BrokerError('InvalidOperation', `The transaction cancels scheduled message ${seq} twice.`);
          tokens.add(key);
        }
        this.bySequence.findScheduled(op.path, op.seqs);
        continue;
      }
      if (tokens.has(op.token)) throw new BrokerError('InvalidOperation', 'The transaction settles one message twice.');
      tokens.add(op.token);
      // A lapsed holder's settle fails the commit (MessageLockLost, as outside a transaction); the history records
      // it as late, as Settlements.settle does.
      if (!this.locks.find(op.token)) this.ctx.history.late(op.token, op.settlement.kind);
      const { q } = this.locks.current(op.token, op.entityPath);
      if (op.settlement.kind === 'deadLetter' && !q.dlq) {
        throw new BrokerError('InvalidOperation', `Cannot dead-letter a message in '${q.path}'.`);
      }
    }
  }

  // Every operation is issued in this one synchronous pass: each plan reaches Journal.run before the microtask
  // that flushes the batch, so the store receives them as one atomic write with one sync.
  private async apply(ops: TxnOp[]): Promise<void> {
    const work: Promise<unknown>[] = [];
    for (const op of ops) {
      if (op.kind === 'settle') work.push(this.settlements.settle(op.token, op.settlement, op.entityPath));
      else if (op.kind === 'cancelScheduled') work.push(this.bySequence.cancelScheduled(op.path, op.seqs));
      else if (op.kind === 'schedule') work.push(this.sender.send(op.path, op.msgs, op.reserved));
      else if (op.destination === undefined) work.push(this.sender.send(op.path, op.msgs));
      else work.push(...this.forward(op.path, op.destination, op.msgs));
    }
    const results = await Promise.allSettled(work);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  // Send-via: each message goes to its destination, or, when the destination refuses it (missing, disabled, too
  // large, full, no session id), to the via entity's transfer dead-letter queue with the refusal as its reason.
  private forward(via: string, destination: string, msgs: IncomingMessage[]): Promise<unknown>[] {
    const out: Promise<unknown>[] = [];
    const refused: [IncomingMessage, BrokerError | Error][] = [];
    const accepted: IncomingMessage[] = [];
    for (const m of msgs) {
      try {
        this.sender.check(destination, [m]);
        accepted.push(m);
      } catch (err) {
        refused.push([m, err as Error]);
      }
    }
    if (accepted.length) out.push(this.sender.send(destination, accepted));
    if (refused.length) out.push(this.transferDeadLetter(this.viaEntity(via), refused));
    return out;
  }

  /** The entity a send-via link sends through: a queue or a subscription (not a topic or a dead-letter queue). */
  viaEntity(via: string): QueueState {
    if (this.ctx.entities.topicEntry(via)) {
      throw new BrokerError('InvalidOperation', `Cannot send via the topic '${via}'; send via a queue or a subscription.`);
    }
    const q = this.ctx.entities.forReceive(via);
    if (!q.tdlq) throw new BrokerError('InvalidOperation', `Cannot send via '${q.path}'; send via its queue or subscription.`);
    return q;
  }

  private transferDeadLetter(via: QueueState, refused: [IncomingMessage, Error][]): Promise<void> {
    return this.ctx.journal.run(this.transferDeadLetterPlan(via, refused));
  }

  // Nothing is claimed: the rows are new, under numbers taken from the via entity (a failed write leaves a gap,
  // never a number used twice); they become visible in its transfer dead-letter queue once durable.
  /** The plan that stores messages refused by their send-via destination in the via entity's transfer DLQ. */
  private transferDeadLetterPlan(via: QueueState, refused: [IncomingMessage, Error][]): Plan {
    const { clock, counters, events } = this.ctx;
    const tdlq = via.tdlq!;
    const now = clock.now();
    const placements = refused.map(([m, err]) => {
      const row = newRow(via, m, via.nextSeq++, now);
      ignoreTtl(row);
      row.state = 'active';
      delete row.scheduledAt;
      const reason = err instanceof BrokerError ? TRANSFER_REASONS[err.code] ?? err.code : 'TransferFailed';
      row.props = { ...(row.props ?? {}), DeadLetterReason: reason, DeadLetterErrorDescription: err.message };
      return { q: tdlq, row, body: m.body };
    });
    return {
      ops: this.transitions.placementOps(placements),
      applied: () => {
        for (const p of placements) {
          this.transitions.enqueue(p.q, p.row);
          counters.deadLettered++;
          events.emit('deadLettered', { entity: tdlq.path, reason: String(p.row.props!.DeadLetterReason) });
        }
        this.pump(tdlq);
      },
    };
  }
}

// The DeadLetterReason a message refused by its send-via destination carries: Service Bus's exception names.
const TRANSFER_REASONS: Partial<Record<string, string>> = {
  EntityNotFound: 'MessagingEntityNotFound',
  EntityDisabled: 'MessagingEntityDisabled',
  QuotaExceeded: 'QuotaExceeded',
  MessageTooLarge: 'MessageSizeExceeded',
  InvalidOperation: 'InvalidOperation',
};

/** The top-level entity of a path: a queue, or the topic of a subscription (their subqueues included). */
export function topLevel(path: string): string {
  return entityKey(path).split('/')[0] ?? '';
}
