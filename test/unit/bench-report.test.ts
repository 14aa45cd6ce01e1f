// The benchmark's report tables (src/bench/report.ts): the broker CPU per message side by side with peeklock ÷
// null, the detail table's CPU column, and the commit round trip with its waits beside the disk's fdatasync,
// apart from the throughput tables.

import { describe, expect, it } from 'vitest';
import { cpuTable, detailTable, summaryTable, waitsTable } from '../../src/bench/report.js';
import type { Row } from '../../src/bench/scenarios.js';

const rows: Row[] = [
  { scenario: 'send W=100 1KiB', broker: 'peeklock', n: 1000, msgsPerSec: 12_000, cpuS: 0.9, cpuUsPerMsg: 90, maxRssMB: 80 },
  { scenario: 'send W=100 1KiB', broker: 'null', n: 1000, msgsPerSec: 24_000, cpuS: 0.3, cpuUsPerMsg: 30, maxRssMB: 60 },
  { scenario: 'commit round trip (plan → resolved) under send W=100 1KiB', broker: 'peeklock', n: 400, p50Ms: 1.5, p99Ms: 4 },
  { scenario: 'commit wait: log write + fdatasync under send W=100 1KiB', broker: 'peeklock', n: 400, p50Ms: 0.4, p99Ms: 1.2 },
  { scenario: 'disk 4KiB write + fdatasync (data dir, idle)', broker: 'peeklock', n: 2000, p50Ms: 0.15, p99Ms: 0.3, maxMs: 2 },
];

/** The cells of a Markdown table's body lines. */
const cells = (table: string): string[][] => table.split('\n').slice(2).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));

describe('bench report', () => {
  it('puts the CPU per message of every broker side by side, with peeklock ÷ null as a factor', () => {
    const t = cpuTable(rows);
    expect(t.split('\n')[0]).toMatch(/broker CPU µs\/msg \| peeklock \| null \| peeklock ÷ null/);
    expect(cells(t)).toEqual([['send W=100 1KiB', '90', '30', '3.00×']]);
  });

  it('keeps the throughput tables to rows that moved messages, with the CPU per message in the detail', () => {
    expect(cells(summaryTable(rows))).toEqual([['send W=100 1KiB', '12,000', '24,000', '50 %']]);
    const detail = detailTable(rows);
    expect(detail.split('\n')[0]).toContain('CPU µs/msg');
    expect(cells(detail).map((r) => [r[0], r[1], r[8]])).toEqual([['send W=100 1KiB', 'peeklock', '90'], ['send W=100 1KiB', 'null', '30']]);
  });

  it('shows the commit round trip, its waits and the disk fdatasync with p50 and p99, and nothing without them', () => {
    expect(cells(waitsTable(rows))).toEqual([
      ['commit round trip (plan → resolved) under send W=100 1KiB', 'peeklock', '400', '1.5', '4', '–'],
      ['commit wait: log write + fdatasync under send W=100 1KiB', 'peeklock', '400', '0.4', '1.2', '–'],
      ['disk 4KiB write + fdatasync (data dir, idle)', 'peeklock', '2,000', '0.15', '0.3', '2'],
    ]);
    expect(waitsTable(rows.slice(0, 2))).toBe('');
  });
});
