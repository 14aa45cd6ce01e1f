// The write-ahead log alone (src/store/log/wal.ts, records.ts): what it writes reads back after a restart, a tail
// that did not fully reach the disk is dropped and never anything before it, segments roll and are deleted below a
// checkpoint, and a failed write or fdatasync is fatal through a StoreFatalError, never an abort.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreFatalError } from '../../src/store/lmdb/errors.js';
import { encodeRecord, HEADER_BYTES } from '../../src/store/log/records.js';
import { FIRST_SEGMENT_BYTES, nodeLogFs, SEGMENT_BYTES, segmentFile, WriteAheadLog, type LogFs } from '../../src/store/log/wal.js';
import type { StoreOp } from '../../src/store/store.js';

const MiB = 1024 * 1024;
const dirs: string[] = [];
const logs: WriteAheadLog[] = [];
afterEach(async () => {
  for (const l of logs.splice(0)) await l.close().catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-wal-'));
  dirs.push(d);
  return path.join(d, 'log');
}

function op(i: number, bytes = 16): StoreOp {
  return { op: 'sharedBody', qid: 1, seq: i, body: new Uint8Array(bytes).fill(i & 0xff) };
}

/** A fresh log in `dir` after recovering whatever is there (as the store does at open); returns it and what it replayed. */
function openLog(dir: string, opts: ConstructorParameters<typeof WriteAheadLog>[1] = {}, after = 0): { log: WriteAheadLog; replayed: number[] } {
  const log = new WriteAheadLog(dir, { segmentBytes: MiB, ...opts });
  logs.push(log);
  const replayed = [...log.recover(after)].map((r) => r.lsn);
  return { log, replayed };
}

/** Recovers `dir` with a new log object (the process that wrote it gone), without starting a new log. */
function scan(dir: string, after = 0): { lsns: number[]; ops: StoreOp[][]; log: WriteAheadLog } {
  const log = new WriteAheadLog(dir, { segmentBytes: MiB });
  const recs = [...log.recover(after)];
  return { lsns: recs.map((r) => r.lsn), ops: recs.map((r) => r.ops), log };
}

describe('WriteAheadLog', () => {
  it('reads back every flushed record, in order, with its operations, after a restart', () => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    expect(log.append([op(1)])).toBe(1);
    expect(log.append([op(2), { op: 'delete', qid: 3, seq: 4 }])).toBe(2);
    log.flush();
    log.append([{ op: 'meta', qid: 1, key: 'rules', value: { a: [1, 'x'], b: null } }]);
    log.flush();
    const { lsns, ops, log: again } = scan(dir);
    expect(lsns).toEqual([1, 2, 3]);
    expect(ops[1]![1]).toEqual({ op: 'delete', qid: 3, seq: 4 });
    expect(Buffer.from((ops[0]![0] as { body: Uint8Array }).body)).toEqual(Buffer.alloc(16, 1));
    expect(ops[2]).toEqual([{ op: 'meta', qid: 1, key: 'rules', value: { a: [1, 'x'], b: null } }]);
    expect(again.ended?.why).toBe('end');
    expect(again.next).toBe(4);
  });

  it('skips records at or below the LSN the index already holds', () => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    for (let i = 1; i <= 5; i++) log.append([op(i)]);
    log.flush();
    expect(scan(dir, 3).lsns).toEqual([4, 5]);
    expect(scan(dir, 5).lsns).toEqual([]);
  });

  it('a record appended but not flushed is not on disk', () => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    log.append([op(1)]);
    log.flush();
    log.append([op(2)]);
    expect(scan(dir).lsns).toEqual([1]);
  });

  // Damage the last record of the only segment in the ways a cut leaves it, and check that only it is dropped.
  const damaged = (how: (file: string, start: number, len: number) => void, why: string): void => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    log.append([op(1)]);
    log.append([op(2)]);
    log.flush();
    log.append([op(3, 3000)]);
    log.flush();
    const file = segmentFile(dir, 1);
    const start = encodeRecord(1, [op(1)]).length + encodeRecord(2, [op(2)]).length;
    how(file, start, encodeRecord(3, [op(3, 3000)]).length);
    const s = scan(dir);
    expect(s.lsns).toEqual([1, 2]);
    expect(s.log.ended?.why).toBe(why);
    // The log goes on after the dropped tail: the next record takes the dropped one's LSN.
    const { log: next, replayed } = openLog(dir);
    expect(replayed).toEqual([1, 2]);
    next.start();
    expect(next.append([op(9)])).toBe(3);
  };
  const patch = (file: string, at: number, bytes: Buffer): void => {
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, bytes, 0, bytes.length, at);
    fs.closeSync(fd);
  };

  it('drops a torn tail record (only its first 4 KiB reached the disk)', () => {
    damaged((file, start, len) => patch(file, start + 512, Buffer.alloc(len - 512)), 'crc');
  });

  it('drops a zeroed tail record (its page never reached the disk)', () => {
    damaged((file, start, len) => patch(file, start, Buffer.alloc(len)), 'end');
  });

  it('drops a tail record whose checksum does not match (one flipped byte)', () => {
    damaged((file, start, len) => {
      const b = fs.readFileSync(file).subarray(start + len - 1, start + len);
      patch(file, start + len - 1, Buffer.from([b[0]! ^ 0x40]));
    }, 'crc');
  });

  it('drops a tail record whose length runs past the segment', () => {
    damaged((file, start) => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(2 * MiB);
      patch(file, start, b);
    }, 'torn');
  });

  it('stops at a record whose LSN does not follow the one before', () => {
    damaged((file, start) => patch(file, start, encodeRecord(7, [op(3, 3000)])), 'lsn');
  });

  it('rolls to a new segment named by its first LSN, and reads across segments', async () => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    let lsn = 0;
    for (let i = 0; i < 30; i++) {
      for (let j = 0; j < 4; j++) lsn = log.append([op(i, 40_000)]);
      log.flush();
      if (i === 10) await new Promise((r) => setTimeout(r, 50)); // the spare may or may not be ready at a roll
    }
    const starts = log.segmentStarts;
    expect(starts.length).toBeGreaterThan(3);
    expect(starts[0]).toBe(1);
    for (const s of starts) expect(fs.existsSync(segmentFile(dir, s))).toBe(true);
    const got = scan(dir).lsns;
    expect(got).toEqual(Array.from({ length: lsn }, (_, i) => i + 1));
  });

  it('a record larger than a segment gets a segment of its own', () => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    log.append([op(1)]);
    log.flush();
    log.append([op(2, 3 * MiB)]);
    log.flush();
    log.append([op(3)]);
    log.flush();
    const s = scan(dir);
    expect(s.lsns).toEqual([1, 2, 3]);
    expect((s.ops[1]![0] as { body: Uint8Array }).body.length).toBe(3 * MiB);
  });

  it('a start without a spare writes a small first segment, and the full-size spare is prepared behind it', async () => {
    const dir = tempDir();
    const log = new WriteAheadLog(dir);
    logs.push(log);
    expect([...log.recover(0)]).toEqual([]);
    log.start();
    expect(fs.statSync(segmentFile(dir, 1)).size).toBe(FIRST_SEGMENT_BYTES);
    expect(FIRST_SEGMENT_BYTES).toBeLessThan(SEGMENT_BYTES);
    await log.close(); // waits for the spare
    expect(fs.statSync(path.join(dir, 'next.spare')).size).toBe(SEGMENT_BYTES);
  });

  it('a log that fills its small first segment rolls to full-size segments, and replays all of them after a restart', async () => {
    const dir = tempDir();
    const { log } = openLog(dir, { segmentBytes: 4 * MiB, firstSegmentBytes: MiB });
    log.start();
    let lsn = 0;
    for (let i = 1; log.segmentStarts.length < 3 && i < 200; i++) {
      lsn = log.append([op(i, 100_000)]);
      log.flush();
      if (i === 3) await new Promise((r) => setTimeout(r, 50)); // the first roll may or may not find the spare ready
    }
    const sizes = log.segmentStarts.map((s) => fs.statSync(segmentFile(dir, s)).size);
    expect(sizes).toEqual([MiB, 4 * MiB, 4 * MiB]);
    await log.close();
    // A restart replays every record of all three, then starts on the full-size spare.
    const { log: again, replayed } = openLog(dir, { segmentBytes: 4 * MiB, firstSegmentBytes: MiB });
    expect(replayed).toEqual(range(1, lsn));
    again.start();
    expect(fs.statSync(segmentFile(dir, lsn + 1)).size).toBe(4 * MiB);
    again.append([op(lsn + 1)]);
    again.flush();
    expect(scan(dir, lsn).lsns).toEqual([lsn + 1]);
  });

  it('deletes the segments wholly at or below a checkpoint, never the current one, and calls onFull past its bound', () => {
    const dir = tempDir();
    let full = 0;
    const { log } = openLog(dir, { maxBytes: 3 * MiB, onFull: () => full++ });
    log.start();
    for (let i = 0; i < 40; i++) {
      log.append([op(i, 200_000)]);
      log.flush();
    }
    const starts = log.segmentStarts;
    expect(full).toBe(1);
    // A checkpoint through the last LSN of the second segment deletes the first two.
    expect(log.deleteThrough(starts[2]! - 1)).toBe(2);
    expect(log.segmentStarts).toEqual(starts.slice(2));
    expect(fs.existsSync(segmentFile(dir, starts[0]!))).toBe(false);
    // One LSN short of the next segment's first: that segment still holds an unapplied record.
    expect(log.deleteThrough(starts[3]! - 2)).toBe(0);
    expect(log.deleteThrough(40)).toBe(starts.length - 3);
    expect(log.segmentStarts).toEqual([starts[starts.length - 1]]);
    expect(scan(dir, starts[starts.length - 1]! - 1).lsns).toEqual(range(starts[starts.length - 1]!, 40));
  });

  it('after a crash in the middle of deleting segments, recovery still finds every record above the checkpoint', () => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    for (let i = 1; i <= 30; i++) {
      log.append([op(i, 150_000)]);
      log.flush();
    }
    const starts = log.segmentStarts;
    // The cut came after the oldest segment was unlinked, before the next one was.
    fs.unlinkSync(segmentFile(dir, starts[0]!));
    expect(scan(dir, starts[2]! - 1).lsns).toEqual(range(starts[2]!, 30));
  });

  it('starts on the spare an earlier run left ready, never on a half-written one', async () => {
    const dir = tempDir();
    const { log } = openLog(dir);
    log.start();
    log.append([op(1)]);
    log.flush();
    await log.close(); // waits for the spare
    const spare = fs.statSync(path.join(dir, 'next.spare')).ino;
    const { log: next } = openLog(dir);
    next.start();
    expect(fs.statSync(segmentFile(dir, 2)).ino).toBe(spare);
    await next.close();
    // A spare whose zeros were not all written is only ever under its temporary name, and is not used.
    fs.rmSync(path.join(dir, 'next.spare'));
    fs.writeFileSync(path.join(dir, 'next.spare.tmp'), Buffer.alloc(4096, 0xee));
    const { log: third } = openLog(dir, {}, 1); // the index holds LSN 1 by now
    third.start();
    expect(fs.readFileSync(segmentFile(dir, 2)).subarray(0, 4096).every((b) => b === 0)).toBe(true);
    await third.close();
    expect(fs.readFileSync(path.join(dir, 'next.spare')).subarray(0, 4096).every((b) => b === 0)).toBe(true);
  });

  const failing = (what: 'writeSync' | 'fdatasyncSync', code: string): LogFs => {
    let armed = false;
    const err = (): Error => Object.assign(new Error(`${code}: injected`), { code });
    return {
      ...nodeLogFs,
      writeSync: (fd, buf, off, len, pos) => {
        if (armed && what === 'writeSync') throw err();
        return nodeLogFs.writeSync(fd, buf, off, len, pos);
      },
      fdatasyncSync: (fd) => {
        if (armed && what === 'fdatasyncSync') throw err();
        nodeLogFs.fdatasyncSync(fd);
      },
      get armed() {
        return armed;
      },
      set armed(v: boolean) {
        armed = v;
      },
    } as LogFs & { armed: boolean };
  };

  for (const [what, code] of [['writeSync', 'ENOSPC'], ['writeSync', 'EIO'], ['fdatasyncSync', 'EIO']] as const) {
    it(`a failed ${what} (${code}) is a StoreFatalError, and the log refuses everything after it`, () => {
      const dir = tempDir();
      const seam = failing(what, code) as LogFs & { armed: boolean };
      const { log } = openLog(dir, { fs: seam });
      log.start();
      log.append([op(1)]);
      log.flush();
      seam.armed = true;
      log.append([op(2)]);
      let thrown: unknown;
      try {
        log.flush();
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(StoreFatalError);
      expect((thrown as Error).message).toMatch(/could not be written or flushed .*injected.*restart the process/);
      expect(((thrown as Error).cause as NodeJS.ErrnoException).code).toBe(code);
      seam.armed = false;
      expect(() => log.append([op(3)])).toThrow(StoreFatalError);
      expect(() => log.flush()).toThrow(StoreFatalError);
      expect(scan(dir).lsns[0]).toBe(1);
    });
  }

  it('a segment that cannot be created refuses that batch only, and its LSNs are used again', () => {
    const dir = tempDir();
    let failOpen = false;
    const seam: LogFs = {
      ...nodeLogFs,
      openSync: (f, flags) => {
        if (failOpen && f.endsWith('.seg') && flags === 'w') throw Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' });
        return nodeLogFs.openSync(f, flags);
      },
    };
    const { log } = openLog(dir, { fs: seam });
    log.start();
    log.append([op(1, 600_000)]);
    log.flush();
    failOpen = true;
    expect(log.append([op(2, 600_000)])).toBe(2);
    expect(() => log.flush()).toThrow(/Log segment not created \(ENOSPC\): the disk holding/);
    failOpen = false;
    expect(log.append([op(3, 100)])).toBe(2);
    log.flush();
    expect(scan(dir).lsns).toEqual([1, 2]);
    expect(HEADER_BYTES).toBe(16);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
