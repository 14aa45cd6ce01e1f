// `bench --profile`: a broker's V8 profile cut into the windows of its measured runs, with each window's wall time
// shared out by part of the process and its top functions. Checked on a hand-made profile whose samples are known.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { noteWindow, profileArgs, profileInto, summarize, takeSummaries } from '../../src/bench/profile.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const frame = (id: number, functionName: string, url: string, children: number[] = []): object => ({
  id,
  callFrame: { functionName, url, lineNumber: 9, scriptId: '0', columnNumber: 0 },
  children,
});

describe('bench --profile', () => {
  it("shares each window's wall time by part of the broker, summed over the runs with one label", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-bench-profile-'));
    dirs.push(dir);
    profileInto(dir);
    expect(profileArgs()).toEqual(['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    const nodes = [
      frame(1, '(root)', '', [2, 3, 4, 5]),
      frame(2, '(idle)', ''),
      frame(3, 'fdatasync', ''),
      frame(4, 'flush', 'file:///x/dist/store/log/wal.js'),
      frame(5, 'Incoming.on_transfer', 'file:///x/node_modules/rhea/lib/session.js'),
    ];
    // One sample per ms from t = 1,000,000 µs: 10 idle, 10 fdatasync, 20 store, 20 rhea, then 40 idle (outside).
    const samples = [...Array(10).fill(2), ...Array(10).fill(3), ...Array(20).fill(4), ...Array(20).fill(5), ...Array(40).fill(2)];
    const profile = { nodes, startTime: 1_000_000, endTime: 1_100_000, samples, timeDeltas: samples.map(() => 1000) };
    fs.writeFileSync(path.join(dir, 'CPU.20261207.000000.4242.0.001.cpuprofile'), JSON.stringify(profile));
    // Two runs of one scenario (the sample at t stands for t..t+1 ms), and one of another that sees only idle time.
    noteWindow(4242, 'send', 1_001_000, 1_031_000);
    noteWindow(4242, 'send', 1_031_000, 1_061_000);
    noteWindow(4242, 'idle run', 1_070_000, 1_080_000);
    noteWindow(7, 'another broker', 1_000_000, 1_100_000);
    summarize(4242, 'peeklock');
    const [send, idle, ...rest] = takeSummaries() as { scenario: string; wallS: number; percentOfWall: Record<string, number>; topSelf: string[] }[];
    expect(rest).toEqual([]);
    expect(send!.scenario).toBe('profile: peeklock, send');
    expect(send!.wallS).toBe(0.06);
    expect(send!.percentOfWall).toEqual({ 'peeklock store/': 33.3, rhea: 33.3, 'fdatasync (blocked)': 16.7, idle: 16.7 });
    expect(send!.topSelf[0]).toBe('flush store/log/wal.js:10 33.3%');
    expect(idle!.percentOfWall).toEqual({ idle: 100 });
    expect(takeSummaries()).toEqual([]);
  });

  it('counts a gap between samples longer than a few intervals as time the broker was not running', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-bench-profile-'));
    dirs.push(dir);
    profileInto(dir);
    const nodes = [frame(1, '(root)', '', [2, 3]), frame(2, '(idle)', ''), frame(3, 'read', 'file:///x/node_modules/rhea/lib/types.js')];
    // Samples at 1, 2 and 22 ms: the second stands for 20 ms, of which 4 ms (four median intervals) are its own.
    const profile = { nodes, startTime: 0, endTime: 22_000, samples: [3, 3, 2], timeDeltas: [1000, 1000, 20_000] };
    fs.writeFileSync(path.join(dir, 'CPU.20261207.000000.4343.0.001.cpuprofile'), JSON.stringify(profile));
    noteWindow(4343, 'stalled', 0, 30_000);
    summarize(4343, 'peeklock');
    const [s] = takeSummaries() as { percentOfWall: Record<string, number> }[];
    expect(s!.percentOfWall).toEqual({ rhea: 23.8, 'not sampled (descheduled)': 76.2, idle: 0 });
  });
});
