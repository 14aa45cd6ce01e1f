// The explorer's ring buffer on a fake clock: samples depth and event counts per interval, keeps only the
// window, sums the namespace, ranks the busiest entities and frees the ring of an entity idle for a window.

import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { BrokerEventMap } from '../../src/broker/broker.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { History, type HistorySource } from '../../src/http/history.js';

type Counts = ReturnType<HistorySource['counts']>[number];
const zero = (path: string): Counts => ({ path, active: 0, locked: 0, scheduled: 0, deferred: 0, deadLettered: 0 });

function setup(spanMs = 60_000) {
  const clock = new FakeClock();
  const events = new EventEmitter<BrokerEventMap>();
  const counts = new Map<string, Counts>([
    ['orders', zero('orders')],
    ['jobs', zero('jobs')],
  ]);
  const history = new History({ counts: () => [...counts.values()], events }, clock, { intervalMs: 10_000, spanMs });
  history.start();
  return { clock, events, counts, history };
}

describe('explorer history ring buffer', () => {
  it('samples depth by state and counts events per interval, one sample every interval', () => {
    const { clock, events, counts, history } = setup();
    events.emit('sent', { entity: 'orders', count: 3, ms: 1 });
    events.emit('delivered', { entity: 'orders', deliveryCount: 1 });
    events.emit('settled', { entity: 'orders', kind: 'complete', ms: 1 });
    events.emit('settled', { entity: 'orders', kind: 'abandon', ms: 1 });
    events.emit('settled', { entity: 'orders', kind: 'defer', ms: 1 });
    events.emit('deadLettered', { entity: 'orders', reason: 'x' });
    events.emit('lockExpired', { entity: 'orders' });
    counts.set('orders', { ...zero('orders'), active: 2, locked: 1, deadLettered: 1 });
    clock.advance(9_999);
    expect(history.entity('orders').times).toEqual([]); // no sample before the first interval ends
    clock.advance(1);
    clock.advance(10_000); // a second, quiet interval
    const h = history.entity('orders');
    expect(h.times).toEqual([clock.now() - 10_000, clock.now()]);
    expect(h.series.sent).toEqual([3, 0]);
    expect(h.series.delivered).toEqual([1, 0]);
    expect(h.series.completed).toEqual([1, 0]);
    expect(h.series.abandoned).toEqual([1, 0]);
    expect(h.series.deadLetterings).toEqual([1, 0]);
    expect(h.series.lockExpiries).toEqual([1, 0]);
    expect(h.series.active).toEqual([2, 2]); // depth is read at each sample
    expect(h.series.locked).toEqual([1, 1]);
    expect(h.series.deadLettered).toEqual([1, 1]);
    expect(history.entity('jobs').series.sent).toEqual([0, 0]);
  });

  it('keeps only the window, oldest sample first', () => {
    const { clock, events, history } = setup(30_000); // three slots
    for (let i = 1; i <= 5; i++) {
      events.emit('sent', { entity: 'orders', count: i, ms: 1 });
      clock.advance(10_000);
    }
    const h = history.entity('orders');
    expect(h.series.sent).toEqual([3, 4, 5]);
    expect(h.times).toEqual([clock.now() - 20_000, clock.now() - 10_000, clock.now()]);
  });

  it('sums the namespace (topic sends included) and ranks the busiest entities', () => {
    const { clock, events, counts, history } = setup();
    events.emit('sent', { entity: 'orders', count: 2, ms: 1 });
    events.emit('sent', { entity: 'events-topic', count: 5, ms: 1 });
    counts.set('jobs', { ...zero('jobs'), active: 7 });
    clock.advance(10_000);
    const ns = history.namespace();
    expect(ns.series.sent).toEqual([7]);
    expect(ns.series.active).toEqual([7]);
    expect(history.busiest()).toEqual([
      { path: 'events-topic', traffic: 5, depth: 0 },
      { path: 'orders', traffic: 2, depth: 0 },
      { path: 'jobs', traffic: 0, depth: 7 },
    ]);
  });

  it('keeps no ring for an idle entity and frees one idle for a whole window', () => {
    const { clock, events, history } = setup(30_000);
    clock.advance(10_000);
    expect(history.kept).toBe(0); // two idle queues cost nothing
    expect(history.entity('orders').series.active).toEqual([0]);
    events.emit('sent', { entity: 'orders', count: 1, ms: 1 });
    clock.advance(10_000);
    expect(history.kept).toBe(1);
    clock.advance(20_000);
    expect(history.kept).toBe(1); // still inside the window
    clock.advance(10_000);
    expect(history.kept).toBe(0);
    expect(history.entity('orders').series.sent).toEqual([0, 0, 0]);
  });

  it('keeps the last ten minutes at full resolution and the rest of the hour as one sample a minute', () => {
    const { clock, events, counts, history } = setup(3_600_000);
    for (let t = 1; t <= 400; t++) {
      events.emit('sent', { entity: 'orders', count: 6, ms: 1 });
      counts.set('orders', { ...zero('orders'), active: t });
      clock.advance(10_000);
    }
    const h = history.entity('orders');
    expect(h.times).toHaveLength(50 + 60);
    const gaps = h.times.slice(1).map((t, i) => t - h.times[i]!);
    expect(gaps.slice(0, 49).every((g) => g === 60_000)).toBe(true); // one a minute
    expect(gaps.slice(-59).every((g) => g === 10_000)).toBe(true); // one every interval
    expect(h.times[0]).toBeGreaterThanOrEqual(clock.now() - 3_600_000);
    expect(h.series.sent.every((v) => v === 6)).toBe(true); // a minute's mean per interval
    expect(h.series.active[0]).toBe(42); // the largest depth of its minute (ticks 37..42)
    expect(h.series.active.at(-1)).toBe(400);
    // Every event shown is counted once: 50 minutes of 36 sends and 60 intervals of 6.
    expect(history.busiest()[0]).toEqual({ path: 'orders', traffic: 50 * 36 + 60 * 6, depth: 400 });
  });

  it('holds a busy entity in a few KB: 16-bit cells, widened to 32 bits when a value needs it', () => {
    const { clock, counts, history } = setup(3_600_000);
    counts.set('orders', { ...zero('orders'), active: 5 });
    clock.advance(10_000);
    expect(history.bytesOf('orders')).toBe((60 + 61) * 11 * 2); // 2,662 bytes
    expect(history.bytesOf('jobs')).toBe(0); // idle: no ring
    counts.set('orders', { ...zero('orders'), active: 70_000 });
    clock.advance(10_000);
    expect(history.bytesOf('orders')).toBe((60 + 61) * 11 * 4); // 5,324 bytes
    expect(history.entity('orders').series.active).toEqual([5, 70_000]); // nothing lost in the widening
  });

  it('stops sampling and following events on stop', () => {
    const { clock, events, history } = setup();
    history.stop();
    events.emit('sent', { entity: 'orders', count: 1, ms: 1 });
    clock.advance(60_000);
    expect(history.namespace().times).toEqual([]);
    history.sample();
    expect(history.namespace().series.sent).toEqual([0]);
  });
});
