// The in-memory index of one message-holding entity (a queue, a subscription or a dead-letter subqueue).
// The store holds the durable truth; this index is rebuilt from it at start-up and is what the broker
// decides on. Node runs one event-loop thread, so every decision (which consumer wins a message, whether a
// complete beats a lock expiry) is made here synchronously and exactly once.

import TinyQueue from 'tinyqueue';
import type { EntitySettings } from '../config/types.js';
import type { SubscriptionRules, TopicState } from './topic-state.js';
import type { Consumer, MessageRow } from './types.js';

/** The kinds of message-holding entity; topics only route, so they are not here. */
export type QueueKind = 'queue' | 'subscription' | 'deadletter';

/** One message-holding entity's rows, its ready order and the consumers attached to it. */
export class QueueState {
  /** Committed rows by sequence number; change them only through addRow / removeRow (they keep `bytes`). */
  readonly rows = new Map<number, MessageRow>();
  /** Total encoded size of the stored messages, for the MaxSizeInMegabytes quota. */
  bytes = 0;
  /** Sequence numbers that may be available, lowest first; re-checked against `rows` when taken. */
  readonly ready = new TinyQueue<number>([], (a, b) => a - b);
  /** Attached receivers, served round-robin. */
  readonly consumers: Consumer[] = [];
  /** Next sequence number to assign. */
  nextSeq = 1;
  /** Round-robin cursor into `consumers`. */
  rr = 0;
  /** Duplicate detection: message-id key → end of its window (epoch ms), for RequiresDuplicateDetection. */
  readonly dedup = new Map<string, number>();
  /** Sends since the duplicate-detection history was last pruned. */
  dedupSincePrune = 0;
  /** Dead-letter subqueue (null for a dead-letter queue itself: messages cannot be dead-lettered twice). */
  dlq: QueueState | null = null;
  /** For a subscription: its topic and its compiled rules. */
  topic: TopicState | null = null;
  rules: SubscriptionRules | null = null;

  constructor(
    readonly id: number,
    readonly path: string,
    readonly kind: QueueKind,
    readonly settings: EntitySettings,
  ) {}

  /** Counts of messages by state, for logs and metrics. */
  counts(): { active: number; locked: number; deferred: number; scheduled: number } {
    const c = { active: 0, locked: 0, deferred: 0, scheduled: 0 };
    for (const r of this.rows.values()) c[r.state]++;
    return c;
  }

  /** Adds (or replaces) a stored row. */
  addRow(row: MessageRow): void {
    const old = this.rows.get(row.seq);
    if (old) this.bytes -= old.size;
    this.rows.set(row.seq, row);
    this.bytes += row.size;
  }

  /** Removes a stored row; true if it was there. */
  removeRow(seq: number): boolean {
    const old = this.rows.get(seq);
    if (!old) return false;
    this.bytes -= old.size;
    return this.rows.delete(seq);
  }

  /** Makes a committed row visible to receivers. */
  makeReady(row: MessageRow): void {
    row.state = 'active';
    delete row.lock;
    this.ready.push(row.seq);
  }

  /** Takes the lowest available row, skipping stale heap entries. */
  takeReady(): MessageRow | undefined {
    for (;;) {
      const seq = this.ready.pop();
      if (seq === undefined) return undefined;
      const row = this.rows.get(seq);
      if (row && row.state === 'active') return row;
    }
  }

  /** Puts a row taken by `takeReady` back without change (its consumer vanished). */
  untake(row: MessageRow): void {
    this.ready.push(row.seq);
  }
}
