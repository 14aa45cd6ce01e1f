// Duplicate detection for a queue or topic with RequiresDuplicateDetection: Service Bus drops a message whose
// MessageId it accepted within DuplicateDetectionHistoryTimeWindow, and answers the send as if it was stored.
// The history is durable (dedup store ops); this is its in-memory index, shared by queues and topics.

/** Sends between two sweeps of passed windows: pruning on every send would walk the whole history each time. */
const PRUNE_EVERY = 1024;

/** The message-ids a queue or topic accepted, each with the end of its duplicate-detection window. */
export class DuplicateHistory {
  private readonly until = new Map<string, number>();
  private sincePrune = 0;

  /** True when `key` was accepted and its window has not yet passed at `now`. */
  seen(key: string, now: number): boolean {
    const end = this.until.get(key);
    return end !== undefined && end > now;
  }

  /** Remembers `key` until `end` (a send accepted, or an entry reloaded at start-up). */
  remember(key: string, end: number): void {
    this.until.set(key, end);
  }

  /** Forgets `key` if it still ends at `end`: the send that remembered it was not stored, so a retry is no duplicate. */
  forget(key: string, end: number): void {
    if (this.until.get(key) === end) this.until.delete(key);
  }

  /** Counts one send; every PRUNE_EVERY sends, forgets the windows passed at `now` and returns their keys. */
  prune(now: number): string[] {
    if (++this.sincePrune < PRUNE_EVERY) return [];
    this.sincePrune = 0;
    const passed: string[] = [];
    for (const [key, end] of this.until) {
      if (end > now) continue;
      this.until.delete(key);
      passed.push(key);
    }
    return passed;
  }
}
