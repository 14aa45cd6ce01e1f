// The cold tail of a deep queue: stored, available messages the broker does not hold in memory. A queue keeps in
// memory only the front it can deliver next (a window of up to WINDOW available rows) and the rows that carry a
// deadline or wait on purpose (locked, deferred, scheduled); the rest stays in LMDB and is read in sequence order as
// the window drains. A backlog of millions of messages, ordinary after a consumer outage (a Service Bus queue holds
// up to 80 GB), then costs memory for its counters only, and a restart reads the window, not every row.
//
// Which stored rows are cold is decided by sequence number: every row of the queue below `from` that exists is in
// memory; at or above it, a stored row that memory does not hold is cold, except rows whose insert has committed
// but not been accounted yet (`inserting`) and rows memory has just removed whose delete has not committed
// (`gone`). Those two sets close the races between a store read and the broker's bookkeeping, which runs when a
// commit's promise settles, not at the commit itself.

import type { MessageRow } from '../types.js';

/** Available rows a queue holds in memory before new ones stay in the store. */
export const WINDOW = 5000;

/** Below this many available rows in memory, the window is refilled from the store. */
export const REFILL_BELOW = WINDOW / 2;

/** The reads the cold tail needs from the store (only committed data). */
export interface ColdSource {
  rowsFrom(qid: number, from: number, limit: number, to?: number): MessageRow[];
  readRow(qid: number, seq: number): MessageRow | undefined;
}

/** Counters and bounds of one queue's stored rows that are not in memory. */
export class ColdTail {
  /** Cold rows (all of them available) and the sum of their sizes. */
  count = 0;
  bytes = 0;
  /** Lowest sequence number that may be cold; every stored row below it is in memory. */
  from = 0;
  /** Highest sequence number counted cold. */
  to = -1;
  private readonly inserting = new Set<number>();
  private readonly gone = new Set<number>();

  constructor(
    private readonly qid: number,
    private readonly source: ColdSource,
  ) {}

  /** Sets the counters read at start-up: `count` stored available rows not loaded, up to sequence number `to`. */
  init(count: number, bytes: number, to: number): void {
    this.count = Math.max(0, count);
    this.bytes = Math.max(0, bytes);
    this.from = 0;
    this.to = this.count > 0 ? to : -1;
  }

  /** A new row of this queue is being written; until it is accounted, a store read must not take it as cold. */
  expectInsert(seq: number): void {
    this.inserting.add(seq);
  }

  /**
   * Decides where a committed, available row goes: true when it stays in the store (counted here), false when
   * memory keeps it. New rows stay cold once the tail exists or memory holds a full window. A tail only starts
   * above every sequence number memory has held (`maxInMemory`), so no row memory removed (its delete perhaps
   * not committed yet) can lie in a new tail's range.
   */
  admit(row: MessageRow, availableInMemory: number, maxInMemory: number): boolean {
    this.inserting.delete(row.seq);
    if (this.count > 0) {
      if (row.seq < this.from) return false;
    } else {
      if (availableInMemory < WINDOW || row.seq <= maxInMemory) return false;
      this.from = row.seq;
      this.to = row.seq;
    }
    this.count++;
    this.bytes += row.size;
    if (row.seq > this.to) this.to = row.seq;
    return true;
  }

  /** Memory removed a row; until its delete commits, a store read must not take it as cold. */
  removed(seq: number): void {
    if (this.count > 0 && seq >= this.from && seq <= this.to) this.gone.add(seq);
  }

  /** Memory holds this row (again): it is neither being inserted nor gone. */
  held(seq: number): void {
    this.inserting.delete(seq);
    this.gone.delete(seq);
  }

  /** True when `seq` may name a cold row (it is in the cold range and not known to be elsewhere). */
  mayHold(seq: number): boolean {
    return this.count > 0 && seq >= this.from && seq <= this.to && !this.inserting.has(seq) && !this.gone.has(seq);
  }

  /** Reads one cold row without taking it out of the tail, or undefined. */
  peek(seq: number, inMemory: (seq: number) => boolean): MessageRow | undefined {
    if (!this.mayHold(seq) || inMemory(seq)) return undefined;
    const row = this.source.readRow(this.qid, seq);
    return row?.state === 'active' ? row : undefined;
  }

  /** Takes one cold row out of the tail (the caller puts it in memory), or undefined if `seq` is not cold. */
  takeOne(seq: number, inMemory: (seq: number) => boolean): MessageRow | undefined {
    const row = this.peek(seq, inMemory);
    if (row) this.uncount(row);
    return row;
  }

  /**
   * Takes up to `limit` cold rows in sequence order, for the caller to put in memory. Returns fewer only when the
   * tail is empty; if the store holds fewer cold rows than counted, the counters are corrected (and `onDrift`
   * told) rather than leaving messages counted that no read will ever find.
   */
  take(limit: number, inMemory: (seq: number) => boolean, onDrift?: (missing: number) => void): MessageRow[] {
    const out: MessageRow[] = [];
    while (this.count > 0 && out.length < limit && this.from <= this.to) {
      const chunk = this.source.rowsFrom(this.qid, this.from, Math.max(256, limit - out.length), this.to);
      if (!chunk.length) {
        this.from = this.to + 1;
        break;
      }
      for (const row of chunk) {
        this.from = row.seq + 1;
        if (row.state !== 'active' || inMemory(row.seq) || this.inserting.has(row.seq) || this.gone.has(row.seq)) continue;
        this.uncount(row);
        out.push(row);
        if (out.length >= limit || this.count === 0) break;
      }
    }
    if (this.count > 0 && this.from > this.to) {
      onDrift?.(this.count);
      this.count = 0;
      this.bytes = 0;
    }
    this.prune();
    return out;
  }

  private uncount(row: MessageRow): void {
    this.count--;
    this.bytes = Math.max(0, this.bytes - row.size);
    if (this.count === 0) {
      this.from = 0;
      this.to = -1;
      this.gone.clear();
    }
  }

  // Entries below `from` can no longer matter: memory holds (or held) every row there. (An insert whose write
  // failed is never accounted; its entry goes here.) Removals recorded for a tail that has emptied cannot lie in
  // the next one's range (see admit).
  private prune(): void {
    if (this.count === 0) this.gone.clear();
    for (const set of [this.inserting, this.gone]) {
      if (set.size > 1024) for (const s of set) if (s < this.from) set.delete(s);
    }
  }
}
