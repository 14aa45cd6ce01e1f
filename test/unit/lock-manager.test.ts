// The lock manager on its own, over a MemoryStore and the fake clock: a lock is honoured only while it is the
// row's current lock and before its locked-until; renewal moves the deadline and makes the old one stale; an
// expired lock is handed to the lock-ended transition once; a message locked under a session lock follows it;
// recovery clamps a lock further out than one LockDuration.

import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { createContext, type BrokerContext } from '../../src/broker/runtime/context.js';
import { LockManager } from '../../src/broker/messaging/locks.js';
import type { QueueState } from '../../src/broker/indexes/queue-state.js';
import type { MessageRow } from '../../src/broker/types.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { LOCK_MS, codeOf, makeConfig, silentLog } from './helpers.js';

interface Rig {
  ctx: BrokerContext;
  clock: FakeClock;
  store: MemoryStore;
  locks: LockManager;
  ended: ReturnType<typeof vi.fn<(q: QueueState, row: MessageRow) => Promise<void>>>;
  q: QueueState;
}

async function rig(): Promise<Rig> {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const config = makeConfig();
  // A session-enabled queue beside the plain ones.
  config.queues.push({ name: 'sq', settings: { ...config.queues[0]!.settings, requiresSession: true } });
  const ctx = createContext({ config, store, clock, log: silentLog });
  await ctx.entities.create();
  // Stands in for the lock-ended transition: the message becomes available again.
  const ended = vi.fn(async (q: QueueState, row: MessageRow) => q.makeReady(row));
  const locks = new LockManager(ctx, ended);
  ctx.scheduler.on('lock', (d) => locks.onDeadline(d));
  return { ctx, clock, store, locks, ended, q: ctx.entities.resolve('q') };
}

/** Adds an available message to `q` under `seq`. */
function addRow(q: QueueState, seq: number, now: number, sessionId?: string): MessageRow {
  const row: MessageRow = { seq, state: 'active', deliveryCount: 0, enqueuedAt: now, expiresAt: null, messageId: `m${seq}`, size: 1 };
  if (sessionId !== undefined) row.sessionId = sessionId;
  q.addRow(row);
  return row;
}

