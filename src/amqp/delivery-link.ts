// A client's receiver on an entity: the broker's sending end. It is the broker's `Consumer`: it turns link
// credit, the AMQP session's room, the connection's outgoing budget and the unsettled cap into one credit figure
// and pushes it to the broker whenever it changes (the broker spends it without asking), sends each delivery with
// its lock token as the delivery tag, answers drain, and maps the client's dispositions onto complete / abandon /
// defer / dead-letter.

import type { ConsumerHandle, MessagingPort } from '../broker/messaging-port.js';
import type { Consumer, Delivery, ReceiveMode, Settlement } from '../broker/types.js';
import type { AttemptHolder } from '../broker/ports.js';
import type { Logger } from '../log/logger.js';
import { encodeDelivery, messageStateCode } from './codec.js';
import { sessionLockLost, toAmqpError } from './conditions.js';
import { lockTokenToTag, uuidStringToBytes } from './lock-token.js';
import { randomUUID } from 'node:crypto';
import { sessionCreditOf, type SessionCredit } from './link-credit.js';
import { amqpMessage, type RheaDelivery, type RheaSender } from './rhea-types.js';
import { answerDrainsAtZeroCredit, drainRequested, grantedLimit, scheduleProcessing } from './rhea.js';
import { sessionLockLost as sessionLockLostError } from '../broker/errors.js';
import { transactionalState, type TransactionalState } from './transaction-types.js';
import { gateOf, type OutboundGate } from './output.js';
import type { Typed } from './sections.js';
import { typedPatch } from './typed-patch.js';

/**
 * Unsettled peek-lock deliveries one receiver link may hold. Service Bus stops a link at 2,047 messages its
 * receiver has not settled (the SDK documents receiveMessages as "capped at 2047" in peek-lock mode): one
 * less than rhea's 2,048-slot delivery buffer, so the client always keeps a slot free. Further credit is
 * left unused until the receiver settles something; pre-settled (receive-and-delete) deliveries do not count.
 */
export const MAX_UNSETTLED_PER_LINK = 2047;

/** A delivery we answered, remembered so a retried identical disposition gets the same answer. */
type Answered = { state: unknown };

/** The broker's sending end of a receiver link on a queue or dead-letter queue. */
export class DeliveryLink implements Consumer {
  readonly receiveMode: ReceiveMode;
  private handle: ConsumerHandle | null = null;
  /** Delivery limit granted by the client: its delivery-count + link-credit at the last flow. */
  private limit = 0;
  /** Transfers handed to rhea (rhea's own counters move only when it writes them, a tick later). */
  private sent = 0;
  /** Deliveries the broker reserved for this link (their lock or delete is being committed), not handed over yet. */
  private reservations = 0;
  /** The credit figure the broker holds for this link: what we last pushed, less what it reserved since. */
  private pushed = 0;
  private draining = false;
  private refill = false;
  private open = true;
  /** Lock tokens of the peek-lock deliveries on this link that we have not settled yet, by delivery id. */
  private readonly tokens = new Map<number, string>();
  /** Peek-lock deliveries sent on this link and not yet settled by our answer to the client's disposition. */
  private unsettled = 0;
  private readonly answered = new WeakMap<RheaDelivery, Answered>();
  /** The connection's outgoing budget (output.ts): a socket that is not draining is offered nothing more. */
  private readonly gate: OutboundGate | undefined;
  /** The budget this link shares with the other links of its AMQP session (link-credit.ts). */
  private readonly session: SessionCredit;
  private readonly wake = (): void => this.refresh();

