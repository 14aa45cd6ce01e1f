// Turns StoreOps into LMDB puts and removes. Inside an lmdb-js transaction callback `put`/`remove` are applied to the
// open write transaction synchronously (lmdb-js write.js: `if (writeTxn)` writes into the txn, no separate batch),
// so every op of one write() lands in the same commit. The derived databases (`held`, `counters`, `refs`,
// `sessionRows`) are kept in that same transaction, from the old row read there, so they can never disagree with the
// rows after a crash.

import type { StoreOp } from '../store.js';
import type { StoreTables } from './dbs.js';
import type { MessageRow } from '../row.js';
import { copyHistory } from '../history.js';
import { countersKey, dedupKey, entityDefKey, entityMetaKey, sessionKey, messageKey, nextSeqKey, queueEnd, queueStart, sessionRowKey } from './keys.js';

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
        if (r.bodyRef) row.bodyRef = [r.bodyRef[0], r.bodyRef[1]];
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
      case 'history':
        return { ...op, record: op.record && copyHistory(op.record) };
      case 'sharedBody':
        return { ...op, body: new Uint8Array(op.body) };
    }
  });
}

/**
 * What one write changes in bulk, settled after its last op: counter deltas per queue (one read and one put per
 * queue, not per row) and the shared bodies whose count may have reached zero. Freeing only at the end makes the
 * order of ops inside a write irrelevant: a dead-letter may delete the original before it puts the copy that
 * names the same body.
 */
interface WriteEffects {
  counters: Map<number, [number, number]>;
  mayFree: Map<string, [number, number]>;
}

/** Applies `ops` in order. Runs inside a store write transaction. */
export function applyOps(dbs: StoreTables, ops: StoreOp[]): void {
  const fx: WriteEffects = { counters: new Map(), mayFree: new Map() };
  for (const op of ops) {
    switch (op.op) {
      case 'put':
        putRow(dbs, fx, op.qid, op.row, op.body);
        break;
      case 'delete':
        deleteRow(dbs, fx, op.qid, op.seq);
        break;
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
        clearQueue(dbs, fx, op.qid);
        break;
      case 'history':
        if (op.record) dbs.history.put(messageKey(op.qid, op.seq), op.record);
        else dbs.history.remove(messageKey(op.qid, op.seq));
        break;
      case 'sharedBody': {
        const key = messageKey(op.qid, op.seq);
        dbs.bodies.put(key, op.body);
        // Written again (it never is today), it keeps its count; new, it starts at zero until rows name it,
        // and is freed at the end of this write if none did.
        if (dbs.refs.get(key) === undefined) dbs.refs.put(key, 0);
        fx.mayFree.set(`${op.qid}:${op.seq}`, key);
        break;
      }
    }
  }
  settle(dbs, fx);
}

// A row's body is decided when the row is first stored: its own (a put with `body`), or a reference to a shared
// body (a put without one, naming `bodyRef`). A later put without a body keeps that choice whatever the caller's
// row says, so the reference count is always the number of stored rows naming the body; a later put with a body
// gives the row its own and drops the reference.
function putRow(dbs: StoreTables, fx: WriteEffects, qid: number, row: MessageRow, body: Uint8Array | undefined): void {
  const key = messageKey(qid, row.seq);
  const old = dbs.rows.get(key);
  if (body) {
    delete row.bodyRef;
    if (old?.bodyRef) unref(dbs, fx, old.bodyRef);
  } else if (old) {
    if (old.bodyRef) row.bodyRef = old.bodyRef;
    else delete row.bodyRef;
  } else if (row.bodyRef) {
    const ref = messageKey(row.bodyRef[0], row.bodyRef[1]);
    const refs = dbs.refs.get(ref);
    // A body that is not stored cannot be named: the row is kept without it rather than pointing nowhere.
    if (refs === undefined) delete row.bodyRef;
    else dbs.refs.put(ref, refs + 1);
  }
  dbs.rows.put(key, row);
  if (body) dbs.bodies.put(key, body);
  const wasHeld = old !== undefined && old.state !== 'active';
  const isHeld = row.state !== 'active';
  if (isHeld && !wasHeld) dbs.held.put(key, true);
  else if (wasHeld && !isHeld) dbs.held.remove(key);
  // A row's session never changes, so its index entry is written once, with the row's first insert.
  if (!old && row.sessionId !== undefined) dbs.sessionRows.put(sessionRowKey(qid, row.sessionId, row.seq), true);
  count(fx, qid, old ? 0 : 1, row.size - (old?.size ?? 0));
}

