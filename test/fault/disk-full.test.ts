// Disk full on a real filesystem — the recovery half (docs/durability.md, "Disk full and disk errors"). The data
// directory is a small tmpfs mounted for this test. In the first cycle the store itself grows into the limit (LMDB's
// map starts at 128 KiB and is grown by lmdb-js; the data file grows page by page) while a ballast file holds back a
// reserve; in later cycles a ballast fills the filesystem up to a little room. Either way sends go on until the broker
// refuses them. A real full disk fails only the writes that need new blocks: LMDB's meta-page overwrite lands on blocks
// already allocated, so the failed commit is just aborted (no MDB_PANIC, unlike disk-errors.test.ts, where every
// pwrite64 fails and the store goes fatal by design). Then the ballast is deleted ("space returns") and the same broker
// process must accept sends again, without a restart. Several fill/free cycles; finally a clean restart on the same
// directory must hold every accepted message and none of the refused ones.
//
// Needs root (mount -t tmpfs); skipped otherwise, with the reason in the test name.

import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import rhea from 'rhea';
import { connect } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, receiveLocked, restartAndTally, sendOne, settle, size, sleep } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const FS_MB = 32;
/** Cycle 0: the ballast that holds back a reserve while the store fills the rest with BIG bodies. */
const RESERVE = 8 * 1024 * 1024;
const BIG = Buffer.alloc(200 * 1024, 'y');
/** Later cycles: free space left beside the ballast, a few dozen sends' worth before the filesystem is full. */
const ROOM = 512 * 1024;
const BODY = Buffer.alloc(16 * 1024, 'x');
const CYCLES = size(3, 6);
/** Sends accepted after the ballast is deleted, per cycle (all of them must be). */
const AFTER = size(20, 40);
/** A cycle's fill phase ends after this many refusals in a row (or MAX_FILL sends). */
const REFUSALS = 5;
const MAX_FILL = 400;
/** Messages received and completed while the filesystem is full (cycle 0). */
const LOCKED = 3;
/** Messages received and completed after space returned (the last cycle), before the restart. */
const AFTER_COMPLETES = 10;

