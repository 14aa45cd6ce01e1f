// The admission rule, one per connection, asked before any frame of a link reaches the node it addresses (an entity,
// `$management`, `$cbs`, the coordinator). A link is admitted only after its authorisation, with the check of the
// right it needs; every transfer, flow and disposition on it is let through only while that check passes at that
// moment (a token in force by the broker clock: "when a token expires, Service Bus promptly drops all links on the
// connection to the respective entity", AMQP guide). A link that was never admitted — refused, or forgotten by an
// endpoint — gets nothing through: rhea hands over transfers until the peer's own detach arrives, so a client that
// pipelines its transfers behind its attach would otherwise have them stored.
//
// The rule also keeps what a connection may make the broker hold: credit is granted as sends are settled (stored,
// refused or answered), never as they arrive, a transfer beyond the credit granted is rejected
// (amqp:link:transfer-limit-exceeded), and the bytes of received messages not yet settled per connection are bounded
// (Broker.MaxPendingSendBytes; past it a transfer is rejected with com.microsoft:server-busy, which the SDKs retry).

import { BrokerError } from '../broker/errors.js';
import { toAmqpError, type AmqpError } from './conditions.js';
import { linkState, peekLinkState, type LinkAdmission } from './link-state.js';
import { ON_ABORTED, transferBeyondCredit } from './rhea-patches.js';
import { receiverCredit } from './rhea.js';
import { OVERSIZED, RAW, amqpMessage, type RheaContext, type RheaDelivery, type RheaLink } from './rhea-types.js';

/** Credit the broker keeps open on each link a client sends on: transfers received and not yet settled count against it. */
export const CREDIT_WINDOW = 1000;

/** Why a link that was never admitted gets nothing through. */
const NOT_ADMITTED: AmqpError = { condition: 'amqp:unauthorized-access', description: 'The link was not admitted.' };

/** A link our side receives on, as far as credit goes (rhea's Receiver). */
type CreditLink = RheaLink & { flow(n: number): void };

/** The admission rule of one connection. */
export class Admission {
  private pendingBytes = 0;
  /** Links left without credit while the connection was over its byte bound. */
  private readonly starved = new Set<CreditLink>();

  constructor(
    private readonly maxPendingBytes: number,
    /** The hostname of the client's open, for error texts. */
    private readonly host: () => string,
  ) {}

  /** Bytes of received messages not yet settled (for the tests and the limit). */
  get pending(): number {
    return this.pendingBytes;
  }

  /**
   * Admits `link`: its frames pass while `check` does not throw (`check` absent: the node authorises each request
   * itself, as `$management` and `$cbs` do). A link the client sends on gets its first credit now.
   */
  admit(link: RheaLink, check?: () => void): void {
    const a = admissionOf(link);
    a.check = check ?? (() => undefined);
    a.refusal = undefined;
    if (link.is_sender()) return;
    this.topUp(link as CreditLink);
    // An aborted delivery spent a credit and is settled by the abort (AMQP 1.0 §2.7.5): nothing else would
    // give that credit back, and a client aborting a window's worth would be left with none.
    (link as CreditLink & { [ON_ABORTED]?: () => void })[ON_ABORTED] = () => this.settledOne(link as CreditLink);
  }

  /** Records why `link` was refused: its frames get this error (the link itself is detached by the caller). */
  refused(link: RheaLink, error: AmqpError): void {
    const a = admissionOf(link);
    a.check = undefined;
    a.refusal = error;
  }

  /** True when a flow or disposition on `link` may reach its node now; otherwise the link is detached with the reason. */
  allows(link: RheaLink | undefined): boolean {
    return !!link && this.denial(link) === undefined;
  }

