// Batch delete (Service Bus `DeleteMessages` / `PurgeMessages`, the `com.microsoft:batch-delete-messages`
// management operation): the service removes up to N messages enqueued before a cut-off time without them
// ever being received. This file decides WHICH rows one call removes; `Broker.deleteMessages` removes them in
// one store transaction. Where Microsoft's documentation is silent, the rules chosen are in docs/sdk-7.10.md.

import { BrokerError } from '../errors.js';
import { MAX_DELETE_MESSAGE_COUNT } from '../runtime/limits.js';
import type { QueueState } from '../indexes/queue-state.js';
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
 * enqueued before the cut-off, up to `count`. `seqs` walks the entity's stored sequence numbers in order.
 * Only available (`active`) messages are eligible: a locked message's lock is respected ("locked messages are
 * not eligible for removal"), a deferred message is set aside for fetching by sequence number, and a scheduled
 * message has not been enqueued yet.
 */
export function selectForDelete(
  q: QueueState,
  seqs: Iterable<number>,
  req: DeleteMessagesRequest & { before: number },
): MessageRow[] {
  checkDeleteCount(req.count);
  const out: MessageRow[] = [];
  for (const seq of seqs) {
    if (out.length >= req.count) break;
    // Memory (or the cold tail of a deep queue) says which stored rows still exist and in what state (a delete
    // not yet committed is gone here).
    const r = q.rowAt(seq);
    if (!r || r.state !== 'active' || r.enqueuedAt >= req.before) continue;
    if (req.sessionId !== undefined && r.sessionId !== req.sessionId) continue;
    out.push(r);
  }
  return out;
}
