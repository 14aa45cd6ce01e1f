// The write-ahead log: the store's durability point (docs/durability.md, "The write-ahead log"). Records (records.ts)
// are appended to segment files in `<dataDir>/log/`, each named by the first LSN it holds (20 digits, so names sort
// as numbers). A segment is written out in full with zeros and fsynced (with its directory) before any record goes
// into it: then a record's fdatasync flushes data blocks only, never a size or extent change (a flush of a
// pre-written file measured 0.15 ms on the development disk, an append to a growing one 0.24-0.38 ms). The next
// segment is prepared ahead, off the main thread, so a roll is a rename and a directory fsync, not 64 MiB of zeros.
// The one segment written on the main thread at start (no spare left by an earlier run) is small (FIRST_SEGMENT_BYTES):
// a start then writes 4 MiB of zeros before it serves, not 64 MiB, and the full-size spare follows in the background.
//
// A group commit is one `flush`: every record appended since the last flush goes down in ONE write and ONE
// fdatasync. A failed write or fdatasync is fatal (StoreFatalError): after a failed fdatasync the kernel may have
// dropped the dirty pages and cleared the error, so nothing written since can be trusted to be on disk.

import fs from 'node:fs';
import path from 'node:path';
import { makeDirDurable, syncDir } from '../../fs/durable.js';
import { freeBytes } from '../lmdb/disk-space.js';
import { DiskFullError, StoreFatalError } from '../lmdb/errors.js';
import type { StoreOp } from '../store.js';
import { decodeRecord, encodeRecord, scanRecords, type LogRecord, type ScanEnd } from './records.js';

/** The file calls the log makes; a test passes its own to inject failures (never by patching node:fs). */
export interface LogFs {
  openSync(file: string, flags: string): number;
  closeSync(fd: number): void;
  writeSync(fd: number, buf: Uint8Array, off: number, len: number, pos: number): number;
  fdatasyncSync(fd: number): void;
  fsyncSync(fd: number): void;
  readFileSync(file: string): Buffer;
  readdirSync(dir: string): string[];
  unlinkSync(file: string): void;
  renameSync(from: string, to: string): void;
}

/** node:fs, as the log uses it. */
export const nodeLogFs: LogFs = {
  openSync: (f, flags) => fs.openSync(f, flags, 0o600),
  closeSync: (fd) => fs.closeSync(fd),
  writeSync: (fd, buf, off, len, pos) => fs.writeSync(fd, buf, off, len, pos),
  fdatasyncSync: (fd) => fs.fdatasyncSync(fd),
  fsyncSync: (fd) => fs.fsyncSync(fd),
  readFileSync: (f) => fs.readFileSync(f),
  readdirSync: (d) => fs.readdirSync(d),
  unlinkSync: (f) => fs.unlinkSync(f),
  renameSync: (a, b) => fs.renameSync(a, b),
};

const MiB = 1024 * 1024;

/** Zeros are written in pieces this large: a 64 MiB segment is 4 writes. */
const ZERO_CHUNK = 16 * MiB;

/** Default size of a segment: big enough that rolls are rare, small enough that a checkpoint frees space soon. */
export const SEGMENT_BYTES = 64 * MiB;

/**
 * Size of the segment a start writes itself when no spare is ready: small, so a start does not wait for 64 MiB of
 * zeros; the full-size spare is prepared behind it and takes over when it fills.
 */
export const FIRST_SEGMENT_BYTES = 4 * MiB;

/** Default bound of the log: past it the store checkpoints, which deletes the segments LMDB holds durably. */
export const MAX_LOG_BYTES = 256 * MiB;

/**
 * Segments after which the log asks for a checkpoint whatever their size: the bound of a log whose segments are
 * smaller than the default (a disk with little room) is this many segments, not MAX_LOG_BYTES.
 */
export const MAX_SEGMENTS = 4;

