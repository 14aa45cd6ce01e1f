// The index behind accept-next-session: Service Bus hands a receiver that asks for "the next available session"
// one that is not locked and has a message available now (an active message: deferred and scheduled ones do
// not count). peeklock picks the one whose first available message is oldest (lowest sequence number). Scanning
// every session on every accept made accept-next cost O(sessions); this heap is kept as messages become
// available and sessions are released, so taking the next session costs O(log sessions).
//
// The heap is lazy: an entry names a session and the sequence number it was filed under. A session has at
// most one live entry (`SessionState.indexedSeq`); entries that no longer match it are skipped when popped,
// and the entry's session is checked again (still free, still has that message first) before it is handed out.

import TinyQueue from 'tinyqueue';
import type { SessionState } from './session-state.js';

interface Entry {
  seq: number;
  s: SessionState;
}

/** Free sessions with an available message, oldest first message first (see the file comment). */
export class AvailableSessions {
  private readonly heap = new TinyQueue<Entry>([], (a, b) => a.seq - b.seq);

  /** Entries held, live and stale (for tests and metrics). */
  get size(): number {
    return this.heap.length;
  }

  /**
   * Files a free session under `seq`, one of its available messages. Keeps the lowest: a session already filed
   * under a lower sequence number stays where it is.
   */
  offer(s: SessionState, seq: number): void {
    if (s.holder !== null) return;
    if (s.indexedSeq !== undefined && s.indexedSeq <= seq) return;
    s.indexedSeq = seq;
    this.heap.push({ seq, s });
  }

  /**
   * Removes and returns the free session whose first available message is oldest, or undefined.
   * `firstReady` gives a session's lowest available sequence number now (undefined when it has none left).
   */
  take(firstReady: (s: SessionState) => number | undefined): SessionState | undefined {
    for (;;) {
      const e = this.heap.pop();
      if (!e) return undefined;
      const { s } = e;
      if (s.indexedSeq !== e.seq) continue; // superseded by a lower entry, or already taken
      s.indexedSeq = undefined;
      // Locked since it was filed (accepted by id): it is filed again when its lock ends.
      if (s.holder !== null) continue;
      const head = firstReady(s);
      if (head === undefined) continue; // its messages were taken, settled or expired: filed again on the next one
      if (head !== e.seq) {
        // Its first message was taken and a later one is first now: file it under that one.
        this.offer(s, head);
        continue;
      }
      return s;
    }
  }
}
