// Turns StoreOps into LMDB puts and removes. Inside an lmdb-js transaction callback `put`/`remove` are applied to the
// open write transaction synchronously (lmdb-js write.js: `if (writeTxn)` writes into the txn, no separate batch),
// so every op of one write() lands in the same commit.

import type { StoreOp } from '../store.js';
import type { LmdbDbs } from './env.js';
import { dedupKey, entityDefKey, entityMetaKey, sessionKey, messageKey, nextSeqKey, queueEnd, queueStart } from './keys.js';

/** Copies what the caller could still mutate, so the bytes committed later are the ones passed to write() now. */
export function stageOps(ops: StoreOp[]): StoreOp[] {
  return ops.map((op): StoreOp => {
    switch (op.op) {
      case 'put': {
        // Rows are flat but for lock, props and sys: a copy of those is a full copy, far cheaper than
        // structuredClone on the hot path (every lock, settlement and send writes a row).
        const r = op.row;
        const row = { ...r };
        if (r.lock) row.lock = { ...r.lock };
        if (r.props) row.props = { ...r.props };
        if (r.sys) row.sys = { ...r.sys };
        const staged: StoreOp = { op: 'put', qid: op.qid, row };
        // A copy, not a view: the caller's bytes may sit in a reused network buffer.
        if (op.body) staged.body = new Uint8Array(op.body);
        return staged;
      }
      case 'delete':
      case 'nextSeq':
      case 'dedup':
      case 'undedup':
        return { ...op };
      case 'meta':
        return { ...op, value: structuredClone(op.value) };
      case 'session':
        return { ...op, record: op.record && { ...op.record, state: op.record.state && new Uint8Array(op.record.state) } };
      case 'entity':
        return { ...op, record: structuredClone(op.record) };
      case 'clear':
        return { ...op };
      case 'sharedBody':
        return { ...op, body: new Uint8Array(op.body) };
    }
  });
}

/** Applies `ops` in order. Runs inside a store write transaction. */
export function applyOps(dbs: LmdbDbs, ops: StoreOp[]): void {
  for (const op of ops) {
    switch (op.op) {
      case 'put': {
        const { qid, row } = op;
        const key = messageKey(qid, row.seq);
        dbs.rows.put(key, row);
        if (op.body) dbs.bodies.put(key, op.body);
        break;
      }
      case 'delete': {
        const key = messageKey(op.qid, op.seq);
        dbs.rows.remove(key);
        dbs.bodies.remove(key);
        break;
      }
      case 'nextSeq': {
        // A high-water mark: reads inside the transaction see its own earlier writes, so max() is race-free.
        const key = nextSeqKey(op.qid);
        const stored = dbs.meta.get(key);
        if (typeof stored !== 'number' || op.nextSeq > stored) dbs.meta.put(key, op.nextSeq);
        break;
      }
      case 'dedup':
        dbs.dedup.put(dedupKey(op.qid, op.key), op.until);
        break;
      case 'undedup':
        dbs.dedup.remove(dedupKey(op.qid, op.key));
        break;
      case 'meta':
        if (op.value === null || op.value === undefined) dbs.meta.remove(entityMetaKey(op.qid, op.key));
        else dbs.meta.put(entityMetaKey(op.qid, op.key), op.value);
        break;
      case 'session':
        if (op.record) dbs.sessions.put(sessionKey(op.qid, op.sessionId), op.record);
        else dbs.sessions.remove(sessionKey(op.qid, op.sessionId));
        break;
      case 'entity':
        if (op.record) dbs.meta.put(entityDefKey(op.path), op.record);
        else dbs.meta.remove(entityDefKey(op.path));
        break;
      case 'clear':
        clearQueue(dbs, op.qid);
        break;
      case 'sharedBody':
        // Reference counting comes with the store layout that keeps counters; until then the body stays.
        dbs.bodies.put(messageKey(op.qid, op.seq), op.body);
        break;
    }
  }
}

// Removes every key of one entity inside the open write transaction (reads there see its own writes). Keys are
// collected first: removing while a range iterator is open is not something lmdb-js promises to support.
function clearQueue(dbs: LmdbDbs, qid: number): void {
  const range = { start: queueStart(qid), end: queueEnd(qid) };
  for (const key of [...dbs.rows.getKeys(range)]) {
    dbs.rows.remove(key);
    dbs.bodies.remove(key);
  }
  for (const key of [...dbs.dedup.getKeys({ start: [qid], end: [qid + 1] })]) dbs.dedup.remove(key);
  for (const key of [...dbs.sessions.getKeys({ start: [qid], end: [qid + 1] })]) dbs.sessions.remove(key);
  for (const key of [...dbs.meta.getKeys({ start: ['entity', qid], end: ['entity', qid + 1] })]) dbs.meta.remove(key);
}