function deleteRow(dbs: StoreTables, fx: WriteEffects, qid: number, seq: number): void {
  const key = messageKey(qid, seq);
  const old = dbs.rows.get(key);
  // A row's history goes with it, in the same transaction.
  dbs.history.remove(key);
  // Deleting what is not there is not an error (a settle racing an expiry must not fail the batch).
  if (!old) return;
  dbs.rows.remove(key);
  // A row naming a shared body never has its own (putRow), so there is nothing under its key to remove.
  if (old.bodyRef) unref(dbs, fx, old.bodyRef);
  else dbs.bodies.remove(key);
  if (old.state !== 'active') dbs.held.remove(key);
  if (old.sessionId !== undefined) dbs.sessionRows.remove(sessionRowKey(qid, old.sessionId, seq));
  count(fx, qid, -1, -old.size);
}

function unref(dbs: StoreTables, fx: WriteEffects, bodyRef: [number, number]): void {
  const ref = messageKey(bodyRef[0], bodyRef[1]);
  const refs = dbs.refs.get(ref);
  if (refs === undefined) return;
  dbs.refs.put(ref, refs - 1);
  if (refs <= 1) fx.mayFree.set(`${ref[0]}:${ref[1]}`, ref);
}

function count(fx: WriteEffects, qid: number, rows: number, bytes: number): void {
  const c = fx.counters.get(qid);
  if (c) {
    c[0] += rows;
    c[1] += bytes;
  } else fx.counters.set(qid, [rows, bytes]);
}

// The end of a write: counters moved by their net change, and shared bodies no stored row names any more removed.
function settle(dbs: StoreTables, fx: WriteEffects): void {
  for (const [qid, [rows, bytes]] of fx.counters) {
    if (rows === 0 && bytes === 0) continue;
    const key = countersKey(qid);
    const [n, b] = dbs.counters.get(key) ?? [0, 0];
    if (n + rows <= 0) dbs.counters.remove(key);
    else dbs.counters.put(key, [n + rows, b + bytes]);
  }
  for (const ref of fx.mayFree.values()) {
    const refs = dbs.refs.get(ref);
    if (refs === undefined || refs > 0) continue;
    dbs.refs.remove(ref);
    dbs.bodies.remove(ref);
  }
}

// Removes every row of one entity, with its body (or its reference to a shared one), its held entry and its
// counters, and the entity's dedup entries, sessions and named values, inside the open write transaction (reads
// there see its own writes). Keys are collected first: removing while a range iterator is open is not something
// lmdb-js promises to support. Shared bodies stored under this entity's own keys (a topic's) are not rows and
// stay: they go with the last subscription copy that names them.
function clearQueue(dbs: StoreTables, fx: WriteEffects, qid: number): void {
  const range = { start: queueStart(qid), end: queueEnd(qid) };
  const rows: [[number, number], [number, number] | undefined][] = [];
  for (const { key, value } of dbs.rows.getRange(range)) rows.push([key, value.bodyRef]);
  for (const [key, bodyRef] of rows) {
    dbs.rows.remove(key);
    dbs.bodies.remove(key);
    if (bodyRef) unref(dbs, fx, bodyRef);
  }
  for (const key of [...dbs.held.getKeys(range)]) dbs.held.remove(key);
  for (const key of [...dbs.history.getKeys(range)]) dbs.history.remove(key);
  for (const key of [...dbs.sessionRows.getKeys(range)]) dbs.sessionRows.remove(key);
  dbs.counters.remove(countersKey(qid));
  fx.counters.delete(qid);
  for (const key of [...dbs.dedup.getKeys({ start: [qid], end: [qid + 1] })]) dbs.dedup.remove(key);
  for (const key of [...dbs.sessions.getKeys({ start: [qid], end: [qid + 1] })]) dbs.sessions.remove(key);
  for (const key of [...dbs.meta.getKeys({ start: ['entity', qid], end: ['entity', qid + 1] })]) dbs.meta.remove(key);
}
