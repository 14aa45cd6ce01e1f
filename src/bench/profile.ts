// `--profile <dir>`: where each scenario spends the broker's time. The broker (peeklock or the null broker) runs
// under V8's sampling profiler (`--cpu-prof`), every measured run notes its window, and once the broker has exited
// its profile is cut into those windows: the share of the window's wall time in each part of the process (idle,
// blocked in the log's fdatasync, writing to sockets, rhea, the broker's own layers, lmdb-js, msgpackr, the garbage
// collector) and the functions with the most self time. A V8 profile's timestamps are CLOCK_MONOTONIC microseconds,
// the clock of process.hrtime, so the windows noted here line up with the broker's samples.

import fs from 'node:fs';
import path from 'node:path';

/** One measured run of one broker process: its label and when it ran (CLOCK_MONOTONIC µs). */
interface Window {
  pid: number;
  label: string;
  from: number;
  to: number;
}

const windows: Window[] = [];
const summaries: Record<string, unknown>[] = [];
let dir: string | null = null;

/** Turns profiling on: brokers started from now on write their profile under `d`. */
export function profileInto(d: string): void {
  dir = path.resolve(d);
  fs.mkdirSync(dir, { recursive: true });
}

/** The node arguments that profile a broker (none unless `--profile` is on). */
export function profileArgs(): string[] {
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

/** CLOCK_MONOTONIC in µs, the clock of a V8 profile's timestamps. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Notes a measured run of broker `pid` (while profiling). */
export function noteWindow(pid: number | undefined, label: string, from: number, to: number): void {
  if (dir && pid) windows.push({ pid, label, from, to });
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The share of a window in gaps between samples too long to be one function's (the process was not running). */
const NOT_RUNNING = 'not sampled (descheduled)';

/** The part of the process a sampled frame belongs to. */
function partOf(fn: string, url: string): string {
  if (!url) {
    if (fn === '(idle)') return 'idle';
    if (fn === 'fdatasync') return 'fdatasync (blocked)';
    if (fn === 'writeBuffer' || fn === 'writev' || fn === 'writeUtf8String') return 'socket writes';
    if (fn === '(garbage collector)') return 'GC';
    return 'V8 and native';
  }
  if (/node_modules\/(broker-)?rhea\//.test(url)) return 'rhea';
  if (url.includes('node_modules/lmdb/')) return 'lmdb-js';
  if (url.includes('node_modules/msgpackr/')) return 'msgpackr';
  if (url.includes('node_modules/prom-client/') || url.includes('/http/')) return 'metrics and HTTP';
  for (const layer of ['amqp', 'broker', 'store']) if (url.includes(`/dist/${layer}/`)) return `peeklock ${layer}/`;
  if (url.startsWith('node:')) return 'Node core';
  return 'other JavaScript';
}

/** The summaries made so far (for the report's extra lines), and forgets them. */
export function takeSummaries(): Record<string, unknown>[] {
  return summaries.splice(0);
}

/**
 * Once broker `pid` has exited: for each of its windows, summed over the runs sharing a label, the share (%) of the
 * window's wall time per part and the five functions with the most self time (see takeSummaries).
 */
export function summarize(pid: number | undefined, broker: string): void {
  if (!dir || !pid) return;
  const mine = windows.filter((w) => w.pid === pid);
  const file = fs.readdirSync(dir).find((f) => f.includes(`.${pid}.`) && f.endsWith('.cpuprofile'));
  if (!file || mine.length === 0) return;
  const p = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const labels = [...new Set(mine.map((w) => w.label))];
  const parts = labels.map(() => new Map<string, number>());
  const fns = labels.map(() => new Map<string, number>());
  const totals = labels.map(() => 0);
  // A sample stands for the time until the next one, up to a few sampling intervals: a longer gap means the
  // process did not run (another process had the CPU), which is no function's cost.
  const sorted = p.timeDeltas.slice().sort((a, b) => a - b);
  const longest = 4 * (sorted[sorted.length >> 1] ?? 1000);
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const gap = p.timeDeltas[i + 1] ?? 0;
    const w = mine.find((x) => t >= x.from && t < x.to);
    if (!w) continue;
    const k = labels.indexOf(w.label);
    const f = byId.get(p.samples[i]!)!;
    const dt = Math.min(gap, longest);
    const part = partOf(f.functionName, f.url);
    parts[k]!.set(part, (parts[k]!.get(part) ?? 0) + dt);
    if (gap > dt) parts[k]!.set(NOT_RUNNING, (parts[k]!.get(NOT_RUNNING) ?? 0) + gap - dt);
    totals[k]! += gap;
    if (part !== 'idle' && part !== 'fdatasync (blocked)') {
      const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(dist|node_modules)\//, '')}:${f.lineNumber + 1}`;
      fns[k]!.set(name, (fns[k]!.get(name) ?? 0) + dt);
    }
  }
  labels.forEach((label, k) => {
    const pct = (v: number): number => Math.round((1000 * v) / (totals[k]! || 1)) / 10;
    const share = Object.fromEntries([...parts[k]!].sort((a, b) => b[1] - a[1]).map(([n, v]) => [n, pct(v)]));
    const top = [...fns[k]!].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([n, v]) => `${n} ${pct(v)}%`);
    summaries.push({ scenario: `profile: ${broker}, ${label}`, profile: file, wallS: Math.round(totals[k]! / 1e4) / 100, percentOfWall: share, topSelf: top });
  });
}