/** The log options for a bound of `maxBytes` (Broker.LogMaxBytes): segments of a quarter of it, whole MiB, never above SEGMENT_BYTES. */
export function logOptions(maxBytes: number): { maxBytes: number; segmentBytes: number } {
  return { maxBytes, segmentBytes: Math.min(SEGMENT_BYTES, Math.max(MiB, Math.floor(maxBytes / MAX_SEGMENTS / MiB) * MiB)) };
}

/** The name of the segment prepared ahead; it becomes `<lsn>.seg` by a rename when the current one is full. */
const SPARE = 'next.spare';

const SEGMENT_NAME = /^(\d{20})\.seg$/;

/** Options of a log; the defaults are the documented ones. */
export interface WalOptions {
  /** Size of a new segment (smaller when the disk has little room: a 32nd of the free space, at least 1 MiB). */
  segmentBytes?: number;
  /** Size of the segment a start writes on the main thread when no spare is ready (at most `segmentBytes`). */
  firstSegmentBytes?: number;
  /** When the segments together pass this (or number more than MAX_SEGMENTS), `onFull` is called (the store checkpoints). */
  maxBytes?: number;
  fs?: LogFs;
  /** Called when a flush leaves the log past its bound, then not again until the checkpoint it asked for has deleted what it could. */
  onFull?: () => void;
}

interface Segment {
  first: number;
  file: string;
  size: number;
}

/** What recovery found at the end of the log, for the start-up log line and the tests. */
export interface RecoveryEnd {
  segments: number;
  replayed: number;
  /** Why the scan of the last segment read stopped ('end': zeros or the file's end; else a dropped tail). */
  why: ScanEnd;
}

/** An append-only log of store writes in pre-written segments. */
export class WriteAheadLog {
  private readonly fs: LogFs;
  private readonly segmentBytes: number;
  private readonly firstSegmentBytes: number;
  private readonly maxBytes: number;
  private segments: Segment[] = [];
  private fd = -1;
  /** Offset of the next record in the current (last) segment. */
  private off = 0;
  private nextLsn = 1;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private spare: Promise<boolean> | null = null;
  private spareReady = false;
  private spareSize = 0;
  private fatal: StoreFatalError | null = null;
  private overFull = false;
  /** Set by `recover`. */
  ended: RecoveryEnd | null = null;

  constructor(
    private readonly dir: string,
    private readonly opts: WalOptions = {},
  ) {
    this.fs = opts.fs ?? nodeLogFs;
    this.segmentBytes = opts.segmentBytes ?? SEGMENT_BYTES;
    this.firstSegmentBytes = Math.min(this.segmentBytes, opts.firstSegmentBytes ?? FIRST_SEGMENT_BYTES);
    this.maxBytes = opts.maxBytes ?? MAX_LOG_BYTES;
  }

  /** The LSN the next appended record gets. */
  get next(): number {
    return this.nextLsn;
  }

  /** Bytes of all segments on disk (the spare not counted). */
  get bytes(): number {
    return this.segments.reduce((n, s) => n + s.size, 0);
  }

  /** The first LSN of each segment on disk, oldest first (for tests and diagnostics). */
  get segmentStarts(): number[] {
    return this.segments.map((s) => s.first);
  }

  /**
   * Reads the log left on disk and yields, in order, every complete record after LSN `after`, each segment read
   * whole and then let go. It stops at the first record that is torn, zeroed, fails its checksum or does not follow
   * the one before: such a record was never acknowledged (its flush had not returned), and nothing after it can be.
   */
  *recover(after: number): Generator<LogRecord> {
    makeDirDurable(this.dir, 0o700);
    let expected = after + 1;
    const found = this.listSegments();
    this.ended = { segments: found.length, replayed: 0, why: 'end' };
    for (const seg of found) {
      const buf = this.fs.readFileSync(seg.file);
      const scan = scanRecords(buf);
      for (const r of scan.records) {
        if (r.lsn < expected) continue;
        if (r.lsn > expected) {
          this.ended.why = 'lsn';
          this.nextLsn = expected;
          return;
        }
        yield { lsn: r.lsn, ops: decodeRecord(buf, r.start, r.end) };
        this.ended.replayed++;
        expected++;
      }
      this.ended.why = scan.why;
      if (scan.why !== 'end') break;
    }
    this.nextLsn = expected;
  }

