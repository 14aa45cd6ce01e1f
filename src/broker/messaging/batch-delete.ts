// Batch delete (Service Bus `DeleteMessages` / `PurgeMessages`, the `com.microsoft:batch-delete-messages`
// management operation): the service removes up to N messages enqueued before a cut-off time without them
// ever being received. This file decides WHICH rows one call removes; `Broker.deleteMessages` removes them in
// one store transaction. Where Microsoft's documentation is silent, the rules chosen are in docs/sdk-7.10.md.

import { BrokerError } from '../errors.js';
import { MAX_DELETE_MESSAGE_COUNT } from '../runtime/limits.js';
import type { QueueState } from '../indexes/queue-state.js';
import { firstAvailable, walkSession, walkStored } from '../indexes/walk.js';
import type { Store } from '../../store/store.js';
import type { MessageRow } from '../types.js';

/** Most messages one call may delete (the limit lives with the others in limits.ts). */
export { MAX_DELETE_MESSAGE_COUNT };

/** What one batch-delete call asks for. */
export interface DeleteMessagesRequest {
  /** How many messages at most (1 … MAX_DELETE_MESSAGE_COUNT). */
  count: number;
  /** Only messages enqueued strictly before this instant (epoch ms); default now (as every SDK defaults it). */
  before?: number;
  /** Only this session's messages (a session receiver's call). */
  sessionId?: string;
}

/** Refuses a count outside 1 … MAX_DELETE_MESSAGE_COUNT with Azure's wording (ArgumentOutOfRange). */
export function checkDeleteCount(count: number): void {
  if (!Number.isInteger(count) || count < 1 || count > MAX_DELETE_MESSAGE_COUNT) {
    throw new BrokerError(
      'ArgumentOutOfRange',
      `Invalid Message Count : requested ${count}. Message count should be between 1 and ${MAX_DELETE_MESSAGE_COUNT}.`,
    );
  }
}

/**
 * The rows one call deletes: the oldest (lowest sequence number, i.e. earliest enqueued) available messages
 * enqueued before the cut-off, up to `count`. Only available (`active`) messages are eligible: a locked message's
 * lock is respected ("locked messages are not eligible for removal"), a deferred message is set aside for fetching
 * by sequence number, and a scheduled message has not been enqueued yet.
 *
 * The walk is bounded as browse is (walk.ts): it starts at the first available message, so held rows at the front
 * of the queue are not looked at, walks one session's index for a session receiver's call, and looks at no more
 * than MAX_BROWSE_SCAN stored keys. A call that stops there deletes what it found (perhaps nothing); the SDKs'
 * purge loops on, and each call starts at the first available message again.
 */
export function selectForDelete(store: Store, q: QueueState, req: DeleteMessagesRequest & { before: number }): MessageRow[] {
  checkDeleteCount(req.count);
  const out: MessageRow[] = [];
  const take = (row: MessageRow): boolean => {
    if (row.state !== 'active' || row.enqueuedAt >= req.before) return true;
    if (req.sessionId !== undefined && row.sessionId !== req.sessionId) return true;
    // Brought into memory (from the cold tail of a deep queue) to be removed there; a delete not yet committed
    // is gone already.
    const held = q.rowAt(row.seq);
    if (held?.state === 'active') out.push(held);
    return out.length < req.count;
  };
  if (req.sessionId !== undefined && q.sessionful) walkSession(store, q, req.sessionId, 1, take);
  else {
    const from = firstAvailable(q);
    if (from !== undefined) walkStored(store, q, from, take);
  }
  return out;
}
