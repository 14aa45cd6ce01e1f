// The commit's waits on /metrics (issue 37, item 6): queueing and log flush once per group commit, the LMDB apply
// lag once per record, and nothing observed for a wait a store without a log cannot measure (NaN).

import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { BrokerEventMap, ObservationPort } from '../../src/broker/ports.js';
import type { DeadLetterAlerter } from '../../src/http/alerts.js';
import { Metrics } from '../../src/http/metrics.js';
import { parseHistograms, quantileMs } from '../../src/bench/commit.js';

const NAMES = ['peeklock_store_commit_seconds', 'peeklock_store_commit_queue_seconds', 'peeklock_store_log_flush_seconds', 'peeklock_store_apply_lag_seconds'];

function metrics(): { events: EventEmitter<BrokerEventMap>; m: Metrics } {
  const events = new EventEmitter<BrokerEventMap>();
  const broker = { events, listEntities: () => [], messageCounts: () => [], oldestWaiting: () => [], now: () => 0 } as unknown as ObservationPort;
  const alerter = { threshold: () => 0, check: () => [] } as unknown as DeadLetterAlerter;
  return { events, m: new Metrics(broker, alerter) };
}

describe('commit wait histograms', () => {
  it('observes each wait in its own histogram, the apply lag once per record', async () => {
    const { events, m } = metrics();
    events.emit('committed', { ops: 3, ms: 4, queuedMs: 0.8, flushMs: 2.5 });
    events.emit('committed', { ops: 1, ms: 1, queuedMs: 0.2, flushMs: 0.3 });
    events.emit('logApplied', { ms: 12, records: 3 });
    events.emit('logApplied', { ms: 30, records: 1 });
    const h = parseHistograms(await m.render(), NAMES);
    const count = (name: string): number | undefined => h.get(name)!.get(Infinity);
    expect(NAMES.map(count)).toEqual([2, 2, 2, 4]);
    // Three of the four records waited 12 ms (bucket (10, 12.5] ms), one 30 ms (bucket (25, 30] ms).
    expect(h.get('peeklock_store_apply_lag_seconds')!.get(0.0125)).toBe(3);
    expect(h.get('peeklock_store_apply_lag_seconds')!.get(0.025)).toBe(3);
    expect(h.get('peeklock_store_log_flush_seconds')!.get(0.0005)).toBe(1); // the 0.3 ms flush
    expect(h.get('peeklock_store_log_flush_seconds')!.get(0.002)).toBe(1); // not yet the 2.5 ms one
    expect(quantileMs(h.get('peeklock_store_commit_queue_seconds')!, 0.99)).toBeGreaterThan(0.75);
    m.close();
  });

  it('observes no queueing or flush for a commit whose store stamped none', async () => {
    const { events, m } = metrics();
    events.emit('committed', { ops: 1, ms: 0.4, queuedMs: NaN, flushMs: NaN });
    const h = parseHistograms(await m.render(), NAMES);
    expect(NAMES.map((n) => h.get(n)!.get(Infinity))).toEqual([1, 0, 0, 0]);
    m.close();
  });
});
