// Files and directories that survive a power cut, not only a kill (docs/durability.md, "Power loss"). POSIX makes a
// name durable only when its directory is fsynced: a file's own fsync keeps its bytes, not the entry that names it,
// and a rename or a new directory is lost with the page cache unless the directory holding it is synced too. Every
// file the broker writes outside LMDB (namespace.json, the TLS files) goes through here; LMDB syncs its own data file.

import fs from 'node:fs';
import path from 'node:path';

/** Mode of a key-bearing file (namespace.json, the CA's private keys): owner read/write only. */
export const PRIVATE_FILE_MODE = 0o600;

/** Fsyncs directory `dir`, so the names created, renamed or removed in it survive a power cut. */
export function syncDir(dir: string): void {
  // Windows cannot open a directory for fsync; NTFS journals its names itself.
  if (process.platform === 'win32') return;
  const fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** `mkdir -p dir` whose new directories survive a power cut: each is synced into its parent. */
export function makeDirDurable(dir: string, mode?: number): void {
  const first = fs.mkdirSync(dir, { recursive: true, ...(mode === undefined ? {} : { mode }) });
  if (first === undefined) return;
  // The parent of the first directory made, then each new one down to the parent of `dir`.
  const target = path.resolve(dir);
  const dirs = [path.dirname(path.resolve(first))];
  for (let d = path.resolve(first); d !== target; d = path.join(d, path.relative(d, target).split(path.sep)[0]!)) dirs.push(d);
  for (const d of dirs) syncDir(d);
}

/**
 * Replaces `file` with `data` so that a crash or a power cut leaves the old content or the new, never half of either:
 * a temporary beside it (created with `mode`), fsynced, renamed over it, and the directory fsynced.
 */
export function writeFileDurably(file: string, data: string | Uint8Array, mode = 0o644): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC, mode);
  try {
    fs.fchmodSync(fd, mode); // the umask must not widen or narrow what was asked for
    fs.writeFileSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  syncDir(path.dirname(file));
}

/** The name prefix of a directory being removed by {@link removeDirDurably}; a reader skips (and may delete) it. */
export const TOMBSTONE_PREFIX = '.removing-';

/**
 * Removes directory `dir` at once and for good: renamed to a tombstone beside it and the parent fsynced (the one step
 * that decides), then deleted and the parent fsynced again. A cut in between leaves a tombstone, which readers skip.
 */
export function removeDirDurably(dir: string): void {
  if (!fs.existsSync(dir)) return;
  const tomb = path.join(path.dirname(dir), `${TOMBSTONE_PREFIX}${path.basename(dir)}-${process.pid}-${Date.now()}`);
  fs.renameSync(dir, tomb);
  syncDir(path.dirname(dir));
  fs.rmSync(tomb, { recursive: true, force: true });
  syncDir(path.dirname(dir)); // and the tombstone gone for good, so none is left to sweep
}