  constructor(
    private readonly sender: RheaSender,
    private readonly broker: MessagingPort,
    readonly path: string,
    private readonly log: Logger,
    /** Connection and link name, shown as the lock holder by the admin API. */
    readonly holder?: string,
    /** Whether the link's Listen right is in force now (admission.ts); nothing is offered while it is not. */
    private readonly admitted: () => boolean = () => true,
    /** Who the client is, recorded on each delivery attempt (issue 39). */
    readonly client?: AttemptHolder,
  ) {
    // snd-settle-mode 1 (settled) is how the SDK asks for receive-and-delete (docs/wire-contract.md, "Receiver links
    // and credit").
    this.receiveMode = sender.remote.attach.snd_settle_mode === 1 ? 'receiveAndDelete' : 'peekLock';
    // A drain must be answered even when the credit is already used up; rhea only answers while credit remains, and the
    // SDK detaches a link whose drain goes unanswered for 200 ms (docs/wire-contract.md, "Receiver links and credit").
    answerDrainsAtZeroCredit(sender);
    this.gate = gateOf(sender.connection);
    this.session = sessionCreditOf(sender.session);
  }

  /** Registers with the broker (after the attach reply is on its way). */
  start(): void {
    try {
      this.handle = this.broker.attach(this.path, this);
    } catch (err) {
      this.open = false;
      this.sender.close(toAmqpError(err));
      return;
    }
    // Gone while a session was being granted: give the session straight back.
    if (!this.open) return this.handle.detach();
    this.session.links.add(this);
    // Credit may have arrived in the same read as the attach.
    this.onFlow();
  }

  /**
   * Recomputes the link's credit figure and pushes it to the broker when it changed. Called on every event that can
   * move it: a flow, a drain answered, a disposition freeing the unsettled cap or a session slot, the session window
   * reopening, the outgoing budget reaching its mark or draining, the Listen right lapsing. `restate` pushes it even
   * unchanged (a flow frame: the broker offers messages again, as it did for every flow before credit was pushed).
   */
  refresh(restate = false): void {
    if (!this.handle) return;
    const n = this.figure();
    if (n === this.pushed && !restate) return;
    // Recorded before the push: a rise pumps the entity at once, and its reservations count down from here.
    this.pushed = n;
    if (n > 0) this.gate?.watch(this.wake);
    else this.gate?.unwatch(this.wake);
    this.handle.setCredit(n);
  }

  // How many more deliveries the link can take now: link credit and the unsettled cap less the deliveries reserved
  // and not handed over, bounded by the AMQP session's room (shared with its other links, link-credit.ts) and the
  // connection's outgoing budget (output.ts). The cheap counters first: most links have used their credit.
  private figure(): number {
    if (!this.open) return 0;
    const unsettledRoom = this.receiveMode === 'peekLock' ? MAX_UNSETTLED_PER_LINK - this.unsettled : Infinity;
    const own = Math.min(this.limit - this.sent, unsettledRoom) - this.reservations;
    if (own <= 0 || !this.admitted() || (this.gate && !this.gate.open(this.wake))) return 0;
    return Math.max(0, Math.min(own, this.session.room()));
  }

  isOpen(): boolean {
    return this.open;
  }

  /** Called on every flow frame from the client. */
  onFlow(): void {
    this.limit = grantedLimit(this.sender);
    if (drainRequested(this.sender)) this.draining = true;
    this.refresh(true);
    this.maybeDrained();
  }

  /**
   * The broker reserved a delivery of `bytes` (stored size) for this link (`+1`: it spent one of our credit), or
   * such a reservation ended without a delivery (`-1`: it gave the credit back). Counted against the AMQP session's
   * room and the connection's outgoing budget, which other links share.
   */
  reserved(delta: 1 | -1, bytes: number): void {
    this.reservations += delta;
    this.session.reserved += delta;
    if (this.open) this.pushed = Math.max(0, this.pushed - delta);
    // May reach the outgoing mark: every link of the connection holding credit then pushes 0 (output.ts).
    this.gate?.reserve(delta * bytes);
    if (delta > 0) {
      // The session's room shrank for the other links too.
      if (this.session.links.size > 1) this.session.refresh(this);
      return;
    }
    this.session.refresh();
    this.maybeDrained();
  }