  /**
   * Starts a fresh log after recovery, once the caller has made LMDB durable through `next - 1`: every old segment
   * goes (in order, oldest first, so a crash half-way leaves a suffix), and the first new segment, named `next`, is
   * the spare an earlier run left ready (renamed), or is written now, before this returns: a small one (the first
   * segment size), with the full-size spare prepared in the background.
   */
  start(): void {
    for (const seg of this.listSegments()) this.fs.unlinkSync(seg.file);
    const spare = path.join(this.dir, SPARE);
    fs.rmSync(`${spare}.tmp`, { force: true });
    let ready = 0;
    try {
      ready = fs.statSync(spare).size;
    } catch {
      // No spare left.
    }
    syncDir(this.dir);
    this.segments = [];
    if (ready >= MiB) {
      // Its zeros were fsynced before it got this name (writeZeros), and nothing writes a spare after that.
      const file = segmentFile(this.dir, this.nextLsn);
      this.fs.renameSync(spare, file);
      syncDir(this.dir);
      this.switchTo({ first: this.nextLsn, file, size: ready });
    } else {
      this.openNewSegment(this.nextLsn, Math.min(this.firstSegmentBytes, this.sizeFor(0)));
    }
    this.prepareSpare();
  }

  /** Queues one write as the next record (nothing is written yet) and returns its LSN; throws if it cannot be encoded. */
  append(ops: StoreOp[]): number {
    if (this.fatal) throw this.fatal;
    const rec = encodeRecord(this.nextLsn, ops);
    this.pending.push(rec);
    this.pendingBytes += rec.length;
    return this.nextLsn++;
  }

  /**
   * Writes every queued record in one write and flushes it with one fdatasync; when this returns they are on disk.
   * If the batch needs a new segment and none can be created (a full disk), nothing is written and the batch's LSNs
   * are handed out again: it throws DiskFullError (or the cause) and the log goes on. A failed write or fdatasync
   * throws StoreFatalError, and the log refuses everything after it.
   */
  flush(): void {
    if (this.fatal) throw this.fatal;
    if (this.pending.length === 0) return;
    const buf = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    const first = this.nextLsn - this.pending.length;
    this.pending = [];
    this.pendingBytes = 0;
    const current = this.segments[this.segments.length - 1]!;
    if (this.off + buf.length > current.size) {
      try {
        this.roll(first, buf.length);
      } catch (err) {
        this.nextLsn = first;
        const free = freeBytes(this.dir);
        if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new DiskFullError(this.dir, free ?? 0, undefined, 'Log segment not created (ENOSPC)');
        throw err;
      }
    }
    try {
      for (let done = 0; done < buf.length; ) done += this.fs.writeSync(this.fd, buf, done, buf.length - done, this.off + done);
      this.fs.fdatasyncSync(this.fd);
    } catch (err) {
      this.fatal = new StoreFatalError(
        `the write-ahead log in ${this.dir} could not be written or flushed (${(err as Error).message}); ` +
          `it accepts no more writes; restart the process`,
        { cause: err },
      );
      throw this.fatal;
    }
    this.off += buf.length;
    if (!this.overFull && (this.bytes > this.maxBytes || this.segments.length > MAX_SEGMENTS)) {
      this.overFull = true;
      this.opts.onFull?.();
    }
  }

  /** Deletes every segment whose records all have LSN <= `lsn` (never the current one), oldest first. */
  deleteThrough(lsn: number): number {
    let n = 0;
    while (this.segments.length > 1 && this.segments[1]!.first <= lsn + 1) {
      this.fs.unlinkSync(this.segments[0]!.file);
      this.segments.shift();
      n++;
    }
    if (n > 0) syncDir(this.dir);
    // Asked again at the next flush if still past the bound: a checkpoint at a roll often frees nothing (the old
    // segment's last records were not yet applied), and waiting for the 10 s timer would let the log grow unbounded.
    this.overFull = false;
    return n;
  }

