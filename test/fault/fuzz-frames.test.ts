// Hostile input is contained (docs/durability.md, "The promises"): malformed frames and a generated-input fuzzer
// against a child broker, while a canary producer/consumer keeps working. Cases: bad protocol headers (TLS, HTTP, wrong
// id/version), broken frame headers (size < 8, doff < 2, oversized, wrong type), valid-ish performatives with wrong
// fields, state-machine violations, mutated (bit-flipped, truncated, spliced) recordings of a valid session, random
// bytes after a valid login — each written in random chunks. Seeded; bounded in count and time (CI size, or long size).

import { describe, expect, it } from 'vitest';
import { connect } from '../helpers/amqp-client.js';
import { LONG, emit, receiveLocked, rssMB, sendOne, settle, sharedChild, size, sleep, until } from '../helpers/fault.js';
import { RawConn, attachSender, frame, header, loginPrefix, transfer } from '../helpers/raw-amqp.js';
import { prng } from '../helpers/prng.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const CASES = size(1_500, 20_000);
const CONCURRENCY = 25;
const TIME_BUDGET_MS = size(25_000, 2 * 60 * 60_000);
// CI runs one fixed seed, so a red run always means a regression; the long size draws a new seed each run to
// explore; set PEEKLOCK_SEED to replay one. The case order is only roughly replayable: the 25 workers share one
// PRNG with the chunking, so timing changes which worker draws what. Seed 541995 used to stall the broker about
// one run in six (a disposition with a null first: decode-bomb.test.ts, rhea-patches.ts); it no longer does.
const SEED = Number(process.env.PEEKLOCK_SEED ?? (LONG ? Date.now() % 1_000_000 : 11_479));
const child = sharedChild([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }, { Name: 'canary' }]);

interface Case {
  kind: string;
  bytes: Buffer;
  /** The broker must close the connection within 1 s (definitely invalid input). */
  mustClose: boolean;
}

function generator(rand: () => number): () => Case {
  const int = (n: number): number => Math.floor(rand() * n);
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
  const pick = <T,>(xs: T[]): T => xs[int(xs.length)]!;
  const odd = (): unknown => pick([0, 1, 0xffffffff, -1, 2 ** 31, null, 'x', Buffer.alloc(0), true, [], { a: 1 }, 1.5]);
  const login = loginPrefix();
  const session = Buffer.concat([login, attachSender(0, 'q'), transfer(0, 0, Buffer.from([0, 0x53, 0x75, 0xa0, 1, 1]), false)]);
  const frameHeader = (sizeField: number, doff: number, type: number, channel = 0): Buffer => {
    const b = Buffer.alloc(8);
    b.writeUInt32BE(sizeField >>> 0);
    b[4] = doff;
    b[5] = type;
    b.writeUInt16BE(channel, 6);
    return b;
  };
  const performatives = ['open', 'begin', 'attach', 'flow', 'transfer', 'disposition', 'detach', 'end', 'close'];
  const gens: (() => Case)[] = [
    () => ({ kind: 'tls-hello', bytes: Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]), bytes(int(64))]), mustClose: true }),
    // The AMQP port serves HTTP too (first-byte dispatch): the request is answered, and closed as it asks.
    () => ({ kind: 'http', bytes: Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), mustClose: true }),
    () => ({ kind: 'bad-version', bytes: Buffer.from([0x41, 0x4d, 0x51, 0x50, pick([0, 1, 2, 3, 9]), int(3), 1 + int(3), int(2)]), mustClose: true }),
    () => ({ kind: 'junk-header', bytes: bytes(8 + int(32)), mustClose: true }),
    () => ({ kind: 'size<8', bytes: Buffer.concat([login, frameHeader(int(8), 2, 0)]), mustClose: true }),
    () => ({ kind: 'doff<2', bytes: Buffer.concat([login, frameHeader(8 + int(64), int(2), 0), bytes(64)]), mustClose: true }),
    () => ({ kind: 'oversized', bytes: Buffer.concat([login, frameHeader(262_145 + int(2 ** 31), 2, 0), bytes(int(64))]), mustClose: true }),
    () => ({ kind: 'wrong-type', bytes: Buffer.concat([login, frameHeader(8, 2, 1 + int(255))]), mustClose: true }),
    () => ({ kind: 'sasl-junk', bytes: Buffer.concat([header(3), frameHeader(8 + int(16), 2, 1), bytes(16)]), mustClose: false }),
    () => {
      const name = pick(performatives);
      const fields: Record<string, unknown> = {};
      for (const f of ['handle', 'name', 'role', 'delivery_id', 'first', 'last', 'settled', 'link_credit', 'remote_channel', 'channel_max', 'max_frame_size', 'error', 'more', 'closed']) {
        if (rand() < 0.4) fields[f] = odd();
      }
      let f: Buffer;
      try {
        f = frame(int(3), name, fields, rand() < 0.3 ? bytes(int(200)) : undefined);
      } catch {
        f = bytes(16); // rhea refused to encode a value: random bytes instead
      }
      return { kind: `wrong-fields:${name}`, bytes: Buffer.concat([login, f]), mustClose: false };
    },
    () => {
      const seq = [transfer(int(4), int(10), bytes(int(100)), rand() < 0.5), frame(0, 'disposition', { role: true, first: int(100), settled: true }), frame(0, 'detach', { handle: int(5), closed: true }), frame(0, 'flow', { handle: int(5), link_credit: int(1e6), next_incoming_id: 0, incoming_window: 1, next_outgoing_id: 0, outgoing_window: 1 }), attachSender(0, 'q'), attachSender(0, 'q'), frame(0, 'end', {}), frame(0, 'begin', { next_outgoing_id: 0, incoming_window: 1, outgoing_window: 1 })];
      const out = [login];
      for (let i = 0, n = 1 + int(6); i < n; i++) out.push(pick(seq));
      return { kind: 'state-machine', bytes: Buffer.concat(out), mustClose: false };
    },
    () => {
      const b = Buffer.from(session);
      for (let i = 0, n = 1 + int(8); i < n; i++) b[int(b.length)] ^= 1 << int(8);
      return { kind: 'bit-flip', bytes: b, mustClose: false };
    },
    () => ({ kind: 'truncated', bytes: session.subarray(0, int(session.length)), mustClose: false }),
    () => {
      const a = int(session.length);
      const b = int(session.length);
      return { kind: 'splice', bytes: Buffer.concat([session.subarray(0, a), session.subarray(b)]), mustClose: false };
    },
    () => ({ kind: 'random-after-login', bytes: Buffer.concat([login, bytes(1 + int(512))]), mustClose: false }),
  ];
  return () => pick(gens)();
}