  deliver(d: Delivery): void {
    const peekLock = this.receiveMode === 'peekLock';
    const bytes = encodeDelivery(d.body, {
      row: d.row,
      // Wire delivery-count = previous attempts (zero-based); the stored count includes this one.
      deliveryCount: peekLock ? d.row.deliveryCount - 1 : d.row.deliveryCount,
      lockedUntil: peekLock ? d.row.lock?.until : undefined,
      // Only a message that is not plainly active says so (the SDK reads a missing annotation as active).
      messageState: messageStateCode(d.row) || undefined,
    });
    const token = peekLock ? d.row.lock!.token : randomUUID();
    const delivery = this.sender.send(bytes, peekLock ? lockTokenToTag(token) : uuidStringToBytes(token), 0);
    // The reservation ends: the delivery now takes one of rhea's session slots and its bytes are rhea's, so the
    // figure stays as it was.
    this.sent++;
    this.reservations--;
    this.session.reserved--;
    this.gate?.reserve(-d.row.size);
    this.gate?.handedOver(bytes.length);
    if (peekLock) {
      this.tokens.set(delivery.id, token);
      this.unsettled++;
    } else {
      // Pre-settled (rhea settled it as it took it, the link being snd-settle-mode settled): the client sends no
      // disposition, and rhea marks it remote-settled itself once its last frame is written, freeing the session slot;
      // the links of the session may then take more. It must not be marked here: a delivery rhea cannot write yet
      // (the client took its credit back) would be dropped as settled before it was sent — a message deleted and never
      // delivered, and every later delivery of the session stuck behind it ("Next pending delivery not found").
      this.refillSoon();
    }
    this.maybeDrained();
  }

  /** Handles the client's disposition of one of our deliveries. */
  onOutcome(delivery: RheaDelivery, kind: 'accepted' | 'rejected' | 'modified' | 'released'): void {
    const prior = this.answered.get(delivery);
    if (prior) return this.answer(delivery, prior.state);
    const token = this.tokens.get(delivery.id);
    if (token === undefined) return;
    const state = (delivery.remote_state ?? {}) as Record<string, unknown>;
    const settlement = toSettlement(kind, state);
    this.broker.settle(token, settlement).then(
      () => this.answer(delivery, echo(kind, state)),
      (err: unknown) => {
        // On a session link a lost message lock is the session's lock that was lost.
        const e = toAmqpError(this.sessionId !== undefined ? sessionLockLost(err) : err);
        this.log.debug({ entity: this.path, err: e }, 'settlement refused');
        this.answer(delivery, amqpMessage.rejected({ error: e }).described());
      },
    );
  }

  /**
   * A disposition inside a transaction: staged through `stage` (the message stays locked by this holder until the
   * commit) and answered with transactional-state echoing the outcome, or the refusal `stage` returns.
   */
  onTransactionalOutcome(
    delivery: RheaDelivery,
    state: TransactionalState,
    stage: (token: string, s: Settlement, entityPath: string) => unknown,
  ): void {
    const prior = this.answered.get(delivery);
    if (prior) return this.answer(delivery, prior.state);
    const token = this.tokens.get(delivery.id);
    if (token === undefined) return;
    const kind = state.outcome?.constructor?.composite_type ?? 'accepted';
    const outcome = (state.outcome ?? {}) as Record<string, unknown>;
    const refused = stage(token, toSettlement(kind, outcome), this.path);
    this.answer(delivery, transactionalState(state.txnId.toString('hex'), refused ?? echo(kind, outcome)));
  }

  /** The message session this link holds (session receivers only). */
  sessionId?: string;

  /**
   * The broker ended our session lock: detach with session-lock-lost, as Service Bus does (docs/wire-contract.md,
   * "Session receivers").
   */
  sessionLost(): void {
    if (!this.open) return;
    this.close();
    this.sender.close(toAmqpError(sessionLockLostError(this.sessionId)));
  }

  /** The entity was deleted through the management API: detach with its not-found error, as Service Bus does. */
  entityDeleted(err: Error): void {
    if (!this.open) return;
    this.open = false;
    this.session.links.delete(this);
    this.gate?.forget(this.wake);
    this.handle = null;
    this.sender.close(toAmqpError(err));
  }

