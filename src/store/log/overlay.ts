// What the log has acknowledged and LMDB has not applied yet, as tables layered over LMDB's (docs/durability.md,
// "Reads before LMDB has applied"). Each acknowledged write is run through the same `applyOps` as LMDB will run it,
// but against these tables: a put or remove lands here, tagged with the write's LSN; a read asks here first and then
// LMDB, and a range read merges both in key order. So every derived value (held, counters, refs, sessionRows) is
// computed once, by one piece of code, and reads see exactly the state the next LMDB transactions will commit.
//
// An entry goes once LMDB has committed (and so shows to readers) a transaction through its LSN: `prune`. An entry
// written again by a later record carries the later LSN and stays until that one is applied.

import type { KeyRange, RangeKey, StoreTables, Table } from '../lmdb/dbs.js';
import { compareKeys } from '../lmdb/keys.js';
import type { MessageRow } from '../row.js';
import { copyHistory } from '../history.js';

/** Marks a key removed by a write LMDB has not applied yet. */
const GONE = Symbol('gone');

interface Entry<V, K> {
  key: K;
  value: V | typeof GONE;
  lsn: number;
}

/** One LMDB database with the unapplied writes over it. */
class OverlayTable<V, K extends RangeKey> implements Table<V, K> {
  /** Entries by key (JSON of the key: keys are numbers, strings and arrays of them), grouped by first element. */
  private readonly groups = new Map<string, Map<string, Entry<V, K>>>();
  size = 0;

  constructor(
    private readonly base: Table<V, K>,
    private readonly lsn: () => number,
    /** A copy of a value handed to a reader, so no caller can change what the overlay holds. */
    private readonly copy: (v: V) => V,
    private readonly log: PruneLog,
  ) {}

  get(key: K): V | undefined {
    const e = this.groups.get(groupOf(key))?.get(JSON.stringify(key));
    if (e) return e.value === GONE ? undefined : this.copy(e.value);
    return this.base.get(key);
  }

  put(key: K, value: V): void {
    this.set(key, value);
  }

  remove(key: K): void {
    this.set(key, GONE);
  }

  private set(key: K, value: V | typeof GONE): void {
    const group = groupOf(key);
    let g = this.groups.get(group);
    if (!g) this.groups.set(group, (g = new Map()));
    const id = JSON.stringify(key);
    const lsn = this.lsn();
    if (!g.has(id)) this.size++;
    g.set(id, { key, value, lsn });
    this.log.push({ table: this as unknown as OverlayTable<unknown, RangeKey>, id, group, lsn });
  }

  /** Drops the entry `id` if it was last written by a record at or below `lsn`. */
  drop(group: string, id: string, lsn: number): void {
    const g = this.groups.get(group);
    const e = g?.get(id);
    if (!g || !e || e.lsn > lsn) return;
    g.delete(id);
    this.size--;
    if (g.size === 0) this.groups.delete(group);
  }

  *getRange(range: KeyRange = {}): Iterable<{ key: K; value: V }> {
    const mine = this.inRange(range);
    if (mine.length === 0) {
      yield* this.base.getRange(range);
      return;
    }
    const { limit = Infinity, reverse = false } = range;
    const dir = reverse ? -1 : 1;
    const base = this.base.getRange({ ...range, limit: undefined })[Symbol.iterator]();
    let n = 0;
    let b = base.next();
    let i = 0;
    while (n < limit && (i < mine.length || !b.done)) {
      const m = mine[i];
      const c = !m ? 1 : b.done ? -1 : dir * compareKeys(m.key, b.value.key);
      if (c <= 0) {
        // The overlay's entry comes first, or replaces LMDB's value for the same key.
        i++;
        if (c === 0) b = base.next();
        if (m!.value === GONE) continue;
        yield { key: m!.key, value: this.copy(m!.value) };
      } else {
        yield b.value;
        b = base.next();
      }
      n++;
    }
  }

  *getKeys(range: KeyRange = {}): Iterable<K> {
    if (this.inRange(range).length === 0) {
      yield* this.base.getKeys(range);
      return;
    }
    for (const { key } of this.getRange(range)) yield key;
  }

  getCount(): number {
    let n = this.base.getCount();
    for (const g of this.groups.values()) {
      for (const e of g.values()) n += (e.value === GONE ? 0 : 1) - (this.base.get(e.key) === undefined ? 0 : 1);
    }
    return n;
  }

