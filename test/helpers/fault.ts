// Shared pieces of the fault tests (docs/testing.md, "Fault tests: sizes and figures"): CI or long size, one JSON line
// of figures, the child's RSS, and raw rhea client operations that report what the broker answered (peek-lock receive,
// confirmed settle, `$management` requests). Every wait here has a deadline.

import fs from 'node:fs';
import rhea from 'rhea';
import { afterAll, beforeAll } from 'vitest';
import { connect, drain } from './amqp-client.js';
import { exited, startChild, writeConfig, type ChildBroker } from './child-broker.js';
import { tagToLockToken } from '../../src/amqp/lock-token.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** True for the long (manual / nightly) size: `PEEKLOCK_LONG=1 npm test`. */
export const LONG = !!process.env.PEEKLOCK_LONG;

/** The CI value, or the long one under PEEKLOCK_LONG. */
export function size<T>(ci: T, long: T): T {
  return LONG ? long : ci;
}

/** Writes the test's one JSON line of figures (docs/testing.md, "Fault tests: sizes and figures") to stdout. */
export function emit(figures: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify({ ...figures, long: LONG }) + '\n');
}

/** Resident set size of a process in MB (Linux /proc), or NaN if it is gone. */
export function rssMB(pid: number | undefined): number {
  return statusMB(pid, 'VmRSS');
}

/** A memory field of /proc/<pid>/status (VmRSS, RssAnon, RssFile …) in MB, or NaN if it (or the process) is gone. */
export function statusMB(pid: number | undefined, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
  } catch {
    return NaN;
  }
}

/** The node process strace started (strace's only child). */
export function tracee(stracePid: number): number | undefined {
  try {
    const kids = fs.readFileSync(`/proc/${stracePid}/task/${stracePid}/children`, 'utf8').trim().split(/\s+/);
    return kids[0] ? Number(kids[0]) : undefined;
  } catch {
    return undefined;
  }
}

/** One child broker for a whole test file: started before the tests, killed and its directory removed after. */
export function sharedChild(queues: unknown[], settings: Record<string, unknown> = {}): { readonly broker: ChildBroker } {
  const { config, dataDir, dir } = writeConfig(queues, settings);
  let broker: ChildBroker | undefined;
  beforeAll(async () => {
    broker = await startChild(['--config', config, '--data-dir', dataDir]);
  });
  afterAll(async () => {
    broker?.proc.kill('SIGKILL');
    if (broker) await exited(broker.proc);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    get broker(): ChildBroker {
      if (!broker) throw new Error('the child broker is not running');
      return broker;
    },
  };
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 10 ms until true or `timeoutMs` passed; resolves with the last value. */
export async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!cond() && Date.now() < end) await sleep(10);
  return cond();
}

/** A message received under a peek lock by {@link receiveLocked}. */
export interface Locked {
  id: string;
  deliveryCount: number;
  token: string;
  lockedUntil: number;
  body: Buffer;
  delivery: Any;
  at: number;
}

/** A peek-lock receiver (settle mode second: the broker confirms every settlement). */
export interface LockReceiver {
  got: Locked[];
  receiver: Any;
  /** Waits until `n` messages arrived or `timeoutMs` passed. */
  waitFor(n: number, timeoutMs: number): Promise<Locked[]>;
}

/** Opens a peek-lock receiver with `credit` (granted once, then topped up as messages arrive if `refill`). */
export function receiveLocked(conn: Any, address: string, credit: number, refill = false): LockReceiver {
  const receiver = conn.open_receiver({
    source: { address },
    credit_window: 0,
    autoaccept: false,
    autosettle: false,
    rcv_settle_mode: 1,
  });
  const got: Locked[] = [];
  receiver.add_credit(credit);
  receiver.on('message', (ctx: Any) => {
    const m = ctx.message;
    const body = m.body;
    got.push({
      id: String(m.message_id),
      deliveryCount: m.delivery_count ?? 0,
      token: tagToLockToken(ctx.delivery.tag),
      lockedUntil: Number(m.message_annotations?.['x-opt-locked-until'] ?? 0),
      body: Buffer.isBuffer(body?.content) ? body.content : Buffer.from(String(body)),
      delivery: ctx.delivery,
      at: Date.now(),
    });
    if (refill) receiver.add_credit(1);
  });
  return {
    got,
    receiver,
    waitFor: async (n, timeoutMs) => {
      await until(() => got.length >= n, timeoutMs);
      return got;
    },
  };
}

/** What the broker answered to a settlement or send: ok, a definite failure (with condition), or unknown. */
export interface Answer {
  outcome: 'ok' | 'fail' | 'info';
  condition?: string;
}

/**
 * Sends a disposition unsettled, waits (bounded) for the broker's settled reply, then settles locally. In
 * rcv-settle-mode second the receiver settles after the sender does (AMQP 1.0 §2.6.12); rhea (autosettle off)
 * frees the delivery's slot of its session buffer, which is its incoming window, only on that local settle.
 */