  /** The link or its connection has gone: stop offering; locks stay until settled or expired. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    this.session.links.delete(this);
    this.gate?.forget(this.wake);
    this.handle?.detach();
    this.handle = null;
  }

  private answer(delivery: RheaDelivery, state: unknown): void {
    // The first answer settles the delivery: it no longer counts toward MAX_UNSETTLED_PER_LINK.
    if (!this.answered.has(delivery) && this.tokens.delete(delivery.id)) this.unsettled--;
    this.answered.set(delivery, { state });
    delivery.update(true, state);
    // The client settles locally on our settled reply and sends nothing more (docs/wire-contract.md, "Settlement");
    // marking it remote-settled lets rhea free the slot in the session's delivery buffer...
    delivery.remote_settled = true;
    // ...which may let this link (or a sibling on the session) take more.
    this.refillSoon();
  }

  // Recompute the figures of the session's links once rhea has freed the slots of settled deliveries: it does so
  // when it next processes the connection (on process.nextTick), before this runs. One pass per turn, however many.
  private refillSoon(): void {
    if (this.refill) return;
    this.refill = true;
    setImmediate(() => {
      this.refill = false;
      if (this.open) this.session.refresh();
    });
  }

  private maybeDrained(): void {
    if (!this.draining || !this.handle || this.reservations > 0) return;
    this.draining = false;
    this.sent = this.limit;
    this.sender.set_drained(true);
    // set_drained only marks the flow as due; outside rhea's own input handling (e.g. from start() a tick
    // after the attach) nothing writes it until the next frame arrives. Ask rhea to process now.
    scheduleProcessing(this.sender.connection);
    // The credit is used up: the broker's figure for this link goes to 0.
    this.refresh();
  }
}

/** Maps an AMQP outcome to a Service Bus settlement (docs/wire-contract.md, "Settlement"). */
function toSettlement(kind: string, state: Record<string, unknown>): Settlement {
  // The outcome's raw fields (rhea keeps them as `value`): modified [delivery-failed, undeliverable-here,
  // message-annotations], rejected [error [condition, description, info]].
  const fields = (state as { value?: Typed[] }).value;
  const annotations = typedPatch(fields?.[2]) ?? (state.message_annotations as Record<string, unknown> | undefined);
  if (kind === 'accepted') return { kind: 'complete' };
  if (kind === 'modified') {
    // undeliverable-here = true is the SDK's defer; false is abandon.
    return state.undeliverable_here ? { kind: 'defer', props: annotations } : { kind: 'abandon', props: annotations };
  }
  if (kind === 'rejected') {
    const error = (state.error ?? {}) as { info?: Record<string, unknown>; description?: string };
    const { DeadLetterReason, DeadLetterErrorDescription } = error.info ?? {};
    const { DeadLetterReason: _r, DeadLetterErrorDescription: _d, ...rest } =
      typedPatch((fields?.[0]?.value as Typed[] | undefined)?.[2]) ?? error.info ?? {};
    return {
      kind: 'deadLetter',
      reason: typeof DeadLetterReason === 'string' ? DeadLetterReason : undefined,
      description: typeof DeadLetterErrorDescription === 'string' ? DeadLetterErrorDescription : undefined,
      props: rest,
    };
  }
  // released: the .NET receiver gives back what arrives into left-over credit while no call waits.
  return kind === 'released' ? { kind: 'abandon', released: true } : { kind: 'abandon' };
}

// The reply must be the outcome type the client sent (Java checks it), and a dead-letter echo must not
// carry the `rejected` error, which the JS SDK would report as a failure (docs/wire-contract.md, "Settlement").
function echo(kind: string, state: Record<string, unknown>): unknown {
  if (kind === 'modified') {
    return amqpMessage
      .modified({ delivery_failed: state.delivery_failed, undeliverable_here: state.undeliverable_here })
      .described();
  }
  if (kind === 'rejected') return amqpMessage.rejected({}).described();
  if (kind === 'released') return amqpMessage.released().described();
  return amqpMessage.accepted().described();
}
