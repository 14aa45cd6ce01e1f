// Row copies. A row handed to the store or to a consumer is a snapshot: the in-memory row keeps changing.

import type { MessageRow } from './types.js';

/** A deep copy of a row (its lock and props are the only nested values). */
export function cloneRow(row: MessageRow): MessageRow {
  const c: MessageRow = { ...row };
  if (row.lock) c.lock = { ...row.lock };
  if (row.props) c.props = { ...row.props };
  return c;
}
