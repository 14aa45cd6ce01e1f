// The waits a logged store reports (issue 37, item 6), on a fake clock: a write's stamp carries its log flush's
// start and length, and LMDB's apply lag is told once per flushed group of records, with the group's size.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LoggedStore } from '../../src/store/log/logged-store.js';
import type { WriteStamp } from '../../src/store/store.js';
import { row } from './contract.js';

const dirs: string[] = [];
const stores: LoggedStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A store whose clock answers the given readings in order (and fails the test if it is read more often). */
async function storeOnClock(readings: number[]): Promise<{ store: LoggedStore; left: () => number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-waits-'));
  dirs.push(dir);
  const now = (): number => {
    const t = readings.shift();
    if (t === undefined) throw new Error('the clock was read more often than the test expects');
    return t;
  };
  // A long apply interval: LMDB applies only when the test asks (applied()), so the batch holds both flushes.
  const store = new LoggedStore({ path: dir, log: { segmentBytes: 1024 * 1024 }, applyMs: 60_000, now });
  await store.open();
  stores.push(store);
  return { store, left: () => readings.length };
}

const put = (seq: number): Parameters<LoggedStore['write']>[0] => [{ op: 'put', qid: 1, row: row(seq), body: new Uint8Array([seq]) }];
const stamp = (): WriteStamp => ({ flushAt: NaN, flushMs: NaN });

describe('LoggedStore waits', () => {
  it('stamps each write with its flush, and tells the apply lag once per flushed group with its record count', async () => {
    // Flush 1 (two writes of one turn) from 10 to 13; flush 2 from 20 to 21; LMDB's apply of both ends at 40.
    const { store, left } = await storeOnClock([10, 13, 20, 21, 40]);
    const lags: [number, number][] = [];
    store.observeWaits({ applied: (ms, records) => lags.push([ms, records]) });
    const [a, b, c] = [stamp(), stamp(), stamp()];
    await Promise.all([store.write(put(1), a), store.write(put(2), b)]);
    await store.write(put(3), c);
    expect([a, b, c]).toEqual([{ flushAt: 10, flushMs: 3 }, { flushAt: 10, flushMs: 3 }, { flushAt: 20, flushMs: 1 }]);
    expect(lags).toEqual([]); // LMDB has not applied them yet
    await store.applied();
    expect(lags).toEqual([[27, 2], [19, 1]]);
    expect(left()).toBe(0);
    expect(store.readRow(1, 3)?.seq).toBe(3);
  });

  it('writes without a stamp or an observer as before', async () => {
    const { store } = await storeOnClock([5, 6, 9]);
    await store.write(put(1));
    await store.applied();
    expect(store.load(1).rows.map((r) => r.seq)).toEqual([1]);
  });
});
