// Errors the LMDB store raises itself. The broker maps any store failure to a non-`accepted` outcome; these
// classes only let it (and an operator reading the log) tell "refused to start" from "stopped working".

/** The directory holds a store this build cannot read (unknown schema version, or data without one); nothing was changed. */
export class SchemaError extends Error {
  override name = 'SchemaError';
}

/**
 * LMDB reported a fatal environment error (MDB_PANIC, e.g. after the meta-page write failed): no transaction can
 * commit any more, in this process. Writes are rejected instead of left pending; restart the process to recover.
 */
export class StoreFatalError extends Error {
  override name = 'StoreFatalError';
}
