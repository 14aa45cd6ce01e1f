// The loop every power-cut workload shares (docs/testing.md, "Power-cut tests"): run a load on the broker, cut the
// power at a random point (half the cuts after a random delay, half armed to land just before the broker's Nth
// mutating file-system call, i.e. inside a commit as often as between two), unmount, check the store the cut left
// (opened directly, the broker gone), remount, restart the broker without help, and let the workload check what it
// was told against what is there. Also the offline store check itself: counters, held index, bodies, sequence marks,
// shared-body reference counts and delivery histories (never ahead of their rows) against the rows.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ServiceBusClient, type ServiceBusReceivedMessage, type ServiceBusReceiver } from '@azure/service-bus';
import { signSas } from '../../src/auth/sas-token.js';
import { LoggedStore } from '../../src/store/log/logged-store.js';
import type { LmdbDbs } from '../../src/store/lmdb/dbs.js';
import type { MessageRow } from '../../src/store/row.js';
import type { DeliveryHistory } from '../../src/store/history.js';
import { historyDisagreement } from './history-check.js';
import { exited, type ChildBroker } from './child-broker.js';
import { CUT_MODES, type CutFigures, type CutMode, type CutOn, type PowerCutRig } from './cutfs.js';
import { emit, LONG, sleep, until } from './fault.js';

/** A body only its id makes (length 1..2 KiB), so any lost, torn or swapped byte shows. */
export function bodyFor(id: string): Buffer {
  const h = crypto.createHash('sha256').update(id).digest();
  const n = 1 + (h.readUInt16BE(0) % 2048);
  return Buffer.concat(Array.from({ length: Math.ceil(n / 32) }, (_, i) => crypto.createHash('sha256').update(`${id}/${i}`).digest())).subarray(0, n);
}

/** Receiver options for bodies as bytes: the SDK would otherwise JSON.parse a body that happens to be valid JSON. */
export const RAW = { skipParsingBodyAsJson: true };

/** A JS SDK client of the child broker's default namespace, without retries (a cut must show as a failure). */
export function sbClient(port: number): ServiceBusClient {
  return new ServiceBusClient(
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
    { retryOptions: { maxRetries: 0, timeoutInMs: 10_000 } },
  );
}

