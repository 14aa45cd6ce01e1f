// `npm run bench -- --embedded-start`: how long a test suite waits for an embedded broker. Each run calls
// `startBroker()` (a fresh temporary data directory, LMDB created, one queue, ephemeral ports) and takes the time
// until it resolves — the broker is then listening and has recovered its (empty) store — and the time `stop()` takes
// (connections closed, store closed, directory removed). Runs are sequential, after a few warm-up starts that load
// the native modules once, as a test process does.

import { startBroker } from '../index.js';

/** Percentiles of the start and stop times, milliseconds. */
export interface EmbeddedStartFigures {
  scenario: string;
  starts: number;
  startP50Ms: number;
  startP99Ms: number;
  startMaxMs: number;
  stopP50Ms: number;
  stopP99Ms: number;
  firstStartMs: number;
}

const CONFIG = { UserConfig: { Namespaces: [{ Name: 'bench', Queues: [{ Name: 'orders' }] }] } };

function pct(sorted: number[], p: number): number {
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 10) / 10;
}

/** Starts and stops an embedded broker `starts` times; returns p50/p99 of each. */
export async function embeddedStart(starts: number, log: (line: string) => void): Promise<EmbeddedStartFigures> {
  const t0 = performance.now();
  const first = await startBroker({ config: CONFIG });
  const firstStartMs = Math.round(performance.now() - t0);
  await first.stop();
  for (let i = 0; i < 3; i++) await (await startBroker({ config: CONFIG })).stop();
  const start: number[] = [];
  const stop: number[] = [];
  for (let i = 0; i < starts; i++) {
    const a = performance.now();
    const b = await startBroker({ config: CONFIG });
    const ready = performance.now();
    await b.stop();
    stop.push(performance.now() - ready);
    start.push(ready - a);
    if ((i + 1) % 25 === 0) log(`embedded start: ${i + 1}/${starts}`);
  }
  start.sort((x, y) => x - y);
  stop.sort((x, y) => x - y);
  return {
    scenario: `embedded startBroker() to ready, ${starts} sequential starts`,
    starts,
    startP50Ms: pct(start, 50),
    startP99Ms: pct(start, 99),
    startMaxMs: pct(start, 100),
    stopP50Ms: pct(stop, 50),
    stopP99Ms: pct(stop, 99),
    firstStartMs,
  };
}
