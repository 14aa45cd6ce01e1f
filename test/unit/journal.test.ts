// The journal on its own, over a MemoryStore: group commit (one store write per task), answers only after the
// commit, failures rejected as StoreUnavailable, a store that failed for good stops the broker exactly once,
// drain waits for writes in flight, and each commit's waits (queueing, log flush) are reported.

import { describe, expect, it, vi } from 'vitest';
import { BrokerError } from '../../src/broker/errors.js';
import { Journal } from '../../src/broker/runtime/journal.js';
import type { MessageRow } from '../../src/broker/types.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { codeOf, silentLog } from './helpers.js';

function row(seq: number): MessageRow {
  return { seq, state: 'active', deliveryCount: 0, enqueuedAt: 0, expiresAt: null, messageId: `m${seq}`, size: 1 };
}

function fatal(): Error {
  const err = new Error('disk gone');
  err.name = 'StoreFatalError';
  return err;
}

describe('Journal', () => {
  it('joins every plan of one task into one store write, and resolves only once it is committed', async () => {
    const store = new MemoryStore();
    const write = vi.spyOn(store, 'write');
    const journal = new Journal(store, silentLog);
    let committed = 0;
    const a = journal.run({ ops: [{ op: 'put', qid: 1, row: row(1), body: new Uint8Array([1]) }] }).then(() => committed++);
    const b = journal.run({ ops: [{ op: 'put', qid: 1, row: row(2), body: new Uint8Array([2]) }] }).then(() => committed++);
    expect(write).not.toHaveBeenCalled(); // gathered until the end of the task
    await Promise.resolve();
    expect(committed).toBe(0);
    await Promise.all([a, b]);
    expect(write).toHaveBeenCalledTimes(1);
    expect(write.mock.calls[0]![0]).toHaveLength(2);
    expect(store.load(1).rows.map((r) => r.seq)).toEqual([1, 2]);
  });

  it('runs a plan: applies it once durable, undoes it (and rejects) when the commit fails; reports each commit', async () => {
    const store = new MemoryStore();
    const commits: { ops: number; ms: number }[] = [];
    const journal = new Journal(store, silentLog, undefined, (c) => commits.push(c));
    const seen: string[] = [];
    const ops = [{ op: 'put' as const, qid: 1, row: row(1), body: new Uint8Array([1]) }];
    expect(await journal.run({ ops, applied: () => (seen.push('applied'), 7), undo: () => seen.push('undone') })).toBe(7);
    store.failWrites = new Error('EIO');
    expect(await codeOf(journal.run({ ops, applied: () => seen.push('applied'), undo: () => seen.push('undone') }))).toBe('StoreUnavailable');
    expect(seen).toEqual(['applied', 'undone']);
    expect(commits).toHaveLength(1); // the failed one is not a commit
    expect(commits[0]!.ops).toBe(1);
    expect(commits[0]!.ms).toBeGreaterThanOrEqual(0);
  });

  it('gives plans of separate tasks separate store writes', async () => {
    const store = new MemoryStore();
    const write = vi.spyOn(store, 'write');
    const journal = new Journal(store, silentLog);
    await journal.run({ ops: [{ op: 'put', qid: 1, row: row(1), body: new Uint8Array([1]) }] });
    await journal.run({ ops: [{ op: 'delete', qid: 1, seq: 1 }] });
    expect(write).toHaveBeenCalledTimes(2);
    expect(store.load(1).rows).toEqual([]);
  });

  it('rejects every plan of a failed write with StoreUnavailable and keeps running after a transient failure', async () => {
    const store = new MemoryStore();
    const onFatal = vi.fn();
    const journal = new Journal(store, silentLog, onFatal);
    store.failWrites = new Error('EIO');
    const a = journal.run({ ops: [{ op: 'put', qid: 1, row: row(1), body: new Uint8Array([1]) }] });
    const b = journal.run({ ops: [{ op: 'put', qid: 1, row: row(2), body: new Uint8Array([2]) }] });
    expect(await codeOf(a)).toBe('StoreUnavailable');
    expect(await codeOf(b)).toBe('StoreUnavailable');
    expect(onFatal).not.toHaveBeenCalled();
    expect(journal.stopping).toBe(false);
    store.failWrites = null;
    await journal.run({ ops: [{ op: 'put', qid: 1, row: row(3), body: new Uint8Array([3]) }] });
    expect(store.load(1).rows.map((r) => r.seq)).toEqual([3]);
  });

  it('stops taking work and reports a store that can never commit again exactly once', async () => {
    const store = new MemoryStore();
    const onFatal = vi.fn();
    const journal = new Journal(store, silentLog, onFatal);
    store.failWrites = fatal();
    expect(await codeOf(journal.run({ ops: [{ op: 'delete', qid: 1, seq: 1 }] }))).toBe('StoreUnavailable');
    expect(await codeOf(journal.run({ ops: [{ op: 'delete', qid: 1, seq: 2 }] }))).toBe('StoreUnavailable');
    expect(onFatal).toHaveBeenCalledTimes(1);
    expect(journal.stopping).toBe(true);
    expect(() => journal.assertRunning()).toThrow(BrokerError);
    expect(await codeOf(() => journal.assertRunning())).toBe('ShuttingDown');
  });

  it('does not report a fatal store error once the broker is already stopping', async () => {
    const store = new MemoryStore();
    const onFatal = vi.fn();
    const journal = new Journal(store, silentLog, onFatal);
    journal.stop();
    store.failWrites = fatal();
    expect(await codeOf(journal.run({ ops: [{ op: 'delete', qid: 1, seq: 1 }] }))).toBe('StoreUnavailable');
    expect(onFatal).not.toHaveBeenCalled();
  });

  it('drain waits for writes in flight, including ones issued while it waits', async () => {
    const store = new MemoryStore();
    const journal = new Journal(store, silentLog);
    const landed: number[] = [];
    void journal.run({ ops: [{ op: 'put', qid: 1, row: row(1), body: new Uint8Array([1]) }] }).then(() => {
      landed.push(1);
      void journal.run({ ops: [{ op: 'put', qid: 1, row: row(2), body: new Uint8Array([2]) }] }).then(() => landed.push(2));
    });
    await journal.drain();
    expect(landed).toEqual([1, 2]);
    expect(store.load(1).rows.map((r) => r.seq)).toEqual([1, 2]);
  });

  it('reports a commit\'s waits on its clock: queueing up to the log write the store stamped, and that flush', async () => {
    const store = new MemoryStore();
    const write = store.write.bind(store);
    // A logging store fills the stamp: its flush began 4 ms after the first plan and took 3 ms.
    vi.spyOn(store as Store, 'write').mockImplementation((ops, stamp) => {
      if (stamp) Object.assign(stamp, { flushAt: 104, flushMs: 3 });
      return write(ops);
    });
    const commits: unknown[] = [];
    const journal = new Journal(store, silentLog, undefined, (c) => commits.push(c));
    const now = vi.spyOn(performance, 'now').mockReturnValueOnce(100).mockReturnValueOnce(110);
    try {
      await Promise.all([1, 2].map((seq) => journal.run({ ops: [{ op: 'put', qid: 1, row: row(seq), body: new Uint8Array([seq]) }] })));
    } finally {
      now.mockRestore();
    }
    expect(commits).toEqual([{ ops: 2, ms: 10, queuedMs: 4, flushMs: 3 }]);
  });

  it('reports no waits from a store without a log (it stamps nothing)', async () => {
    const commits: { queuedMs: number; flushMs: number }[] = [];
    const journal = new Journal(new MemoryStore(), silentLog, undefined, (c) => commits.push(c));
    await journal.run({ ops: [{ op: 'put', qid: 1, row: row(1), body: new Uint8Array([1]) }] });
    expect(commits).toHaveLength(1);
    expect(commits[0]!.queuedMs).toBeNaN();
    expect(commits[0]!.flushMs).toBeNaN();
  });
});
