// One broker per data directory. LMDB itself lets any number of processes open one environment (that is its
// design: readers and one writer coordinate through lock.mdb), so two brokers on one directory would both load
// the same messages and both deliver them. Before the store opens, the broker takes an exclusive, non-blocking
// OS lock on `peeklock.lock` in the directory: an open-file-description lock (fcntl F_OFD_SETLK) on Linux,
// flock on macOS, LockFileEx on Windows, through fs-native-extensions. The kernel drops such a lock when the
// process dies, however it dies (kill -9 included), so a stale lock can never block a restart, and taking it is
// one atomic system call, so of two brokers started at the same instant exactly one gets it. The PID written into
// the file is only there to tell the refused broker whom to look for; the lock, not the file, is the truth.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DataDirError, DataDirLockedError } from './errors.js';
import { makeDirDurable } from '../../fs/durable.js';

interface NativeLocks {
  tryLock(fd: number, offset?: number, length?: number, opts?: { shared?: boolean }): boolean;
}
const native = createRequire(import.meta.url)('fs-native-extensions') as NativeLocks;

/** The lock file's name inside the data directory. */
export const LOCK_FILE = 'peeklock.lock';

/** A held directory lock; `release` closes the descriptor, which drops the lock. */
export interface DirLock {
  readonly dir: string;
  release(): void;
}

/** Creates `dir` if needed and takes its exclusive lock; throws DataDirLockedError naming the holder's PID. */
export function lockDataDir(dir: string): DirLock {
  const file = path.join(dir, LOCK_FILE);
  let fd: number;
  try {
    makeDir(dir);
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    // Not O_TRUNC: truncating before the lock is ours would wipe the holder's PID.
    fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
  } catch (err) {
    throw new DataDirError(dir, err as NodeJS.ErrnoException);
  }
  let locked: boolean;
  try {
    locked = native.tryLock(fd);
  } catch (err) {
    fs.closeSync(fd);
    throw new DataDirError(dir, err as NodeJS.ErrnoException);
  }
  if (!locked) {
    fs.closeSync(fd);
    throw new DataDirLockedError(dir, holderPid(file));
  }
  try {
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, `${process.pid}\n`, 0);
    fs.fsyncSync(fd);
  } catch {
    // The PID is a courtesy for the next broker's message; the lock is already held.
  }
  let open = true;
  return {
    dir,
    release() {
      if (!open) return;
      open = false;
      fs.closeSync(fd);
    },
  };
}

// Node's recursive mkdir reports ENOENT where the real cause is EROFS or EACCES (seen on a read-only mount); a
// plain mkdir of the last level names it. Owner-only (0700): the messages and the keys of namespaces live beneath.
function makeDir(dir: string): void {
  try {
    // Durable and owner-only: a data directory whose name a power cut takes back takes every message with it.
    makeDirDurable(dir, 0o700);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !fs.existsSync(path.dirname(dir))) throw err;
    fs.mkdirSync(dir, { mode: 0o700 });
  }
}

// The holder writes its PID right after it takes the lock, so a broker refused in that instant may read an
// empty file, or the PID of an earlier holder that has since exited; it looks again for a moment before giving
// up on naming the PID.
function holderPid(file: string): number | null {
  const deadline = Date.now() + 200;
  for (;;) {
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8').trim();
    } catch {
      // Read below as "unknown".
    }
    if (/^\d+$/.test(text) && alive(Number(text))) return Number(text);
    if (Date.now() >= deadline) return null;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
