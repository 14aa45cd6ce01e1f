// The reference store: everything in maps, writes "committed" on the next turn of the event loop. Used by the
// unit tests (with a fake clock) and as the second implementation the store contract suite runs against.

import type { MessageRow } from './row.js';
import type { DedupEntry, EntityRecord, QueueSnapshot, SessionRecord, Store, StoreOp } from './store.js';

interface MemQueue {
  nextSeq: number;
  rows: Map<number, MessageRow>;
  bodies: Map<number, Uint8Array>;
  dedup: Map<string, number>;
  sessions: Map<string, SessionRecord>;
}

/** An in-memory `Store`; rows are copied on write so callers cannot alias stored state. */
export class MemoryStore implements Store {
  private ids = new Map<string, number>();
  private queues = new Map<number, MemQueue>();
  private meta = new Map<string, unknown>();
  private entities = new Map<string, EntityRecord>();
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

  seqsFrom(qid: number, from: number): Iterable<number> {
    return [...this.queue(qid).rows.keys()].filter((s) => s >= from).sort((a, b) => a - b);
  }

  readBody(qid: number, seq: number): Uint8Array | undefined {
    return this.queues.get(qid)?.bodies.get(seq);
  }

  write(ops: StoreOp[]): Promise<void> {
    const copy = structuredClone(ops);
    const p = new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        if (this.failWrites) return reject(this.failWrites);
        for (const op of copy) this.apply(op);
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
      q = { nextSeq: 1, rows: new Map(), bodies: new Map(), dedup: new Map(), sessions: new Map() };
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
      case 'put':
        q.rows.set(op.row.seq, op.row);
        if (op.body) q.bodies.set(op.row.seq, op.body);
        break;
      case 'delete':
        q.rows.delete(op.seq);
        q.bodies.delete(op.seq);
        break;
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
        q.rows.clear();
        q.bodies.clear();
        q.dedup.clear();
        q.sessions.clear();
        for (const key of [...this.meta.keys()]) if (key.startsWith(`${op.qid}:`)) this.meta.delete(key);
        break;
    }
  }
}