export async function settle(delivery: Any, kind: 'complete' | 'abandon', timeoutMs = 10_000): Promise<Answer> {
  const state = kind === 'complete' ? (rhea.message as Any).accepted() : (rhea.message as Any).modified({ delivery_failed: true });
  delivery.update(false, state.described());
  if (!(await until(() => !!delivery.remote_settled, timeoutMs))) return { outcome: 'info' };
  // Already settled by the broker: rhea sends nothing, drops the delivery and reopens the window with a flow.
  delivery.update(true);
  const remote = delivery.remote_state;
  const condition = remote?.error?.condition;
  return condition ? { outcome: 'fail', condition } : { outcome: 'ok' };
}

/** Sends one message and waits (bounded) for its disposition. */
export function sendOne(conn: Any, address: string, msg: Record<string, unknown>, timeoutMs = 10_000): Promise<Answer> {
  const sender = conn.open_sender({ target: { address } });
  return new Promise((resolve) => {
    const done = (a: Answer): void => {
      clearTimeout(timer);
      try {
        sender.close();
      } catch {
        /* connection gone */
      }
      resolve(a);
    };
    const timer = setTimeout(() => done({ outcome: 'info' }), timeoutMs);
    sender.once('sendable', () => sender.send(msg));
    sender.once('accepted', () => done({ outcome: 'ok' }));
    sender.once('rejected', (ctx: Any) => done({ outcome: 'fail', condition: ctx.delivery.remote_state?.error?.condition }));
    sender.once('released', () => done({ outcome: 'fail', condition: 'released' }));
    sender.once('sender_close', (ctx: Any) => done({ outcome: 'fail', condition: ctx.sender?.remote?.detach?.error?.condition ?? 'detached' }));
  });
}

/** A `$management` request/response pair on one entity. */
export interface Management {
  request(operation: string, body: Record<string, unknown>, timeoutMs?: number): Promise<{ status: number; condition?: string; body: Any }>;
  close(): void;
}

/** Opens the `$management` link pair of `entity`. */
export async function management(conn: Any, entity: string): Promise<Management> {
  const address = `${entity}/$management`;
  const replyTo = `reply-${Math.random().toString(36).slice(2)}`;
  const sender = conn.open_sender({ target: { address } });
  const receiver = conn.open_receiver({ source: { address }, target: { address: replyTo } });
  const waiting = new Map<string, (m: Any) => void>();
  receiver.on('message', (ctx: Any) => waiting.get(String(ctx.message.correlation_id))?.(ctx.message));
  await Promise.all([new Promise((r) => sender.once('sendable', r)), new Promise((r) => receiver.once('receiver_open', r))]);
  let n = 0;
  return {
    request: (operation, body, timeoutMs = 10_000) =>
      new Promise((resolve) => {
        const id = `m${++n}`;
        const timer = setTimeout(() => resolve({ status: 0, body: null }), timeoutMs);
        waiting.set(id, (m) => {
          clearTimeout(timer);
          waiting.delete(id);
          const p = m.application_properties ?? {};
          resolve({ status: Number(p.statusCode ?? p['status-code'] ?? 0), condition: p['error-condition'], body: m.body });
        });
        sender.send({ message_id: id, reply_to: replyTo, application_properties: { operation }, body });
      }),
    close: () => {
      sender.close();
      receiver.close();
    },
  };
}

/** Outcome counts of a send history checked against what a restarted broker still holds. */
export interface SendTally {
  runs: number;
  ok: number;
  fail: number;
  info: number;
  /** Accepted but not found (unless `consumed` says it was completed on purpose). */
  lost: number;
  /** Refused but found. */
  failStored: number;
  /** Found but never sent. */
  unexpected: number;
}

/**
 * Starts a fresh broker on `dataDir` (no faults), drains `address` and tallies `history` (message id → send
 * outcome) against what it held. `consumed(id)` marks messages completed on purpose, which must not count as lost.
 */
export async function restartAndTally(
  config: string,
  dataDir: string,
  history: Map<string, 'ok' | 'fail' | 'info'>,
  opts: { address?: string; consumed?: (id: string) => boolean; track?: (p: ChildBroker['proc']) => void } = {},
): Promise<{ tally: SendTally; seen: Set<string> }> {
  const again = await startChild(['--config', config, '--data-dir', dataDir]);
  opts.track?.(again.proc);
  const conn = await connect(again.port);
  const received = await drain(conn, opts.address ?? 'q', 700);
  conn.close();
  again.proc.kill('SIGTERM');
  await exited(again.proc);
  const seen = new Set(received.map((m) => m.id));
  const tally: SendTally = { runs: history.size, ok: 0, fail: 0, info: 0, lost: 0, failStored: 0, unexpected: 0 };
  for (const [id, o] of history) {
    tally[o]++;
    if (o === 'ok' && !seen.has(id) && !opts.consumed?.(id)) tally.lost++;
    if (o === 'fail' && seen.has(id)) tally.failStored++;
  }
  for (const id of seen) if (!history.has(id)) tally.unexpected++;
  return { tally, seen };
}
