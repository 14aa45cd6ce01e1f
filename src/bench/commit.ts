// The limit beside the broker (issue 27, item 5): the commit round trip peeklock sees under load — its
// `peeklock_store_commit_seconds` histogram (Journal.run → resolved), read from /metrics before and after the
// send runs — and, in the same run and the same directory as its data dir, what the disk itself takes for one
// 4 KiB write + fdatasync with nothing else running. Beside the round trip, its waits (issue 37, item 6), each a
// histogram of its own: queueing before the log write, the log flush, and LMDB's apply lag behind it.

import fs from 'node:fs';
import path from 'node:path';
import { Samples } from './generator.js';

/** The histograms read under load, in report order: the commit round trip, then its waits (http/metrics.ts). */
export const WAIT_METRICS = [
  { metric: 'peeklock_store_commit_seconds', label: 'commit round trip (plan → resolved)' },
  { metric: 'peeklock_store_commit_queue_seconds', label: 'commit wait: queueing (plan → log write starts)' },
  { metric: 'peeklock_store_log_flush_seconds', label: 'commit wait: log write + fdatasync' },
  { metric: 'peeklock_store_apply_lag_seconds', label: 'LMDB apply lag after the ack (record flushed → applied)' },
] as const;

/** Cumulative counts of a histogram by upper bound (seconds), as /metrics renders them. */
export type Buckets = Map<number, number>;

/** Each histogram's buckets, by metric name. */
export type Histograms = Map<string, Buckets>;

/** Parses the buckets of the histograms `names` from a Prometheus text exposition (a name not found is empty). */
export function parseHistograms(text: string, names: readonly string[]): Histograms {
  const out: Histograms = new Map(names.map((n) => [n, new Map()]));
  for (const line of text.split('\n')) {
    const m = /^(\w+)_bucket\{le="([^"]+)"\}\s+(\S+)/.exec(line);
    const b = m && out.get(m[1]!);
    if (b) b.set(m[2] === '+Inf' ? Infinity : Number(m[2]), Number(m[3]));
  }
  return out;
}

/** Reads the commit histogram and its waits from a peeklock /metrics URL. */
export async function scrapeWaits(metricsUrl: string): Promise<Histograms> {
  const text = await (await fetch(metricsUrl)).text();
  return parseHistograms(text, WAIT_METRICS.map((w) => w.metric));
}

/** Adds the commits between two scrapes to `into` (bucket-wise differences). */
export function addDelta(into: Buckets, before: Buckets, after: Buckets): void {
  for (const [le, n] of after) into.set(le, (into.get(le) ?? 0) + n - (before.get(le) ?? 0));
}

/** `addDelta` for every histogram of two scrapes. */
export function addDeltas(into: Histograms, before: Histograms, after: Histograms): void {
  for (const [name, b] of after) {
    if (!into.has(name)) into.set(name, new Map());
    addDelta(into.get(name)!, before.get(name) ?? new Map(), b);
  }
}

// As Prometheus' histogram_quantile: linear within the bucket the rank falls in, so a figure is only as fine
// as the buckets around it (0.1 ms steps up to 1 ms, then 0.5–2.5 ms steps up to 15 ms; see metrics.ts).
/** The q-quantile (0..1) of a cumulative histogram, in ms; NaN when empty. */
export function quantileMs(b: Buckets, q: number): number {
  const bounds = [...b.keys()].sort((x, y) => x - y);
  const total = b.get(Infinity) ?? 0;
  if (!total) return NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const le of bounds) {
    const n = b.get(le)!;
    if (n >= rank) {
      if (le === Infinity) return lower * 1000;
      return (lower + ((le - lower) * (rank - below)) / Math.max(1, n - below)) * 1000;
    }
    lower = le;
    below = n;
  }
  return NaN;
}

/** `n` commits of the histogram `b`: count, p50 and p99 in ms (rounded to 0.01). */
export function commitFigures(b: Buckets): Record<string, number> {
  const r = (v: number): number => Math.round(v * 100) / 100;
  return { commits: b.get(Infinity) ?? 0, p50Ms: r(quantileMs(b, 0.5)), p99Ms: r(quantileMs(b, 0.99)) };
}

/**
 * `n` rounds of a 4 KiB write and `fdatasync` on a file in `dir` (over 64 slots of a 256 KiB file, so no round
 * grows the file), one at a time: what one durable commit costs this disk at best. Removes its file.
 */
export function fdatasyncLoop(dir: string, n = 2000): Record<string, number> {
  const file = path.join(dir, `fdatasync-probe-${process.pid}`);
  const buf = Buffer.alloc(4096, 0x5a);
  const fd = fs.openSync(file, 'w');
  try {
    for (let i = 0; i < 64; i++) fs.writeSync(fd, buf, 0, buf.length, i * buf.length);
    fs.fsyncSync(fd);
    const s = new Samples(n);
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      fs.writeSync(fd, buf, 0, buf.length, (i % 64) * buf.length);
      fs.fdatasyncSync(fd);
      s.add(performance.now() - t0);
    }
    const { p50Ms, p99Ms, maxMs } = s.summary();
    return { syncs: n, p50Ms: p50Ms!, p99Ms: p99Ms!, maxMs: maxMs! };
  } finally {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
}