/** One admin request (root policy) on the broker's port, which serves HTTP beside AMQP; status 0 if no answer came. */
export async function adminCall(port: number, method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const base = `http://127.0.0.1:${port}`;
  try {
    const res = await fetch(base + p, {
      method,
      headers: { authorization: signSas(`${base}/`, 'RootManageSharedAccessKey', 'SAS_KEY_VALUE', 600), 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.json().catch(() => null) };
  } catch {
    return { status: 0, body: null };
  }
}

/** Every message `r`'s entity holds, locked ones too (a peek sees them), in sequence order; then closes `r`. */
export async function peekAll(r: ServiceBusReceiver): Promise<ServiceBusReceivedMessage[]> {
  const out: ServiceBusReceivedMessage[] = [];
  for (let round = 0; round < 1000; round++) {
    const msgs = await r.peekMessages(250);
    if (msgs.length === 0) break;
    out.push(...msgs);
  }
  await r.close();
  return out;
}

/** Receives and completes (confirmed) what `r`'s entity has available, calling `done` for each; then closes `r`. */
export async function drainAll(r: ServiceBusReceiver, done: (m: ServiceBusReceivedMessage) => void): Promise<void> {
  for (let round = 0; round < 100; round++) {
    const msgs = await r.receiveMessages(250, { maxWaitTimeInMs: 300 });
    if (msgs.length === 0) break;
    await Promise.all(msgs.map((m) => r.completeMessage(m).then(() => done(m))));
  }
  await r.close();
}

/** The stored rows of an entity (by its path, e.g. `q/$deadletterqueue`), for a workload's own offline checks. */
export type RowsOf = (path: string) => MessageRow[];

/** The stored delivery history of a message (by its entity's path and sequence number), undefined if it has none. */
export type HistoryOf = (path: string, seq: number) => DeliveryHistory | undefined;

/** Delivery histories the store check compared with their rows (issue 39), and those that disagreed. */
export interface HistoryTally {
  historiesChecked: number;
  historyDisagreements: number;
}

/**
 * Opens the store in `dir` (nobody else has it open) and lists where its derived data disagrees with its rows, for
 * every entity: the row counter, the held index, a body that cannot be read, a sequence mark behind a row, a shared
 * body's reference count against the rows that name it, and a delivery history ahead of its row, or behind it by
 * more than the open attempt (historyDisagreement; counted in `tally`). `inspect` adds a workload's own checks.
 */
export async function storeDisagreements(dir: string, inspect?: (rowsOf: RowsOf, historyOf: HistoryOf) => string[], tally?: HistoryTally): Promise<string[]> {
  // On a copy: opening the store replays its write-ahead log into LMDB and starts a new log, and the broker's own
  // recovery must still find the log the cut left. Once open, LMDB's databases hold everything the log did.
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-cut-copy-'));
  fs.cpSync(dir, copy, { recursive: true, filter: (src) => !src.endsWith('next.spare') });
  const store = new LoggedStore({ path: copy });
  try {
    await store.open();
  } catch (err) {
    fs.rmSync(copy, { recursive: true, force: true });
    return [`the store does not open: ${(err as Error).message}`];
  }
  try {
    const { dbs } = (store as unknown as { index: { dbs: LmdbDbs } }).index;
    const out: string[] = [];
    const named = new Map<string, number>(); // shared body [qid:seq] -> rows naming it
    for (const { key: path, value: qid } of dbs.names.getRange()) {
      const { rows, nextSeq } = store.load(qid);
      const front = store.loadFront(qid);
      if (front.count !== rows.length) out.push(`${path}: counter says ${front.count} rows, the store holds ${rows.length}`);
      const held = rows.filter((r) => r.state !== 'active').map((r) => r.seq);
      if (JSON.stringify(front.held.map((r) => r.seq)) !== JSON.stringify(held)) out.push(`${path}: held index ${front.held.length} rows, ${held.length} rows held`);
      for (const r of rows) if (!store.readBody(qid, r.seq)) out.push(`${path}: row ${r.seq} (${r.messageId}) has no body`);
      if (rows.length > 0 && nextSeq <= rows[rows.length - 1]!.seq) out.push(`${path}: sequence mark ${nextSeq} not after row ${rows[rows.length - 1]!.seq}`);
      for (const r of rows) if (r.bodyRef) named.set(r.bodyRef.join(':'), (named.get(r.bodyRef.join(':')) ?? 0) + 1);
      // Issue 39: a history rides in the plan that changes its row, so a cut leaves it never ahead of the row.
      for (const r of rows) {
        const h = store.readHistory(qid, r.seq);
        if (!h) continue;
        const wrong = historyDisagreement(r, h, path.toLowerCase().endsWith('/$deadletterqueue'));
        if (tally) tally.historiesChecked++;
        if (!wrong) continue;
        if (tally) tally.historyDisagreements++;
        out.push(`${path}: history of ${wrong}`);
      }
    }
    for (const { key, value } of dbs.refs.getRange()) {
      const id = key.join(':');
      if ((named.get(id) ?? 0) !== value) out.push(`shared body ${id}: reference count ${value}, ${named.get(id) ?? 0} rows name it`);
      named.delete(id);
    }
    for (const [id, n] of named) out.push(`shared body ${id}: ${n} rows name it, no reference count`);
    if (inspect) {
      const rowsOf: RowsOf = (path) => {
        const qid = dbs.names.get(path);
        return typeof qid === 'number' ? store.load(qid).rows : [];
      };
      const historyOf: HistoryOf = (path, seq) => {
        const qid = dbs.names.get(path);
        return typeof qid === 'number' ? store.readHistory(qid, seq) : undefined;
      };
      out.push(...inspect(rowsOf, historyOf));
    }
    return out;
  } finally {
    await store.close();
    fs.rmSync(copy, { recursive: true, force: true });
  }
}

/** A kind of place an armed cut lands: just before the `n`th call `on` (n random in 1..maxN), in `mode` if given. */
export interface CutPoint {
  name: string;
  on: CutOn;
  maxN: number;
  mode?: CutMode;
}

/**
 * The write-ahead log's own cut points (docs/durability.md, "The write-ahead log"): a log flush cut between its write
 * and its fdatasync and torn (the record half on disk), a cut after some log flushes but before the LMDB apply that
 * covers them wrote its pages, a cut inside an LMDB apply or checkpoint, before its sync, and a cut inside a
 * checkpoint after its sync, between the deletions of its segments (a workload needs a small log bound for the
 * last, SMALL_LOG, or no checkpoint deletes a segment within a round). `runPowerCuts` counts where each landed.
 */
export const LOG_CUT_POINTS: readonly CutPoint[] = [
  { name: 'a log flush torn mid-record', on: { op: 'fsync', suffix: '.seg' }, maxN: 40, mode: 'torn' },
  { name: 'between log flushes and their LMDB apply', on: { op: 'write', suffix: 'data.mdb' }, maxN: 30 },
  { name: 'inside an LMDB apply or checkpoint, before its sync', on: { op: 'fsync', suffix: 'data.mdb' }, maxN: 10 },
  { name: "during a checkpoint's segment deletion", on: { op: 'unlink', suffix: '.seg' }, maxN: 2 },
];

/**
 * `Broker` settings for a power-cut broker whose log checkpoints and deletes segments every few hundred records:
 * the smallest log bound (Broker.LogMaxBytes 1 MiB: 1 MiB segments, a checkpoint at each roll).
 */
export const SMALL_LOG = { LogMaxBytes: 1024 * 1024 } as const;

/** One round of a power-cut run, as the workload sees it. */
export interface CutRound {
  readonly cut: number;
  /** Set once the power is off: the load must end soon after. */
  readonly stopped: boolean;
  /** Where a finding happened, for its message (the cut's number, mode, seed and how it was placed). */
  readonly where: string;
}

/** What a workload does on each round; every problem it returns fails the run and is printed. */
export interface PowerCutWorkload {
  /** The load on the running broker, until `round.stopped`. */
  load(broker: ChildBroker, round: CutRound): Promise<void>;
  /** True once the load is under way (its links are up); the cut's clock starts then, or after 5 s. */
  ready?(): boolean;
  /** Checks of the store the cut left (broker gone, unmounted), beyond {@link storeDisagreements}'. */
  offline?(rowsOf: RowsOf, round: CutRound, historyOf: HistoryOf): string[];
  /** Checks the restarted broker against what the load was told (and may drain it, so the next round starts small). */
  check(broker: ChildBroker, round: CutRound): Promise<string[]>;
}

/** The figures of a run that every workload reports. */
export interface PowerCutFigures {
  seed: number;
  cuts: number;
  /** Cuts armed to land before a mutating call (inside a commit, or between), and those that landed so. */
  armed: number;
  armedLanded: number;
  namesForgotten: number;
  pagesLost: number;
  tornPages: number;
  storeDisagreements: number;
  /** Stored delivery histories compared with their rows after the cuts, and those that disagreed (issue 39). */
  historiesChecked: number;
  historyDisagreements: number;
  problems: number;
  restartMs: { median: number; max: number };
  /** Per cut point (by name): how many cuts were armed on it and how many landed there (the rest were cut at the deadline). */
  points: Record<string, { armed: number; landed: number }>;
}

/** Restarts the broker on what a cut left; if it does not start, unmounts and adds why (with its output) to `problems`. */
export async function restartAfterCut(rig: PowerCutRig, where: string, problems: string[]): Promise<ChildBroker | undefined> {
  try {
    return await rig.restart();
  } catch (err) {
    await rig.unmount();
    problems.push(`the broker did not start after ${where}: ${(err as Error).message.slice(0, 2000)}`);
    return undefined;
  }
}

/** The median and the largest of `ms` (restart times), 0 for none. */
export function spread(ms: number[]): { median: number; max: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  return { median: sorted[sorted.length >> 1] ?? 0, max: sorted[sorted.length - 1] ?? 0 };
}

/** Resolves `p`, or undefined after `ms` (closing a client whose broker is gone must not hang the test). */
export const bounded = <T>(p: Promise<T>, ms: number): Promise<T | undefined> =>
  Promise.race([p.catch(() => undefined), sleep(ms).then(() => undefined)]);

/**
 * Runs `cuts` rounds of `workload` on `rig` (started here, stopped with SIGTERM at the end: its exit code is
 * `stopCode`) and returns the figures
 * with every problem found. Cut `i` uses mode `CUT_MODES[(i/2 + seed) % 4]`; even cuts land after a random delay of
 * up to 1 s, odd ones just before the broker's Nth mutating call, N random in 1..`maxOps`.
 */
export async function runPowerCuts(
  rig: PowerCutRig,
  opts: { cuts: number; seed: number; workload: PowerCutWorkload; maxOps?: number; points?: readonly CutPoint[]; progress?: () => Record<string, unknown> },
): Promise<{ figures: PowerCutFigures; problems: string[]; stopCode: number | string | null }> {
  const { cuts, seed, workload } = opts;
  const problems: string[] = [];
  const report = (list: string[]): void => {
    for (const p of list) if (problems.push(p) <= 10) console.error(p);
  };
  const restartMs: number[] = [];
  const f = { seed, cuts: 0, armed: 0, armedLanded: 0, namesForgotten: 0, pagesLost: 0, tornPages: 0, storeDisagreements: 0, historiesChecked: 0, historyDisagreements: 0 };
  const points: PowerCutFigures['points'] = {};
  for (const p of opts.points ?? []) points[p.name] = { armed: 0, landed: 0 };
  let broker = await rig.start();
  for (let cut = 0; cut < cuts; cut++) {
    const rnd = crypto.createHash('sha256').update(`${seed}/${cut}`).digest();
    let mode: CutMode = CUT_MODES[((cut >> 1) + seed) % CUT_MODES.length]!;
    const armed = cut % 2 === 1;
    // With cut points, the armed cuts take them in turn: a kind of call rather than a count of calls.
    const point = armed && opts.points?.length ? opts.points[(cut >> 1) % opts.points.length] : undefined;
    const n = 1 + (rnd.readUInt16BE(6) % (point?.maxN ?? opts.maxOps ?? 300));
    if (point?.mode) mode = point.mode;
    let stopped = false;
    const before = point ? `${point.name}: before ${point.on.op} ${n} of *${point.on.suffix}` : `before mutating call ${n}`;
    let where = `cut ${cut} (${mode}, ${armed ? before : 'timed'}, seed ${seed})`;
    const round: CutRound = { cut, get stopped() { return stopped; }, get where() { return where; } };
    const load = workload.load(broker, round);
    load.catch(() => undefined);
    if (workload.ready) await until(() => workload.ready!(), 5_000);
    let figures: CutFigures;
    if (armed) {
      figures = await rig.cutAt(mode, rnd.readUInt32BE(2), n, 3_000, point?.on);
      f.armed++;
      if (point) points[point.name]!.armed++;
      if (figures.atOp !== undefined) {
        f.armedLanded++;
        if (point) points[point.name]!.landed++;
        where = point ? `cut ${cut} (${mode}, ${before}, seed ${seed})` : `cut ${cut} (${mode}, before ${figures.op} ${n}, seed ${seed})`;
      }
    } else {
      await sleep(rnd.readUInt16BE(0) % 1000);
      figures = await rig.cut(mode, rnd.readUInt32BE(2));
    }
    stopped = true;
    f.cuts++;
    f.namesForgotten += figures.namesForgotten;
    f.pagesLost += figures.pages - figures.pagesKept;
    f.tornPages += figures.tornPages;
    const t0 = Date.now();
    // Operations in flight at the cut fail only at the SDK's timeout; nothing they do after the cut counts (a broker
    // that is gone confirms nothing), so the round goes on after a short grace and they finish in the background.
    await bounded(load, 500);
    const t1 = Date.now();
    await rig.unmount();
    const disagree = await storeDisagreements(rig.backingDataDir, workload.offline && ((rowsOf, historyOf) => workload.offline!(rowsOf, round, historyOf)), f);
    f.storeDisagreements += disagree.length;
    report(disagree.map((p) => `store after ${where}: ${p}`));
    broker = await rig.restart();
    restartMs.push(Math.round(broker.startMs));
    const t2 = Date.now();
    report((await workload.check(broker, round)).map((p) => `${p} (after ${where})`));
    if (process.env.PC_TIMING) console.error(`load end ${t1 - t0} ms, offline+restart ${t2 - t1} ms, check ${Date.now() - t2} ms`);
    // A long run prints its figures so far every 10 cuts: one stopped early still says what it found.
    if (LONG && cut % 10 === 9) emit({ partial: true, ...f, points, problems: problems.length, ...opts.progress?.() });
  }
  // The last restarted broker stops as any broker does: SIGTERM, exit code 0.
  broker.proc.kill('SIGTERM');
  const stopCode = await exited(broker.proc);
  return { figures: { ...f, problems: problems.length, restartMs: spread(restartMs), points }, problems, stopCode };
}