// Mount once at collection time so that a machine that cannot (not root, no CAP_SYS_ADMIN) skips with a reason.
const mnt = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-tmpfs-'));
const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${FS_MB}m`, 'tmpfs', mnt], { encoding: 'utf8' });
const mounted = mount.status === 0;
const skipReason = mounted ? '' : ` [skipped: cannot mount tmpfs: ${(mount.stderr || mount.error?.message || '').trim() || 'not root?'}]`;
const { config, dir } = writeConfig([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }]);
const dataDir = path.join(mnt, 'data');
const ballast = path.join(mnt, 'ballast');

const children: ChildProcess[] = [];
afterAll(async () => {
  // A failed assertion leaves the broker running, and the tmpfs busy.
  for (const p of children) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await Promise.all(children.map((p) => exited(p)));
  if (mounted && spawnSync('umount', [mnt]).status !== 0) spawnSync('umount', ['-l', mnt]);
  fs.rmSync(mnt, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Bytes free on the tmpfs. */
function free(): number {
  const s = fs.statfsSync(mnt);
  return s.bavail * s.bsize;
}

/** Writes a ballast file of `bytes` (or fewer, if the filesystem fills up first). */
function writeBallast(bytes: number): void {
  const fd = fs.openSync(ballast, 'w');
  const chunk = Buffer.alloc(256 * 1024, 1);
  try {
    for (let left = bytes; left > 0; left -= chunk.length) {
      fs.writeSync(fd, chunk, 0, Math.min(chunk.length, left));
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** The distinct causes in the broker's `store write failed` log lines, with counts. */
function storeErrors(output: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of output.split('\n')) {
    if (!line.includes('store write failed')) continue;
    let key = '?';
    try {
      const err = (JSON.parse(line) as { err?: { message?: string; code?: string } }).err;
      key = `${err?.code ?? ''} ${err?.message ?? ''}`.trim();
    } catch {
      /* not JSON */
    }
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

describe.skipIf(!mounted)(`disk full on a real (tmpfs) filesystem, then space returns${skipReason}`, () => {
  it('refuses sends while full, accepts them again in the same process once space returns, and loses nothing', async () => {
    const t0 = Date.now();
    const broker = await startChild(['--config', config, '--data-dir', dataDir]);
    children.push(broker.proc);
    const history = new Map<string, 'ok' | 'fail' | 'info'>();
    const conditions = new Map<string, number>();
    const perCycle: { filled: number; refused: number; okWhileFull: number; recovered: number; freeAtFull: number; dataMB: number }[] = [];
    let conn: Any = await connect(broker.port);
    const completes = new Map<string, 'ok' | 'fail' | 'info'>();
    let n = 0;
    const send = async (body = BODY): Promise<'ok' | 'fail' | 'info'> => {
      const id = `m${n++}`;
      const a = await sendOne(conn, 'q', { message_id: id, body: rhea.message.data_section(body) }, 10_000);
      history.set(id, a.outcome);
      if (a.outcome === 'fail') conditions.set(a.condition ?? '?', (conditions.get(a.condition ?? '?') ?? 0) + 1);
      if (a.outcome === 'info' && !conn.is_open()) conn = await connect(broker.port); // should not happen
      return a.outcome;
    };
    expect(await send()).toBe('ok');

    for (let c = 0; c < CYCLES && broker.proc.exitCode === null; c++) {
      writeBallast(c === 0 ? RESERVE : free() - ROOM);
      const cycle = { filled: 0, refused: 0, okWhileFull: 0, recovered: 0, freeAtFull: 0, dataMB: 0 };
      // Fill phase: send until REFUSALS refusals in a row.
      let streak = 0;
      for (let i = 0; i < MAX_FILL && streak < REFUSALS && broker.proc.exitCode === null; i++) {
        const o = await send(c === 0 ? BIG : BODY);
        cycle.filled++;
        if (o === 'ok') {
          if (cycle.refused > 0) cycle.okWhileFull++; // a commit that fit into pages LMDB freed earlier
          streak = 0;
        } else {
          cycle.refused++;
          streak++;
        }
      }
      cycle.freeAtFull = free();
      if (c === 0) {
        // Settlements while full. A complete is a delete, which still needs new pages (copy-on-write); they may
        // fit in blocks the data file already holds (pages the refused commits wrote, pages LMDB freed), so it
        // may succeed or be refused — but one the broker confirmed must stay done.
        const rx = receiveLocked(conn, 'q', LOCKED);
        for (const m of await rx.waitFor(LOCKED, 5_000)) completes.set(m.id, (await settle(m.delivery, 'complete', 5_000)).outcome);
        rx.receiver.close();
      }
      cycle.dataMB = Math.round(fs.statSync(path.join(dataDir, 'data.mdb')).size / 104857.6) / 10;
      // Space returns: same process, no restart.
      fs.rmSync(ballast);
      for (let i = 0; i < AFTER && broker.proc.exitCode === null; i++) if ((await send()) === 'ok') cycle.recovered++;
      perCycle.push(cycle);
    }
    const aliveAfterRecovery = broker.proc.exitCode === null && broker.proc.signalCode === null;

    // Receive and complete a few in the same process, then stop gracefully, restart on the same directory and
    // drain the rest: every accepted, not completed message must be there.
    const rx = receiveLocked(conn, 'q', AFTER_COMPLETES);
    let completedAfter = 0;
    for (const m of await rx.waitFor(AFTER_COMPLETES, 5_000)) {
      const o = (await settle(m.delivery, 'complete', 5_000)).outcome;
      if (!completes.has(m.id)) completes.set(m.id, o);
      if (o === 'ok') completedAfter++;
    }
    conn.close();
    broker.proc.kill('SIGTERM');
    const stopCode = await exited(broker.proc);
    await sleep(100);
    const output = broker.output();
    const { tally, seen } = await restartAndTally(config, dataDir, history, {
      consumed: (id) => completes.get(id) === 'ok',
      track: (p) => children.push(p),
    });
    const completedSeen = [...completes].filter(([id, o]) => o === 'ok' && seen.has(id)).length;
    const figures = { test: 'disk-full', fsMB: FS_MB, cycles: perCycle.length, ...tally };
    const unhandled = /unhandled rejection/.test(output);
    const fatal = /StoreFatalError|failed for good/.test(output);
    emit({
      ...figures,
      conditions: Object.fromEntries(conditions),
      completesWhileFull: Object.fromEntries([...completes].slice(0, LOCKED)),
      completedAfter,
      completedSeen,
      drainedAfterRestart: seen.size,
      perCycle,
      aliveAfterRecovery,
      stopCode,
      fatal,
      unhandled,
      storeErrors: storeErrors(output),
      lmdbErrors: [...new Set(output.match(/^Error: .*$/gm) ?? [])],
      ms: Date.now() - t0,
    });

    expect(aliveAfterRecovery).toBe(true);
    expect(fatal).toBe(false);
    expect(unhandled).toBe(false);
    expect(perCycle.length).toBe(CYCLES);
    for (const cycle of perCycle) {
      expect(cycle.refused).toBeGreaterThan(0); // the filesystem did fill up
      expect(cycle.recovered).toBe(AFTER); // and every send after the ballast went was accepted, in-process
    }
    expect([...conditions.keys()]).toEqual(['com.microsoft:server-busy']);
    // The broker's log names each refused write's cause as a full disk: the write-ahead log refuses a write that would
    // leave less than the reserve LMDB needs, before LMDB (which lmdb-js may abort on) ever meets a full disk.
    const logged = Object.keys(storeErrors(output));
    expect(logged.length).toBeGreaterThan(0);
    for (const line of logged) expect(line).toMatch(/^Write refused \(the last [\d.]+ MiB are kept for the index\): the disk holding the data directory \S+ is full \([\d.]+ (bytes|KiB|MiB) free\)/);
    expect(figures.info).toBe(0);
    expect(figures.lost).toBe(0);
    expect(figures.failStored).toBe(0);
    expect(figures.unexpected).toBe(0);
    expect(stopCode).toBe(0);
    expect(completes.size).toBe(LOCKED + AFTER_COMPLETES);
    expect(completedAfter).toBe(AFTER_COMPLETES);
    expect(completedSeen).toBe(0); // a complete the broker confirmed stays done
  }, 60_000);
});