  /**
   * An incoming transfer (rhea's `message` event): true when it may reach its node, which must then settle it;
   * otherwise it is settled here, rejected with the reason, and the node never sees it.
   */
  transfer(ctx: RheaContext): boolean {
    const link = ctx.receiver as CreditLink;
    const delivery = ctx.delivery!;
    const bytes = payloadBytes(ctx);
    const refusal = this.denial(link) ?? this.overCredit(link) ?? this.overBytes(link, bytes);
    if (refusal) {
      delivery.update(true, amqpMessage.rejected({ error: refusal }).described());
      return false;
    }
    const a = admissionOf(link);
    a.unsettled++;
    this.pendingBytes += bytes;
    let settled = false;
    const update = delivery.update.bind(delivery);
    // Whoever settles it (the send path, the coordinator, `$management`, `$cbs`) gives the credit and bytes back.
    (delivery as RheaDelivery).update = (s: boolean, state?: unknown): void => {
      update(s, state);
      if (settled || s === false) return;
      settled = true;
      a.unsettled--;
      this.pendingBytes -= bytes;
      this.settledOne(link);
    };
    return true;
  }

  /** Forgets the links of a closed connection. */
  dispose(): void {
    this.starved.clear();
  }

  // The error that keeps `link`'s frames out now, if any. A link whose right lapsed is detached with the reason.
  private denial(link: RheaLink): AmqpError | undefined {
    const a = peekLinkState(link)?.admission;
    if (!a?.check) return a?.refusal ?? NOT_ADMITTED;
    try {
      a.check();
      return undefined;
    } catch (err) {
      const error = toAmqpError(err, this.host());
      this.refused(link, error);
      closeQuietly(link, error);
      return error;
    }
  }

  // AMQP 1.0 §2.6.7: a transfer is allowed only with link credit; rhea does not enforce it.
  private overCredit(link: CreditLink): AmqpError | undefined {
    if (!transferBeyondCredit()) return undefined;
    const error = { condition: 'amqp:link:transfer-limit-exceeded', description: 'The transfer came beyond the credit the broker granted.' };
    this.refused(link, error);
    closeQuietly(link, error);
    return error;
  }

  // Past the bound a send is told the broker is busy (retried by the SDK); one message alone always fits. The
  // link's credit comes back once the backlog drains below the bound.
  private overBytes(link: CreditLink, bytes: number): AmqpError | undefined {
    if (this.pendingBytes === 0 || this.pendingBytes + bytes <= this.maxPendingBytes) return undefined;
    this.starved.add(link);
    return toAmqpError(
      new BrokerError('ServerBusy', `The connection already has ${this.pendingBytes} bytes of messages waiting to be stored; retry shortly.`),
    );
  }

  private settledOne(link: CreditLink): void {
    if (this.pendingBytes >= this.maxPendingBytes) {
      this.starved.add(link);
      return;
    }
    this.topUp(link);
    if (!this.starved.size) return;
    for (const l of [...this.starved]) this.topUp(l);
    this.starved.clear();
  }

  // Credit back to the window, less the transfers not yet settled; batched to a quarter window, as rhea's own is.
  private topUp(link: CreditLink): void {
    const a = admissionOf(link);
    if (!a.check || !link.is_open()) return;
    const credit = receiverCredit(link);
    const room = CREDIT_WINDOW - credit - a.unsettled;
    if (room > 0 && (room >= CREDIT_WINDOW / 4 || credit === 0)) link.flow(room);
  }
}

function admissionOf(link: RheaLink): LinkAdmission {
  const s = linkState(link);
  return (s.admission ??= { unsettled: 0 });
}

function closeQuietly(link: RheaLink, error: AmqpError): void {
  try {
    link.close(error);
  } catch {
    /* the link is already gone */
  }
}

/** The bytes a transfer's message takes while it waits (an oversized one was dropped as it arrived: none). */
function payloadBytes(ctx: RheaContext): number {
  if ((ctx.delivery as { [OVERSIZED]?: number } | undefined)?.[OVERSIZED] !== undefined) return 0;
  const m = ctx.message;
  if (Buffer.isBuffer(m)) return m.length;
  return (m as { [RAW]?: Buffer } | undefined)?.[RAW]?.length ?? 0;
}
