// Clock jumps (docs/architecture.md, "Deadlines and the clock"). Running process: the broker's clock is wall time read
// once plus monotonic time since, so a wall-clock jump moves no lock. Across a restart only wall time exists: a
// persisted locked-until further out than one LockDuration (the clock went back while the broker was down) is clamped
// to now + LockDuration, and a jump forward expires the locks at start. Unit level, on the FakeClock.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock, SystemClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { Harness, LOCK_MS, flush } from '../unit/helpers.js';
import { emit } from '../helpers/fault.js';

const HOUR = 3_600_000;
const LOCKS = 1_000;

afterEach(() => vi.restoreAllMocks());

/** Locks LOCKS messages on a broker whose clock is `clock`; returns the harness and the consumer. */
async function lockMany(store: MemoryStore, clock: FakeClock) {
  const h = await Harness.start(store, clock);
  const a = h.attach('q', LOCKS).consumer;
  await h.send('q', ...Array.from({ length: LOCKS }, (_, i) => `m${i}`));
  expect(a.deliveries).toHaveLength(LOCKS);
  return h;
}

describe('clock jumps', () => {
  it('a running broker ignores wall-clock jumps (SystemClock is monotonic after start)', () => {
    const clock = new SystemClock();
    const before = clock.now();
    const real = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(real + HOUR);
    const forward = clock.now() - before;
    vi.spyOn(Date, 'now').mockReturnValue(real - HOUR);
    const back = clock.now() - before;
    expect(forward).toBeLessThan(1_000);
    expect(back).toBeGreaterThanOrEqual(0);
    expect(back).toBeLessThan(1_000);
  });

  it('after a restart with the wall clock 1 h back, locks end within one LockDuration', async () => {
    const store = new MemoryStore();
    const t0 = Date.UTC(2026, 0, 1);
    const h = await lockMany(store, new FakeClock(t0));
    await h.broker.stop();
    const back = new FakeClock(t0 - HOUR);
    const h2 = new Harness(store, back);
    await h2.boot();
    const c = h2.attach('q', LOCKS).consumer;
    await flush();
    const early = c.deliveries.length;
    await h2.advance(LOCK_MS - 1);
    const beforeDuration = c.deliveries.length;
    await h2.advance(1);
    const atDuration = c.deliveries.length;
    // Without the clamp these would stay locked for another hour.
    emit({ test: 'clock-jumps', runs: LOCKS, case: 'restart -1h', early, beforeDuration, atDuration, heldBeyondDuration: LOCKS - atDuration });
    expect(early).toBe(0);
    expect(beforeDuration).toBe(0);
    expect(atDuration).toBe(LOCKS);
  });

  it('after a restart with the wall clock 1 h forward, every lock has expired at start', async () => {
    const store = new MemoryStore();
    const t0 = Date.UTC(2026, 0, 1);
    const h = await lockMany(store, new FakeClock(t0));
    await h.broker.stop();
    const h2 = new Harness(store, new FakeClock(t0 + HOUR));
    await h2.boot();
    const c = h2.attach('q', LOCKS).consumer;
    await h2.advance(1);
    emit({ test: 'clock-jumps', runs: LOCKS, case: 'restart +1h', redeliveredAtStart: c.deliveries.length });
    expect(c.deliveries).toHaveLength(LOCKS);
    expect(c.deliveries.every((d) => d.row.deliveryCount === 2)).toBe(true);
  });
});