describe('LockManager', () => {
  it('take locks the row for LockDuration, counts the delivery and records the holder', async () => {
    const { locks, q, clock } = await rig();
    const row = addRow(q, 1, clock.now());
    const token = locks.take(q, row, 'conn-1/link-1');
    expect(row.state).toBe('locked');
    expect(row.deliveryCount).toBe(1);
    expect(row.lock).toEqual({ token, until: clock.now() + LOCK_MS });
    expect(locks.holderOf(token)).toBe('conn-1/link-1');
    expect(locks.current(token).row).toBe(row);
    expect(q.counts().locked).toBe(1);
  });

  it('a lock is lost at locked-until even before any expiry timer has run', async () => {
    const { locks, q, clock, ctx } = await rig();
    ctx.scheduler.stop(); // no deadline fires: only the time check can refuse the token
    const token = locks.take(q, addRow(q, 1, clock.now()));
    clock.advance(LOCK_MS - 1);
    expect(locks.find(token)?.row.seq).toBe(1);
    expect(locks.find('unknown')).toBeUndefined();
    clock.advance(1);
    expect(locks.find(token)).toBeUndefined();
    expect(await codeOf(() => locks.current(token))).toBe('LockLost');
  });

  it('refuses a current token named with another entity path, and accepts the right path in any case', async () => {
    const { locks, q, clock } = await rig();
    const token = locks.take(q, addRow(q, 1, clock.now()));
    expect(await codeOf(() => locks.current(token, 'ttlq'))).toBe('LockLost');
    expect(locks.current(token, 'Q').q).toBe(q);
  });

  it('an expired lock is released and handed to the lock-ended transition once', async () => {
    const { locks, q, clock, ended, ctx } = await rig();
    const row = addRow(q, 1, clock.now());
    const token = locks.take(q, row);
    clock.advance(LOCK_MS - 1);
    expect(ended).not.toHaveBeenCalled();
    clock.advance(1);
    expect(ended).toHaveBeenCalledTimes(1);
    expect(ended).toHaveBeenCalledWith(q, row);
    expect(ctx.counters.lockExpired).toBe(1);
    expect(locks.size).toBe(0);
    expect(locks.find(token)).toBeUndefined();
    clock.advance(LOCK_MS * 3);
    expect(ended).toHaveBeenCalledTimes(1);
  });

  it('renew moves locked-until durably and leaves the old deadline stale', async () => {
    const { locks, q, clock, ended, store } = await rig();
    const row = addRow(q, 1, clock.now());
    const token = locks.take(q, row);
    clock.advance(10_000);
    const until = await locks.renew(token);
    expect(until).toBe(clock.now() + LOCK_MS);
    expect(store.load(q.id).rows[0]?.lock).toEqual({ token, until });
    clock.advance(LOCK_MS - 10_000); // the first lock's deadline passes
    expect(ended).not.toHaveBeenCalled();
    expect(locks.current(token).row).toBe(row);
    clock.advance(10_000);
    expect(ended).toHaveBeenCalledTimes(1);
  });

  it('a renew of a released token fails with LockLost and changes nothing', async () => {
    const { locks, q, clock, ctx } = await rig();
    const row = addRow(q, 1, clock.now());
    const token = locks.take(q, row);
    const before = { ...row.lock! };
    locks.release(token);
    const deadlines = ctx.scheduler.size;
    expect(await codeOf(locks.renew(token))).toBe('LockLost');
    expect(row.lock).toEqual(before);
    expect(ctx.scheduler.size).toBe(deadlines);
  });

  it('a message taken under a held session lock is locked until the session lock ends, with no deadline of its own', async () => {
    const { locks, clock, ctx } = await rig();
    const sq = ctx.entities.resolve('sq');
    const s = sq.session('A');
    s.holder = 'recovered';
    s.lockedUntil = clock.now() + 5 * LOCK_MS;
    const deadlines = ctx.scheduler.size;
    const token = locks.take(sq, addRow(sq, 1, clock.now(), 'A'));
    expect(sq.rows.get(1)!.lock).toEqual({ token, until: s.lockedUntil });
    expect(ctx.scheduler.size).toBe(deadlines);
    // A message of a session nobody holds gets an ordinary lock.
    const other = addRow(sq, 2, clock.now(), 'B');
    locks.take(sq, other);
    expect(other.lock!.until).toBe(clock.now() + LOCK_MS);
    expect(ctx.scheduler.size).toBe(deadlines + 1);
  });

  it('recover clamps a stored lock further out than one LockDuration and expires it then', async () => {
    const { locks, q, clock, ended } = await rig();
    const row = addRow(q, 1, clock.now());
    q.setState(row, 'locked');
    row.lock = { token: 'from-before-restart', until: clock.now() + 10 * LOCK_MS };
    locks.recover(q, row, clock.now());
    expect(row.lock.until).toBe(clock.now() + LOCK_MS);
    // The old token was never issued by this process: it is not honoured.
    expect(locks.find('from-before-restart')).toBeUndefined();
    clock.advance(LOCK_MS);
    expect(ended).toHaveBeenCalledWith(q, row);
  });

  it('restore re-honours a released token until its old locked-until', async () => {
    const { locks, q, clock, ended } = await rig();
    const row = addRow(q, 1, clock.now());
    const token = locks.take(q, row);
    const until = row.lock!.until;
    locks.release(token);
    expect(locks.find(token)).toBeUndefined();
    locks.restore(q, row, token, until);
    expect(locks.current(token).row).toBe(row);
    expect(locks.holderOf(token)).toBeUndefined();
    clock.advance(LOCK_MS);
    expect(ended).toHaveBeenCalledTimes(1);
    expect(row.state).toBe('active');
  });
});
