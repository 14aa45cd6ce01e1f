// The reference store: everything in maps, writes "committed" on the next turn of the event loop. Used by the
// unit tests (with a fake clock) and as the second implementation the store contract suite runs against.

import type { DeliveryHistory } from './history.js';
import type { MessageRow } from './row.js';
import type { DedupEntry, EntityRecord, QueueFront, QueueSnapshot, SessionRecord, Store, StoreOp } from './store.js';

interface MemQueue {
  nextSeq: number;
  rows: Map<number, MessageRow>;
  bodies: Map<number, Uint8Array>;
  dedup: Map<string, number>;
  sessions: Map<string, SessionRecord>;
  history: Map<number, DeliveryHistory>;
}

/** An in-memory `Store`; rows are copied on write so callers cannot alias stored state. */
export class MemoryStore implements Store {
  private ids = new Map<string, number>();
  private queues = new Map<number, MemQueue>();
  private meta = new Map<string, unknown>();
  private entities = new Map<string, EntityRecord>();
  /** Shared bodies by `qid:seq`, with the number of rows referring to each. */
  private shared = new Map<string, { body: Uint8Array; refs: number }>();
  private pending = new Set<Promise<void>>();
  /** When set, every write fails with this error (for fault tests of the broker). */
  failWrites: Error | null = null;

  async open(): Promise<void> {}

  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  async queueId(path: string): Promise<number> {
    let id = this.ids.get(path);
    if (id === undefined) {
      id = this.ids.size + 1;
      this.ids.set(path, id);
    }
    return id;
  }

  load(qid: number): QueueSnapshot {
    const q = this.queues.get(qid);
    if (!q) return { nextSeq: 1, rows: [] };
    const rows = [...q.rows.values()].sort((a, b) => a.seq - b.seq).map((r) => structuredClone(r));
    const last = rows.length ? rows[rows.length - 1]!.seq + 1 : 1;
    return { nextSeq: Math.max(q.nextSeq, last), rows };
  }

  loadFront(qid: number): QueueFront {
    const { nextSeq, rows } = this.load(qid);
    const bytes = rows.reduce((n, r) => n + r.size, 0);
    return { nextSeq, count: rows.length, bytes, held: rows.filter((r) => r.state !== 'active') };
  }

  rowsFrom(qid: number, from: number, limit: number, to = Infinity): MessageRow[] {
    const q = this.queues.get(qid);
    if (!q) return [];
    const seqs = [...q.rows.keys()].filter((s) => s >= from && s <= to).sort((a, b) => a - b).slice(0, limit);
    return seqs.map((s) => structuredClone(q.rows.get(s)!));
  }

  readRow(qid: number, seq: number): MessageRow | undefined {
    const row = this.queues.get(qid)?.rows.get(seq);
    return row && structuredClone(row);
  }

  loadMeta(qid: number, key: string): unknown {
    const v = this.meta.get(`${qid}:${key}`);
    return v === undefined ? undefined : structuredClone(v);
  }

