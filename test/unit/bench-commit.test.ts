// The benchmark's reading of the commit histogram (src/bench/commit.ts): quantiles interpolated within buckets
// as Prometheus' histogram_quantile does, and differences between two scrapes.

import { describe, expect, it } from 'vitest';
import { addDelta, commitFigures, quantileMs, type Buckets } from '../../src/bench/commit.js';

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
});
