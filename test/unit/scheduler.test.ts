// The scheduler on its own with the fake clock: deadlines fall due in time order, each to the handler registered
// for its kind; nothing fires early, after stop, or twice.

import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { Scheduler, type Deadline } from '../../src/broker/runtime/scheduler.js';

describe('Scheduler', () => {
  it('hands each due deadline, earliest first, to the handler of its kind', () => {
    const clock = new FakeClock();
    const s = new Scheduler(clock);
    const seen: string[] = [];
    s.on('lock', (d) => seen.push(`lock ${d.seq}`));
    s.on('ttl', (d) => seen.push(`ttl ${d.seq}`));
    const t0 = clock.now();
    s.add({ at: t0 + 300, kind: 'ttl', qid: 1, seq: 3 });
    s.add({ at: t0 + 100, kind: 'lock', qid: 1, seq: 1, token: 't' });
    s.add({ at: t0 + 200, kind: 'scheduled', qid: 1, seq: 2 }); // no handler registered: dropped
    clock.advance(99);
    expect(seen).toEqual([]);
    clock.advance(1);
    expect(seen).toEqual(['lock 1']);
    clock.advance(500);
    expect(seen).toEqual(['lock 1', 'ttl 3']);
    expect(s.size).toBe(0);
    clock.advance(10_000);
    expect(seen).toEqual(['lock 1', 'ttl 3']);
  });

  it('re-arms for a deadline earlier than the one it waits for', () => {
    const clock = new FakeClock();
    const s = new Scheduler(clock);
    const due: Deadline[] = [];
    s.on('session', (d) => due.push(d));
    s.add({ at: clock.now() + 1_000, kind: 'session', qid: 1, seq: 0, session: 'late' });
    s.add({ at: clock.now() + 10, kind: 'session', qid: 1, seq: 0, session: 'early' });
    clock.advance(10);
    expect(due.map((d) => d.session)).toEqual(['early']);
  });

  it('fires nothing once stopped, but keeps the entries', () => {
    const clock = new FakeClock();
    const s = new Scheduler(clock);
    let fired = 0;
    s.on('lock', () => fired++);
    s.add({ at: clock.now() + 10, kind: 'lock', qid: 1, seq: 1, token: 't' });
    s.stop();
    clock.advance(1_000);
    expect(fired).toBe(0);
    expect(s.size).toBe(1);
  });
});
