// The lock rules of Peek-Lock (Service Bus "message transfers, locks, and settlement"): a lock token is
// honoured only while it is the message's current lock and its locked-until is in the future. Once a lock
// lapses the message may already be with another receiver, so the stale holder's settle or renew must fail
// with MessageLockLost and leave the message untouched.

import type { Clock } from './clock.js';
import type { QueueState } from './queue-state.js';
import type { MessageRow } from './types.js';

/** A lock that is current: the queue and the row it locks. */
export interface LockRef {
  q: QueueState;
  row: MessageRow;
}

/** Token → message index of the locks this process issued, with the validity check. */
export class LockRules {
  private readonly tokens = new Map<string, { qid: number; seq: number; holder?: string }>();

  constructor(private readonly clock: Clock) {}

  /** Number of tokens issued and not yet released. */
  get size(): number {
    return this.tokens.size;
  }

  /** Records a newly issued token and who it was issued to. */
  hold(token: string, qid: number, seq: number, holder?: string): void {
    this.tokens.set(token, { qid, seq, holder });
  }

  /** Who a token was issued to (connection and link), if this process issued it. */
  holderOf(token: string): string | undefined {
    return this.tokens.get(token)?.holder;
  }

  /** Forgets a token (settled, expired or given back). */
  release(token: string): void {
    this.tokens.delete(token);
  }

  /** The message a token currently locks, or undefined if the token is unknown, superseded or lapsed. */
  current(token: string, queueById: (qid: number) => QueueState | undefined): LockRef | undefined {
    const ref = this.tokens.get(token);
    if (!ref) return undefined;
    const q = queueById(ref.qid);
    const row = q?.rows.get(ref.seq);
    if (!q || !row || row.state !== 'locked' || row.lock?.token !== token) return undefined;
    // A lock whose time has passed is lost even if the expiry timer has not fired yet.
    if (row.lock.until <= this.clock.now()) return undefined;
    return { q, row };
  }
}
