// Files that hold secrets (a namespace's keys in namespace.json, the local CA's private keys): readable by the
// owner only from the moment they exist, and replaced atomically so a crash leaves the old file or the new one,
// never half of one — written to a temporary file, fsynced, renamed over the target, and the directory fsynced so
// the rename itself survives a power cut (docs/durability.md).

import fs from 'node:fs';
import path from 'node:path';

/** Mode of a key-bearing file: owner read/write only. */
export const PRIVATE_FILE_MODE = 0o600;

/** Writes `text` to `file` with mode 0600: temporary file, fsync, rename, fsync of the directory. */
export function writePrivateFile(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', PRIVATE_FILE_MODE);
  try {
    // The umask cannot widen 0600, but a temporary file left by an earlier crash keeps its old mode.
    fs.fchmodSync(fd, PRIVATE_FILE_MODE);
    fs.writeFileSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  syncDir(path.dirname(file));
}

// Windows cannot open a directory for fsync; there the rename is as durable as NTFS makes it.
function syncDir(dir: string): void {
  let fd: number;
  try {
    fd = fs.openSync(dir, 'r');
  } catch {
    return;
  }
  try {
    fs.fsyncSync(fd);
  } catch {
    // EISDIR/EINVAL on platforms that do not sync directories.
  } finally {
    fs.closeSync(fd);
  }
}
