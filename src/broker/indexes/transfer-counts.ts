// The transfer counts a queue or subscription reports in CountDetails. Service Bus keeps a transfer queue (messages
// on their way to another entity through ForwardTo or a send-via transaction) and a transfer dead-letter queue (those
// that could not be transferred). peeklock forwards (and commits send-via) inside the send's own write, so nothing
// ever waits for transfer; the transfer dead-letter queue holds send-via messages their destination refused.

import type { QueueState } from './queue-state.js';

/** TransferMessageCount and TransferDeadLetterMessageCount of one entity. */
export interface TransferCounts {
  transfer: number;
  transferDeadLetter: number;
}

/** The transfer counts of a queue or subscription: no transfer queue, and the transfer dead-letter queue's depth. */
export function transferCounts(q: QueueState): TransferCounts {
  return { transfer: 0, transferDeadLetter: q.tdlq?.size ?? 0 };
}
