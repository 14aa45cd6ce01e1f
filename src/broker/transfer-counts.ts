// The transfer counts a queue or subscription reports in CountDetails. Service Bus keeps a transfer queue (messages
// on their way to another entity through ForwardTo or a send-via transaction) and a transfer dead-letter queue (those
// that could not be transferred). peeklock forwards inside the send's own write, so nothing waits for transfer
// today; send-via and its transfer dead-letter queue fill this in, and every management view reads it from here.

import type { QueueState } from './queue-state.js';

/** TransferMessageCount and TransferDeadLetterMessageCount of one entity. */
export interface TransferCounts {
  transfer: number;
  transferDeadLetter: number;
}

/** The transfer counts of a queue or subscription: 0 and 0 until there is a transfer (dead-letter) queue to count. */
export function transferCounts(q: QueueState): TransferCounts {
  void q;
  return { transfer: 0, transferDeadLetter: 0 };
}
