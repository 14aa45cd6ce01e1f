// The benchmark's reading of the commit histogram and its waits (src/bench/commit.ts): quantiles interpolated
// within buckets as Prometheus' histogram_quantile does, differences between two scrapes, and the parse of several
// histograms out of one /metrics text.

import { describe, expect, it } from 'vitest';
import { addDelta, addDeltas, commitFigures, parseHistograms, quantileMs, type Buckets } from '../../src/bench/commit.js';

const cumulative = (pairs: [number, number][]): Buckets => new Map(pairs);

describe('commit histogram figures', () => {
  it('interpolates the quantile inside the bucket its rank falls in', () => {
    // 100 commits: 50 at ≤ 1 ms, 40 in (1, 2] ms, 10 in (2, 10] ms.
    const b = cumulative([[0.001, 50], [0.002, 90], [0.01, 100], [Infinity, 100]]);
    expect(quantileMs(b, 0.5)).toBeCloseTo(1, 6);
    expect(quantileMs(b, 0.7)).toBeCloseTo(1.5, 6);
    expect(quantileMs(b, 0.99)).toBeCloseTo(9.2, 6);
    expect(commitFigures(b)).toEqual({ commits: 100, p50Ms: 1, p99Ms: 9.2 });
  });

  it('counts only the commits between two scrapes, over several runs', () => {
    const into: Buckets = new Map();
    addDelta(into, cumulative([[0.001, 10], [Infinity, 10]]), cumulative([[0.001, 30], [Infinity, 40]]));
    addDelta(into, cumulative([[0.001, 30], [Infinity, 40]]), cumulative([[0.001, 30], [Infinity, 50]]));
    expect([...into]).toEqual([[0.001, 20], [Infinity, 40]]);
    expect(quantileMs(new Map(), 0.5)).toBeNaN();
  });

  it('parses only the named histograms of a /metrics text, an absent one as empty, and subtracts scrapes of each', () => {
    const scrape = (flush: number, lag: number): string =>
      [
        '# HELP peeklock_store_log_flush_seconds x',
        'peeklock_store_log_flush_seconds_bucket{le="0.0005"} 0',
        `peeklock_store_log_flush_seconds_bucket{le="0.001"} ${flush}`,
        `peeklock_store_log_flush_seconds_bucket{le="+Inf"} ${flush}`,
        'peeklock_store_log_flush_seconds_sum 0.1',
        `peeklock_store_apply_lag_seconds_bucket{le="0.01"} ${lag}`,
        `peeklock_store_apply_lag_seconds_bucket{le="+Inf"} ${lag}`,
        'peeklock_send_duration_seconds_bucket{le="0.001",entity="q"} 7',
      ].join('\n');
    const names = ['peeklock_store_log_flush_seconds', 'peeklock_store_apply_lag_seconds', 'peeklock_store_commit_queue_seconds'];
    const before = parseHistograms(scrape(4, 10), names);
    expect([...before.keys()]).toEqual(names);
    expect([...before.get('peeklock_store_log_flush_seconds')!]).toEqual([[0.0005, 0], [0.001, 4], [Infinity, 4]]);
    expect(before.get('peeklock_store_commit_queue_seconds')!.size).toBe(0);
    const into = new Map<string, Buckets>();
    addDeltas(into, before, parseHistograms(scrape(9, 25), names));
    expect(commitFigures(into.get('peeklock_store_log_flush_seconds')!)).toEqual({ commits: 5, p50Ms: 0.75, p99Ms: 1 });
    expect(into.get('peeklock_store_apply_lag_seconds')!.get(Infinity)).toBe(15);
    expect(commitFigures(into.get('peeklock_store_commit_queue_seconds')!).commits).toBe(0);
  });
});
