// A deep queue under the requests a Listen or Manage right can make of it (issue 25, row 3 and "What to build" 3):
// peek-message with huge, negative, NaN and string counts, the explorer's message views (active, deferred,
// scheduled, dead-letter) and a filter dry run that matches nothing. Each answer is bounded, and the event loop is
// never held: its lag, measured with perf_hooks over all of them, stays under 50 ms. The queue is filled straight
// into the store (rows and bodies as sends would have written them), so its depth costs seconds, not a million
// SDK sends: 1,000,000 messages at every size (about 15 s to fill on 2 shared cores), and a dead-letter queue of
// 50,000 (200,000 at PEEKLOCK_LONG=1).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import rhea from 'rhea';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { MAX_FILTER_SCAN, MAX_PEEK_MESSAGES } from '../../src/broker/runtime/limits.js';
import { connect } from '../helpers/amqp-client.js';
import { emit, management, size, type Management } from '../helpers/fault.js';
import { api, startHttpBroker, type HttpBroker } from '../helpers/http.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const TOTAL = 1_000_000;
const DEAD = size(50_000, 200_000);
/** The event-loop lag bound (a behaviour bound: one synchronous walk of the queue held the loop for seconds). */
const LAG_MS = 50;
const t = rhea.types as Any;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-deep-costs-'));
let broker: HttpBroker;
let conn: Any;
let mgmt: Management;
let fillMs = 0;

// Writes `n` available messages (one shared template body, each its own message-id) into entity `name`, with a
// deferred and a scheduled one near the end, where a walk from the front would reach them last. It runs in a
// child process (on the built store, dist/), so the garbage of a million rows is not this process's to collect
// while the lag is measured.
const FILL = `
import rhea from 'rhea';
import { LmdbStore } from '${path.resolve('dist/store/lmdb/lmdb-store.js')}';
const [dir, ...entities] = process.argv.slice(1);
const store = new LmdbStore({ path: dir });
await store.open();
const body = new Uint8Array(rhea.message.encode({ message_id: 'm', body: 'x'.repeat(64), application_properties: { kind: 'bulk' } }));
const now = Date.now();
for (const spec of entities) {
  const [name, total] = spec.split('=');
  const n = Number(total);
  const qid = await store.queueId(name.toLowerCase());
  for (let start = 1; start <= n; start += 50000) {
    const ops = [];
    const end = Math.min(n + 1, start + 50000);
    for (let seq = start; seq < end; seq++) {
      const row = { seq, state: 'active', deliveryCount: 0, enqueuedAt: now - 60000, expiresAt: null, messageId: 'm' + seq, size: body.length };
      if (seq === n - 10) Object.assign(row, { state: 'deferred', deferred: true, deliveryCount: 1 });
      if (seq === n - 5) Object.assign(row, { state: 'scheduled', scheduledAt: now + 3600000 });
      ops.push({ op: 'put', qid, row, body });
    }
    ops.push({ op: 'nextSeq', qid, nextSeq: end });
    await store.write(ops);
  }
}
await store.close();
`;

function fill(entities: string[]): void {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', FILL, dir, ...entities], { encoding: 'utf8', timeout: 240_000 });
  if (r.status !== 0) throw new Error(`fill failed: ${r.stderr || r.error}`);
}

beforeAll(async () => {
  const t0 = Date.now();
  fill([`q=${TOTAL}`, `q/$DeadLetterQueue=${DEAD}`]);
  fillMs = Date.now() - t0;
  broker = await startHttpBroker([{ Name: 'q', Properties: { LockDuration: 'PT5M' } }], { store: new LmdbStore({ path: dir }), logLevel: 'warn' });
  conn = await connect(broker.port);
  mgmt = await management(conn, 'q');
}, 300_000);

afterAll(async () => {
  conn?.close();
  await broker?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** One round of the requests, with the event loop's lag over them. */
async function round(): Promise<{ seen: Record<string, unknown>; maxLagMs: number; p99LagMs: number; ms: number }> {
  const lag = monitorEventLoopDelay({ resolution: 5 });
  const seen: Record<string, unknown> = {};
  const t0 = Date.now();
  lag.enable();
  const peek = (count: unknown) => mgmt.request('com.microsoft:peek-message', { 'from-sequence-number': t.wrap_long(1), 'message-count': count }, 60_000);
  for (const [name, count] of [
    ['huge', t.wrap_int(2_147_483_647)],
    ['negative', t.wrap_int(-5)],
    ['nan', t.wrap_double(NaN)],
    ['string', t.wrap_string('1000000')],
  ] as const) {
    const r = await peek(count);
    seen[`peek-${name}`] = r.status === 200 ? r.body.messages.length : `${r.status} ${r.condition}`;
  }
  // The explorer's own calls (src/explorer/messages.ts, every 2 s): each view of 100 messages, from the front.
  for (const view of ['active', 'deferred', 'scheduled', 'deadletter']) {
    const r = await api(broker.base, `/api/entities/q/messages?view=${view}&count=100`);
    seen[`view-${view}`] = r.status === 200 ? r.body.messages.length : r.status;
  }
  const dry = await api(broker.base, '/api/entities/q/delete', { method: 'POST', body: { filter: { property: 'kind=none' }, dryRun: true } });
  seen.dryRun = dry.status === 200 ? dry.body : dry.status;
  lag.disable();
  return { seen, maxLagMs: lag.max / 1e6, p99LagMs: lag.percentile(99) / 1e6, ms: Date.now() - t0 };
}

describe(`a queue of ${TOTAL.toLocaleString('en')} messages`, () => {
  it('answers peeks, the explorer views and a filter dry run boundedly, the event loop never held 50 ms', async () => {
    // The machine is shared: a round whose lag comes from another process's CPU use is run again (at most five
    // rounds). A request that holds the loop itself does so in every round (a synchronous walk: seconds each time).
    const rounds: Awaited<ReturnType<typeof round>>[] = [];
    while (rounds.length < 5 && !rounds.some((r) => r.maxLagMs < LAG_MS)) rounds.push(await round());
    const best = rounds.reduce((a, b) => (b.maxLagMs < a.maxLagMs ? b : a));
    emit({
      test: 'deep-queue-costs',
      messages: TOTAL,
      deadLettered: DEAD,
      fillMs,
      rounds: rounds.map((r) => ({ ms: r.ms, maxLagMs: Math.round(r.maxLagMs), p99LagMs: Math.round(r.p99LagMs) })),
      seen: best.seen,
    });
    for (const { seen } of rounds) {
      expect(seen).toEqual({
        'peek-huge': MAX_PEEK_MESSAGES,
        'peek-negative': '400 com.microsoft:argument-out-of-range',
        'peek-nan': '400 com.microsoft:argument-error',
        'peek-string': '400 com.microsoft:argument-error',
        'view-active': 100,
        'view-deferred': 1,
        'view-scheduled': 1,
        'view-deadletter': 100,
        dryRun: { entity: 'q', count: 0, skipped: 0, dryRun: true, scanned: MAX_FILTER_SCAN, next: MAX_FILTER_SCAN + 1 },
      });
    }
    expect(best.maxLagMs).toBeLessThan(LAG_MS);
  }, 300_000);
});