/** Writes one case in random chunks; returns whether the broker closed the connection within `waitMs`. */
async function runCase(port: number, c: Case, rand: () => number, waitMs: number): Promise<boolean> {
  const conn = new RawConn(port);
  if (!(await conn.ready())) return true;
  let off = 0;
  for (let i = 0; off < c.bytes.length && i < 64 && !conn.closed; i++) {
    const n = 1 + Math.floor(rand() * Math.max(1, c.bytes.length - off));
    await conn.write(c.bytes.subarray(off, off + n));
    off += n;
    if (rand() < 0.2) await sleep(1);
  }
  await until(() => conn.closed, waitMs);
  const closed = conn.closed;
  conn.destroy();
  return closed;
}

describe('malformed frames and fuzzing', () => {
  it('stays up, closes bad connections, and keeps serving a canary', async () => {
    const broker = child.broker;
    const rand = prng(SEED);
    const next = generator(rand);
    const rssBefore = rssMB(broker.proc.pid);
    let rssMax = rssBefore;
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMB(broker.proc.pid))), 100);

    // Canary: send, receive under lock, complete — one at a time, for as long as the fuzzer runs.
    let fuzzing = true;
    const canary = { ok: 0, fail: 0, latencies: [] as number[] };
    const canaryRun = (async () => {
      const conn: Any = await connect(broker.port);
      const r = receiveLocked(conn, 'canary', 1000);
      for (let i = 0; fuzzing && i < 100_000; i++) {
        const t0 = performance.now();
        const sent = await sendOne(conn, 'canary', { message_id: `c${i}`, body: 'canary' }, 5_000);
        const got = await r.waitFor(i + 1, 5_000);
        const m = got[i];
        const done = m ? await settle(m.delivery, 'complete', 5_000) : { outcome: 'info' };
        if (sent.outcome === 'ok' && done.outcome === 'ok') canary.ok++;
        else canary.fail++;
        canary.latencies.push(performance.now() - t0);
        await sleep(20);
      }
      conn.close();
    })();

    const byKind = new Map<string, number>();
    let ran = 0;
    let hangs = 0;
    const hung = new Map<string, number>();
    const deadline = Date.now() + TIME_BUDGET_MS;
    const worker = async (): Promise<void> => {
      while (ran < CASES && Date.now() < deadline && broker.proc.exitCode === null) {
        const c = next();
        ran++;
        byKind.set(c.kind.split(':')[0]!, (byKind.get(c.kind.split(':')[0]!) ?? 0) + 1);
        const closed = await runCase(broker.port, c, rand, c.mustClose ? 5_000 : 150);
        if (c.mustClose && !closed) {
          hangs++;
          hung.set(c.kind, (hung.get(c.kind) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    fuzzing = false;
    await canaryRun;
    clearInterval(sampler);
    await sleep(500);
    const rssAfter = rssMB(broker.proc.pid);
    const lat = [...canary.latencies].sort((a, b) => a - b);
    const q = (p: number): number => Math.round(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN);
    emit({
      test: 'fuzz-frames',
      seed: SEED,
      runs: ran,
      crashes: broker.proc.exitCode === null ? 0 : 1,
      hangs,
      canaryOk: canary.ok,
      canaryFail: canary.fail,
      p50Ms: q(0.5),
      p99Ms: q(0.99),
      rssBeforeMB: rssBefore,
      rssMaxMB: rssMax,
      rssAfterMB: rssAfter,
      kinds: Object.fromEntries(byKind),
      hung: Object.fromEntries(hung),
    });
    expect(broker.proc.exitCode).toBeNull();
    expect(ran).toBeGreaterThan(Math.min(CASES, 200));
    expect(hangs).toBe(0);
    expect(canary.ok).toBeGreaterThan(0);
    expect(canary.fail).toBe(0);
    // Memory stays bounded under hostile input (docs/durability.md, "The promises"). RSS is sampled without forcing a
    // GC in the child, so the figure after the run (reported above) includes garbage V8 has not returned yet; the bound
    // is on the peak.
    expect(rssMax - rssBefore).toBeLessThan(400);
    expect(broker.output()).not.toMatch(/"level":60|unhandled/);
  }, TIME_BUDGET_MS + 30_000);
});
