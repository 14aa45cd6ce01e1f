// Errors the LMDB store raises itself. The broker maps any store failure to a non-`accepted` outcome; these
// classes only let it (and an operator reading the log) tell "refused to start" from "stopped working".
// Those marked `userFacing` carry a message that is one whole line for a person: the cause and what to do; the
// CLI prints it as it is, without a stack.

/** The flag (and config key) that moves the data directory, named in every message that suggests moving it. */
const MOVE_IT = '--data-dir (or Broker.DataDir)';

/** The directory holds a store this build cannot read (unknown schema version, or data without one); nothing was changed. */
export class SchemaError extends Error {
  override name = 'SchemaError';
  /** A one-line message naming the cause and the fix. */
  readonly userFacing = true;
}

/** Another process holds the data directory's lock (see dir-lock.ts). */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
  /** A one-line message naming the cause and the fix. */
  readonly userFacing = true;

  /** `pid` is the holder's, as written in the lock file, or null when it could not be read. */
  constructor(
    readonly dir: string,
    readonly pid: number | null,
  ) {
    const who = pid === null ? 'another peeklock process' : `another peeklock (PID ${pid})`;
    super(`the data directory ${dir} is in use by ${who}; stop that broker, or give this one its own ${MOVE_IT}`);
  }
}

/** The data directory cannot be created, read or written (permissions, a read-only filesystem, a file in the way). */
export class DataDirError extends Error {
  override name = 'DataDirError';
  /** A one-line message naming the cause and the fix. */
  readonly userFacing = true;

  /** Builds the message from the system error's code. */
  constructor(
    readonly dir: string,
    cause: NodeJS.ErrnoException,
  ) {
    const code = cause.code ?? 'error';
    const what =
      code === 'ENOTDIR' || code === 'EEXIST'
        ? `cannot use ${dir} as the data directory: a file is in the way (${code})`
        : code === 'ENOSPC'
          ? `cannot create the data directory ${dir}: the disk is full (ENOSPC)`
          : `cannot write to the data directory ${dir} (${code})`;
    const fix =
      code === 'ENOSPC' ? 'free some space' : code === 'ENOTDIR' || code === 'EEXIST' ? 'remove the file' : 'make it writable by this user';
    super(`${what}; ${fix}, or choose another with ${MOVE_IT}`, { cause });
  }
}

/** A commit failed and the filesystem holding the store has (almost) no space left. */
export class DiskFullError extends Error {
  override name = 'DiskFullError';
  /** A one-line message naming the cause and the fix. */
  readonly userFacing = true;

  /** `free` is the bytes available to this user when the failure was seen; `failed` says what could not be done. */
  constructor(
    readonly dir: string,
    readonly free: number,
    cause: unknown,
    failed = 'Commit failed',
  ) {
    const reported = cause instanceof Error ? `; LMDB reported: ${cause.message}` : '';
    super(
      `${failed}: the disk holding the data directory ${dir} is full (${formatBytes(free)} free${reported}); ` +
        `free some space, or move the store with ${MOVE_IT}`,
      { cause },
    );
  }
}

/**
 * LMDB reported a fatal environment error (MDB_PANIC, e.g. after the meta-page write failed): no transaction can
 * commit any more, in this process. Writes are rejected instead of left pending; restart the process to recover.
 */
export class StoreFatalError extends Error {
  override name = 'StoreFatalError';
}

/** "0 bytes", "12 KiB", "3.4 MiB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.floor(n / 1024)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
