// The manual clock on its own: time stands still until advance(), which fires timers in deadline order, lets each
// one's effects settle before the next, and runs concurrent advances one after another. Config refuses anything but
// "system" or "manual" with one line naming the key.

import { describe, expect, it } from 'vitest';
import { ManualClock, waitTimer } from '../../src/broker/runtime/clock.js';
import { parseConfig } from '../../src/config/load.js';

describe('ManualClock', () => {
  it('stands still until advanced, then fires due timers in deadline order at their own time', async () => {
    const clock = new ManualClock(1_000);
    const seen: [string, number][] = [];
    clock.setTimer(() => seen.push(['b', clock.now()]), 200);
    clock.setTimer(() => seen.push(['a', clock.now()]), 100);
    clock.setTimer(() => seen.push(['late', clock.now()]), 10_000);
    await new Promise((r) => setTimeout(r, 20));
    expect(clock.now()).toBe(1_000);
    expect(await clock.advance(500)).toBe(1_500);
    expect(seen).toEqual([
      ['a', 1_100],
      ['b', 1_200],
    ]);
  });

  it('waits for one timer\'s effects before the next falls due, so a timer armed on the way fires in the same advance', async () => {
    const clock = new ManualClock(0);
    const order: string[] = [];
    let pending: Promise<void> = Promise.resolve();
    clock.settle = () => pending;
    clock.setTimer(() => {
      // The work this deadline starts (a write) arms a later deadline only when it completes.
      pending = new Promise((r) => setTimeout(r, 30)).then(() => {
        order.push('first done');
        clock.setTimer(() => order.push(`second at ${clock.now()}`), 100);
      });
    }, 100);
    clock.setTimer(() => order.push(`third at ${clock.now()}`), 150);
    await clock.advance(1_000);
    expect(order).toEqual(['first done', 'third at 150', 'second at 200']);
  });

  it('runs concurrent advances one after another and refuses a bad amount', async () => {
    const clock = new ManualClock(0);
    const [a, b] = await Promise.all([clock.advance(10), clock.advance(20)]);
    expect([a, b]).toEqual([10, 30]);
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
    await expect(clock.advance(Number.POSITIVE_INFINITY)).rejects.toThrow(/finite number/);
    expect(clock.now()).toBe(30);
  });

  it('keeps real-time waits on the wall clock', async () => {
    const clock = new ManualClock(0);
    const fired = await new Promise<boolean>((resolve) => {
      waitTimer(clock, () => resolve(true), 10);
      setTimeout(() => resolve(false), 2_000);
    });
    expect(fired).toBe(true);
    expect(clock.now()).toBe(0);
  });
});

describe('Broker.Clock and Broker.Faults in the config', () => {
  const config = (broker: Record<string, unknown>): string =>
    JSON.stringify({ UserConfig: { Namespaces: [{ Name: 'ns', Queues: [] }] }, Broker: broker });

  it('are off unless turned on', () => {
    const c = parseConfig(config({}), 'test');
    expect(c.broker.clock).toBeUndefined();
    expect(c.broker.faults).toBeUndefined();
    const on = parseConfig(config({ Clock: 'manual', Faults: true }), 'test');
    expect(on.broker.clock).toBe('manual');
    expect(on.broker.faults).toBe(true);
  });

  it('refuse a value out of range with one line naming the key', () => {
    expect(() => parseConfig(config({ Clock: 'fast' }), 'test')).toThrow(/Broker\.Clock.*"system", "manual"/);
    expect(() => parseConfig(config({ Faults: 'yes' }), 'test')).toThrow(/Broker\.Faults.*true or false/);
  });
});