  loadEntities(): EntityRecord[] {
    return [...this.entities.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((r) => structuredClone(r));
  }

  loadSessions(qid: number): Map<string, SessionRecord> {
    return structuredClone(this.queues.get(qid)?.sessions ?? new Map<string, SessionRecord>());
  }

  loadDedup(qid: number): DedupEntry[] {
    return [...(this.queues.get(qid)?.dedup ?? new Map<string, number>())].map(([key, until]) => ({ key, until }));
  }

  sessionIds(qid: number): Iterable<string> {
    const ids = new Set<string>();
    for (const row of this.queue(qid).rows.values()) if (row.sessionId !== undefined) ids.add(row.sessionId);
    return [...ids].sort();
  }

  sessionRowsFrom(qid: number, sessionId: string, from: number, limit: number): MessageRow[] {
    const q = this.queue(qid);
    return [...this.sessionSeqsFrom(qid, sessionId, from)].slice(0, limit).map((s) => structuredClone(q.rows.get(s)!));
  }

  sessionSeqsFrom(qid: number, sessionId: string, from: number): Iterable<number> {
    const seqs: number[] = [];
    for (const row of this.queue(qid).rows.values()) if (row.sessionId === sessionId && row.seq >= from) seqs.push(row.seq);
    return seqs.sort((a, b) => a - b);
  }

  seqsFrom(qid: number, from: number): Iterable<number> {
    return [...this.queue(qid).rows.keys()].filter((s) => s >= from).sort((a, b) => a - b);
  }

  readBody(qid: number, seq: number): Uint8Array | undefined {
    const q = this.queues.get(qid);
    const own = q?.bodies.get(seq);
    if (own) return own;
    const ref = q?.rows.get(seq)?.bodyRef;
    return ref && this.shared.get(`${ref[0]}:${ref[1]}`)?.body;
  }

  readHistory(qid: number, seq: number): DeliveryHistory | undefined {
    const h = this.queues.get(qid)?.history.get(seq);
    return h && structuredClone(h);
  }

  /** Shared bodies stored and not yet freed (for tests). */
  sharedBodies(): number {
    return this.shared.size;
  }

  /** Shared bodies whose count may have reached zero in the write being applied; freed at its end. */
  private mayFree = new Set<string>();

  // A row leaving (delete, clear, or given its own body) drops its reference to a shared body. The body is freed
  // at the end of the write if no stored row names it then, so the order of ops inside a write does not matter
  // (a dead-letter deletes the original before it puts the copy naming the same body).
  private unref(row: MessageRow | undefined): void {
    if (!row?.bodyRef) return;
    const key = `${row.bodyRef[0]}:${row.bodyRef[1]}`;
    const s = this.shared.get(key);
    if (s) {
      s.refs--;
      this.mayFree.add(key);
    }
  }

  write(ops: StoreOp[]): Promise<void> {
    const copy = structuredClone(ops);
    const p = new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        if (this.failWrites) return reject(this.failWrites);
        for (const op of copy) this.apply(op);
        for (const key of this.mayFree) if ((this.shared.get(key)?.refs ?? 1) <= 0) this.shared.delete(key);
        this.mayFree.clear();
        resolve();
      }),
    );
    this.pending.add(p);
    const done = (): void => void this.pending.delete(p);
    p.then(done, done);
    return p;
  }

  private queue(qid: number): MemQueue {
    let q = this.queues.get(qid);
    if (!q) {
      q = { nextSeq: 1, rows: new Map(), bodies: new Map(), dedup: new Map(), sessions: new Map(), history: new Map() };
      this.queues.set(qid, q);
    }
    return q;
  }

  private apply(op: StoreOp): void {
    if (op.op === 'entity') {
      if (op.record) this.entities.set(op.path, op.record);
      else this.entities.delete(op.path);
      return;
    }
    const q = this.queue(op.qid);
    switch (op.op) {
      case 'put': {
        // A row's body is decided when it is first stored: its own, or a reference to a shared one. A later put
        // without a body keeps that choice, so a shared body's count is the number of stored rows naming it.
        const row = op.row;
        const old = q.rows.get(row.seq);
        if (op.body) {
          delete row.bodyRef; // a row given its own body does not share one
          this.unref(old);
          q.bodies.set(row.seq, op.body);
        } else if (old) {
          if (old.bodyRef) row.bodyRef = old.bodyRef;
          else delete row.bodyRef;
        } else if (row.bodyRef) {
          const s = this.shared.get(`${row.bodyRef[0]}:${row.bodyRef[1]}`);
          if (s) s.refs++;
          else delete row.bodyRef; // a body that is not stored cannot be named
        }
        q.rows.set(row.seq, row);
        break;
      }
      case 'delete':
        this.unref(q.rows.get(op.seq));
        q.rows.delete(op.seq);
        q.bodies.delete(op.seq);
        q.history.delete(op.seq);
        break;
      case 'history':
        if (op.record) q.history.set(op.seq, op.record);
        else q.history.delete(op.seq);
        break;
      case 'sharedBody': {
        // Freed at the end of this write unless rows name it by then.
        const key = `${op.qid}:${op.seq}`;
        this.shared.set(key, { body: op.body, refs: this.shared.get(key)?.refs ?? 0 });
        this.mayFree.add(key);
        break;
      }
      case 'nextSeq':
        q.nextSeq = Math.max(q.nextSeq, op.nextSeq);
        break;
      case 'dedup':
        q.dedup.set(op.key, op.until);
        break;
      case 'undedup':
        q.dedup.delete(op.key);
        break;
      case 'meta':
        if (op.value === null || op.value === undefined) this.meta.delete(`${op.qid}:${op.key}`);
        else this.meta.set(`${op.qid}:${op.key}`, op.value);
        break;
      case 'session':
        if (op.record) q.sessions.set(op.sessionId, op.record);
        else q.sessions.delete(op.sessionId);
        break;
      case 'clear':
        for (const row of q.rows.values()) this.unref(row);
        q.rows.clear();
        q.bodies.clear();
        q.history.clear();
        q.dedup.clear();
        q.sessions.clear();
        for (const key of [...this.meta.keys()]) if (key.startsWith(`${op.qid}:`)) this.meta.delete(key);
        break;
    }
  }
}
