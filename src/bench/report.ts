// The bench's output: a side-by-side summary (msgs/s per broker and peeklock as a fraction of the null
// broker), the broker CPU per message side by side, a detail table (latency, broker CPU and RSS per scenario
// and broker), the commit round trip with its waits beside the disk's fdatasync, the scale figures, and JSON.
// Written with process.stdout.write: this is the bench's report, not logging.

import type { ScaleRow } from './scale.js';
import type { Row } from './scenarios.js';

const fmt = (v: unknown): string => {
  // A --profile summary's shares and top functions.
  if (Array.isArray(v)) return v.map(fmt).join('; ');
  if (v && typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k} ${fmt(x)}`).join(', ');
  if (typeof v !== 'number') return v === undefined ? '–' : String(v);
  if (!Number.isFinite(v)) return '–';
  return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : String(Math.round(v * 100) / 100);
};

/** A Markdown table (so docs/performance.md can take it as printed). */
export function table(head: string[], body: unknown[][]): string {
  const cells = [head, ...body.map((r) => r.map(fmt))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  // Text columns (scenario, broker) left, figures right.
  const left = head.map((_, i) => body.some((r) => typeof r[i] === 'string' && !/^\d|–/.test(r[i] as string)));
  const line = (r: string[]): string => `| ${r.map((c, i) => (left[i] ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (left[i] ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join('\n');
}

/** Rows that moved messages; the others (the commit round trip and its waits, the disk's fdatasync) are latency only. */
const moving = (rows: Row[]): Row[] => rows.filter((r) => r.msgsPerSec !== undefined);

// One figure of every broker side by side, one line per scenario, with peeklock against null.
function sideBySide(rows: Row[], key: string, head: string, ratio: (peeklock: number, nul: number, scenario: string) => string): string {
  const brokers = [...new Set(rows.map((r) => r.broker))];
  const scenarios = [...new Set(moving(rows).map((r) => r.scenario))];
  const get = (s: string, b: string): number | undefined => rows.find((r) => r.scenario === s && r.broker === b)?.[key] as number | undefined;
  const both = brokers.includes('peeklock') && brokers.includes('null');
  const body = scenarios.map((s) => {
    const cells: unknown[] = [s, ...brokers.map((b) => get(s, b))];
    if (both) {
      const p = get(s, 'peeklock');
      const n = get(s, 'null');
      cells.push(p && n ? ratio(p, n, s) : '–');
    }
    return cells;
  });
  return table([head, ...brokers, ...(both ? ['peeklock ÷ null'] : [])], body);
}

/** msgs/s of every broker side by side, one line per scenario, with peeklock ÷ null. */
export function summaryTable(rows: Row[]): string {
  // A paced scenario's rate is the offered load, the same for every broker: no ratio.
  return sideBySide(rows, 'msgsPerSec', 'msgs/s', (p, n, s) => (s.includes('@') ? '–' : `${Math.round((p / n) * 100)} %`));
}

/** Broker CPU (user + system) per message moved, µs, every broker side by side, with peeklock ÷ null. */
export function cpuTable(rows: Row[]): string {
  return sideBySide(rows, 'cpuUsPerMsg', 'broker CPU µs/msg', (p, n) => `${(Math.round((p / n) * 100) / 100).toFixed(2)}×`);
}

/** Latency, broker CPU and RSS per scenario and broker. */
export function detailTable(rows: Row[]): string {
  const body = moving(rows).map((r) => [r.scenario, r.broker, r.n, r.msgsPerSec, r.p50Ms, r.p99Ms, r.maxMs, r.cpuS, r.cpuUsPerMsg, r.maxRssMB]);
  return table(['scenario', 'broker', 'n', 'msgs/s', 'p50 ms', 'p99 ms', 'max ms', 'broker CPU s', 'CPU µs/msg', 'broker max RSS MB'], body);
}

/** The commit round trip, its waits and the disk's own fdatasync (same run, same data dir): n, p50, p99, max. */
export function waitsTable(rows: Row[]): string {
  const body = rows.filter((r) => r.msgsPerSec === undefined).map((r) => [r.scenario, r.broker, r.n, r.p50Ms, r.p99Ms, r.maxMs]);
  return body.length ? table(['commit and its waits', 'broker', 'n', 'p50 ms', 'p99 ms', 'max ms'], body) : '';
}

/** One line per scale result. */
export function scaleLines(rows: ScaleRow[]): string {
  return rows.map((r) => `- ${r.scenario}: ${Object.entries(r).filter(([k]) => k !== 'scenario').map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}`).join('\n');
}

/** Everything a run produced, for machines. */
export interface Report {
  machine: string;
  /** Whether the generator had a CPU of its own (pin.ts). */
  pinning: string;
  /** Wall-clock seconds of the whole run. */
  totalS?: number;
  command: string;
  repeats: number;
  rows: Row[];
  extra: Record<string, unknown>[];
  scale: ScaleRow[];
}

/** Prints the tables (unless `jsonOnly`) and then the JSON on one line. */
export function printReport(rep: Report, jsonOnly: boolean): void {
  const out = (s: string): void => void process.stdout.write(s + '\n');
  if (!jsonOnly) {
    out(`\n${rep.command}  (${rep.machine}; ${rep.pinning}; medians of ${rep.repeats}; latency = send→accepted unless noted${rep.totalS !== undefined ? `; whole run ${rep.totalS} s` : ''})\n`);
    if (rep.rows.length) {
      for (const t of [summaryTable(rep.rows), cpuTable(rep.rows), detailTable(rep.rows), waitsTable(rep.rows)]) if (t) out(`${t}\n`);
    }
    for (const e of rep.extra) out(`- ${Object.entries(e).map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}`);
    if (rep.scale.length) out(`\nscale (peeklock):\n${scaleLines(rep.scale)}`);
    out('');
  }
  out(JSON.stringify(rep));
}