  /** Waits for the spare being prepared and closes the current segment. */
  async close(): Promise<void> {
    if (this.spare) await this.spare;
    if (this.fd >= 0) this.fs.closeSync(this.fd);
    this.fd = -1;
  }

  private listSegments(): Segment[] {
    const out: Segment[] = [];
    for (const name of this.fs.readdirSync(this.dir).sort()) {
      const m = SEGMENT_NAME.exec(name);
      if (m) out.push({ first: Number(m[1]), file: path.join(this.dir, name), size: 0 });
    }
    return out;
  }

  // Segment size for a batch of `need` bytes: the configured size, smaller on a disk with little room (a segment
  // must not take the space LMDB's reserve counts on), larger for a write that would not fit otherwise.
  private sizeFor(need: number): number {
    const free = freeBytes(this.dir);
    let size = this.segmentBytes;
    if (free !== null) size = Math.min(size, Math.max(MiB, Math.floor(free / 32 / MiB) * MiB));
    return Math.max(size, Math.ceil(need / MiB) * MiB);
  }

  private roll(first: number, need: number): void {
    const spare = path.join(this.dir, SPARE);
    const file = segmentFile(this.dir, first);
    if (this.spareReady && this.spareSize >= need) {
      this.spareReady = false;
      this.spare = null;
      this.fs.renameSync(spare, file);
      syncDir(this.dir);
      this.switchTo({ first, file, size: this.spareSize });
    } else {
      this.openNewSegment(first, this.sizeFor(need));
    }
    this.prepareSpare();
  }

  private switchTo(seg: Segment): void {
    const fd = this.fs.openSync(seg.file, 'r+');
    if (this.fd >= 0) this.fs.closeSync(this.fd);
    this.fd = fd;
    this.off = 0;
    this.segments.push(seg);
  }

  // Synchronously: zeros in full, fsync, then the directory (used at start and when no spare is ready).
  private openNewSegment(first: number, size: number): void {
    const file = segmentFile(this.dir, first);
    const fd = this.fs.openSync(file, 'w');
    try {
      const zero = Buffer.alloc(Math.min(size, ZERO_CHUNK));
      for (let o = 0; o < size; o += zero.length) this.fs.writeSync(fd, zero, 0, Math.min(zero.length, size - o), o);
      this.fs.fsyncSync(fd);
    } catch (err) {
      this.fs.closeSync(fd);
      try {
        this.fs.unlinkSync(file);
      } catch {
        // Left for start() to remove.
      }
      throw err;
    }
    this.fs.closeSync(fd);
    syncDir(this.dir);
    this.switchTo({ first, file, size });
  }

  // The next segment, written in the background (libuv's pool) so a roll does not stall a commit. A spare that
  // could not be written (a full disk) is removed; the next roll then creates its segment itself, or fails.
  private prepareSpare(): void {
    if (this.spare || this.fatal) return;
    const size = this.sizeFor(0);
    const file = path.join(this.dir, SPARE);
    this.spare = writeZeros(file, size).then(
      () => {
        this.spareSize = size;
        this.spareReady = true;
        return true;
      },
      () => {
        fs.rmSync(`${file}.tmp`, { force: true });
        this.spare = null;
        return false;
      },
    );
  }
}

/** The path of the segment whose first record is `first`. */
export function segmentFile(dir: string, first: number): string {
  return path.join(dir, `${String(first).padStart(20, '0')}.seg`);
}

// Written under a temporary name and renamed once its zeros are fsynced: a file named `next.spare` is always a
// whole, durable spare (a cut may forget the rename, never leave the name on a half-written file).
async function writeZeros(file: string, size: number): Promise<void> {
  const tmp = `${file}.tmp`;
  const h = await fs.promises.open(tmp, 'w', 0o600);
  try {
    const zero = Buffer.alloc(Math.min(size, ZERO_CHUNK));
    for (let o = 0; o < size; o += zero.length) await h.write(zero, 0, Math.min(zero.length, size - o), o);
    await h.sync();
  } finally {
    await h.close();
  }
  await fs.promises.rename(tmp, file);
}
