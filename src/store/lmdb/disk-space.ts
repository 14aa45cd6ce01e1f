// Tells a full disk from other storage failures. LMDB reports a short write as EIO (and lmdb-js wraps it as
// "Commit failed"), so a full disk would otherwise read as a hardware error; the free space of the filesystem
// holding the store says which it is.

import fs from 'node:fs';

/**
 * Below this many free bytes a failed commit is named a full disk. One commit writes every page its batch dirtied
 * (several MiB for a busy turn of large messages), so "almost full" fails commits just as "full" does.
 */
export const DISK_FULL_BELOW = 16 * 1024 * 1024;

/** Bytes available to this user on the filesystem holding `dir`, or null if it cannot be asked. */
export function freeBytes(dir: string): number | null {
  try {
    const s = fs.statfsSync(dir);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return null;
  }
}

/** The free bytes if the filesystem holding `dir` is (nearly) full, else null. */
export function diskFull(dir: string, cause?: unknown): number | null {
  const free = freeBytes(dir);
  if (free === null) return (cause as NodeJS.ErrnoException | undefined)?.code === 'ENOSPC' ? 0 : null;
  if (free < DISK_FULL_BELOW || (cause as NodeJS.ErrnoException | undefined)?.code === 'ENOSPC') return free;
  return null;
}