  // The overlay's entries in the range, sorted as the range reads. A group (the keys sharing a first element: one
  // queue's rows) is skipped whole when its first element lies outside the range's.
  private inRange(range: KeyRange): Entry<V, K>[] {
    if (this.size === 0) return [];
    const { start, end, reverse = false } = range;
    const lo = reverse ? end : start;
    const hi = reverse ? start : end;
    const out: Entry<V, K>[] = [];
    for (const g of this.groups.values()) {
      const any = g.values().next().value;
      if (any && Array.isArray(any.key) && !mayHold(any.key[0]!, lo, hi)) continue;
      for (const e of g.values()) {
        if (lo !== undefined) {
          const c = compareKeys(e.key, lo);
          if (reverse ? c <= 0 : c < 0) continue;
        }
        if (hi !== undefined) {
          const c = compareKeys(e.key, hi);
          if (reverse ? c > 0 : c >= 0) continue;
        }
        out.push(e);
      }
    }
    out.sort((a, b) => (reverse ? compareKeys(b.key, a.key) : compareKeys(a.key, b.key)));
    return out;
  }
}

function groupOf(key: RangeKey): string {
  return Array.isArray(key) ? JSON.stringify(key[0]) : '';
}

// Whether keys starting with `first` can lie between the range's bounds (compared on their first elements).
function mayHold(first: string | number, lo: RangeKey | undefined, hi: RangeKey | undefined): boolean {
  const lo0 = Array.isArray(lo) ? lo[0] : lo;
  const hi0 = Array.isArray(hi) ? hi[0] : hi;
  if (lo0 !== undefined && compareKeys(first, lo0) < 0) return false;
  if (hi0 !== undefined && compareKeys(first, hi0) > 0) return false;
  return true;
}

type PruneLog = { table: OverlayTable<unknown, RangeKey>; id: string; group: string; lsn: number }[];

/** The acknowledged writes LMDB has not applied yet, as tables over LMDB's that every read goes through. */
export class Overlay {
  /** LMDB's tables with the unapplied writes over them: what the store's reads and `applyOps` use. */
  readonly tables: StoreTables;
  private current = 0;
  private readonly log: PruneLog = [];
  private head = 0;

  constructor(base: StoreTables) {
    const at = (): number => this.current;
    const same = <T>(v: T): T => v;
    const t = <V, K extends RangeKey>(b: Table<V, K>, copy: (v: V) => V = same): OverlayTable<V, K> =>
      new OverlayTable<V, K>(b, at, copy, this.log);
    this.tables = {
      meta: t(base.meta, (v) => structuredClone(v)),
      rows: t(base.rows, copyRow),
      bodies: t(base.bodies),
      held: t(base.held),
      counters: t(base.counters, (v) => [v[0], v[1]]),
      refs: t(base.refs),
      sessionRows: t(base.sessionRows),
      history: t(base.history, copyHistory),
      dedup: t(base.dedup),
      sessions: t(base.sessions, (v) => ({ ...v, state: v.state && new Uint8Array(v.state) })),
    };
  }

  /** Runs `write` (which changes `tables` through `applyOps`) as the record with LSN `lsn`. */
  record(lsn: number, write: (tables: StoreTables) => void): void {
    this.current = lsn;
    write(this.tables);
  }

  /** Forgets every entry last written at or below `lsn`: LMDB has committed those records and reads show them. */
  prune(lsn: number): void {
    let i = this.head;
    while (i < this.log.length && this.log[i]!.lsn <= lsn) {
      const e = this.log[i++]!;
      e.table.drop(e.group, e.id, lsn);
    }
    this.head = i;
    if (this.head === this.log.length) {
      this.log.length = 0;
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.log.length) {
      this.log.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Keys held (for tests and diagnostics: 0 once LMDB has caught up). */
  get size(): number {
    return Object.values(this.tables).reduce((n, t: OverlayTable<unknown, RangeKey>) => n + t.size, 0);
  }
}

// A row as a reader may change it: flat but for lock, props, sys and bodyRef.
function copyRow(r: MessageRow): MessageRow {
  const row = { ...r };
  if (r.lock) row.lock = { ...r.lock };
  if (r.props) row.props = { ...r.props };
  if (r.sys) row.sys = { ...r.sys };
  if (r.bodyRef) row.bodyRef = [r.bodyRef[0], r.bodyRef[1]];
  return row;
}
