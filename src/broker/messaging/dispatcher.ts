// Which consumer gets which message. Receivers attach to an entity; whenever something may have changed (a
// send committed, credit arrived, a lock ended) the entity is pumped: ready messages go out in sequence order,
// round-robin over the consumers with room for one. Session-enabled entities are pumped by `Sessions`, where
// each receiver takes only its own session's messages.

import type { BrokerContext } from '../runtime/context.js';
import type { Deliverer } from './deliverer.js';
import { entityDisabled, requiresSessions } from '../errors.js';
import type { QueueState } from '../indexes/queue-state.js';
import type { Sessions } from './sessions.js';
import type { Transitions } from './transitions.js';
import type { Consumer } from '../types.js';
import { inBackground } from '../runtime/journal.js';

/** What a receiving link gets back from `attach`. */
export interface ConsumerHandle {
  /**
   * The consumer's credit: how many more deliveries it can take now, beyond those it was handed or told are
   * reserved (link credit, session window, outgoing budget and unsettled cap already combined). The broker spends
   * it as it reserves deliveries, and offers messages when it is pushed and did not fall; push it whenever it
   * changes (and on each flow frame, as that is when a client expects to be offered messages).
   */
  setCredit(n: number): void;
  /** Removes the consumer; locks it holds stay until they are settled or expire (Service Bus keeps them). */
  detach(): void;
}

/** Attaches consumers and offers them ready messages. */
export class Dispatcher {
  constructor(
    private readonly ctx: BrokerContext,
    private readonly deliverer: Deliverer,
    private readonly sessions: Sessions,
    private readonly transitions: Transitions,
  ) {}

  /** Attaches a receiver to a queue or dead-letter queue path. */
  attach(path: string, consumer: Consumer): ConsumerHandle {
    this.ctx.journal.assertRunning();
    const q = this.ctx.entities.forReceive(path);
    if (receiveBlocked(q)) throw entityDisabled(q.path);
    if (q.sessionful && consumer.sessionId === undefined) {
      throw requiresSessions(q.path);
    }
    q.consumers.push(consumer);
    let attached = true;
    return {
      setCredit: (n) => {
        if (attached && this.deliverer.setCredit(consumer, n)) this.pump(q);
      },
      detach: () => {
        if (!attached) return;
        attached = false;
        const i = q.consumers.indexOf(consumer);
        if (i >= 0) q.consumers.splice(i, 1);
        this.deliverer.forget(consumer);
        this.sessions.consumerGone(q, consumer);
      },
    };
  }

  /** A delivery is being completed: its receiver, if credit 1 ran out, may have the next message locked ahead. */
  completing(token: string): void {
    this.deliverer.completing(token, receiveBlocked);
  }

  /** Offers ready messages to the queue's consumers, round-robin, within their credit. */
  pump(q: QueueState): void {
    if (this.ctx.journal.stopping || receiveBlocked(q)) return;
    if (q.sessionful) return this.sessions.pump(q);
    // A message locked ahead for a receiver whose credit just came goes first (lock-ahead.ts).
    this.deliverer.serveHeld(q);
    // Nothing available, in memory or in the cold tail: looking for a receiver with credit would find no message
    // to give it, and an idle queue with N receivers, pumped on each rise of credit, would cost O(N) per pump.
    if (q.ready.length === 0 && !q.cold?.count) return this.deliverer.yieldHeld(q);
    while (q.consumers.length) {
      const i = this.nextConsumer(q);
      if (i < 0) return;
      const row = q.takeReady();
      if (!row) return this.deliverer.yieldHeld(q);
      if (q.hasExpired(row, this.ctx.clock.now())) {
        inBackground(this.transitions.expire(q, row));
        continue;
      }
      // The round-robin cursor moves only when a message is actually handed out.
      const c = q.consumers[i]!;
      q.rr = (i + 1) % q.consumers.length;
      this.deliverer.deliver(q, row, c);
    }
  }

  // Index of the next consumer (round-robin from the cursor) with room for a message, or -1.
  private nextConsumer(q: QueueState): number {
    const n = q.consumers.length;
    for (let i = 0; i < n; i++) {
      const k = (q.rr + i) % n;
      const c = q.consumers[k]!;
      // The broker's own figure first: a consumer without credit is not asked anything.
      if (this.deliverer.room(c) > 0 && c.isOpen()) return k;
    }
    return -1;
  }
}

/** True when the entity's Status (its parent's, for a dead-letter queue) stops receives (Disabled, ReceiveDisabled). */
export function receiveBlocked(q: QueueState): boolean {
  const status = (q.parent ?? q).status;
  return status === 'Disabled' || status === 'ReceiveDisabled';
}
