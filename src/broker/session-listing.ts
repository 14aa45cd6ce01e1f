// Session browsing (the `com.microsoft:get-message-sessions` management operation, "enumerate sessions"):
// which session ids of a session-enabled entity a `last-updated-time` selects. Service Bus has two readings of
// that one field, and the clients rely on both: the .NET DateTime.MaxValue (which the Java client sends as
// 10000-01-01T00:00:00Z) means "every session that has messages", any other time means "sessions updated
// since then". The rules chosen where Microsoft's documentation is silent are in docs/sdk-7.10.md.

import type { QueueState } from './queue-state.js';

/** Epoch ms of .NET's DateTime.MaxValue rounded down to the millisecond (9999-12-31T23:59:59.999Z). */
export const DOTNET_MAX_DATE_MS = 253_402_300_799_999;

/**
 * Ids of the entity's sessions that `since` selects, sorted, after skipping `skip` and at most `top`:
 * with `since` at or beyond DateTime.MaxValue, every session with a stored message; otherwise every session
 * with messages or state whose last activity (state set, lock taken, renewed or released, or a message
 * enqueued) is at or after `since`.
 */
export function selectSessions(q: QueueState, since: number, skip: number, top: number): string[] {
  const withMessages = new Map<string, number>(); // session id → newest enqueued time of its messages
  for (const r of q.rows.values()) {
    if (r.sessionId === undefined) continue;
    withMessages.set(r.sessionId, Math.max(withMessages.get(r.sessionId) ?? 0, r.enqueuedAt));
  }
  let ids: string[];
  if (since >= DOTNET_MAX_DATE_MS) {
    ids = [...withMessages.keys()];
  } else {
    ids = [];
    const seen = new Set<string>();
    for (const s of q.sessions.values()) {
      seen.add(s.id);
      const newest = withMessages.get(s.id);
      if (newest === undefined && s.state === null) continue;
      if (Math.max(s.updatedAt, newest ?? 0) >= since) ids.push(s.id);
    }
    // A message's session exists as soon as the message does, even before anyone touched the session.
    for (const [id, newest] of withMessages) if (!seen.has(id) && newest >= since) ids.push(id);
  }
  ids.sort();
  return ids.slice(Math.max(0, skip), Math.max(0, skip) + Math.max(0, top));
}
