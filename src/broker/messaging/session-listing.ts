// Session browsing (the `com.microsoft:get-message-sessions` management operation, "enumerate sessions"):
// which session ids of a session-enabled entity a `last-updated-time` selects. Service Bus has two readings of
// that one field, and the clients rely on both: the .NET DateTime.MaxValue (which the Java client sends as
// 10000-01-01T00:00:00Z) means "every session that has messages or state" (as .NET SDK 7.21 documents its
// GetMessageSessionsAsync), any other time means "sessions updated since then". The rules chosen where Microsoft's documentation is silent are in docs/sdk-7.10.md.
// It reads the entity's sessions, not its messages: each session knows its stored messages and their newest
// enqueued time (kept by QueueState), and the entity keeps its session ids sorted, so a page costs the sessions
// up to its end, not the entity's messages.

import type { QueueState } from '../indexes/queue-state.js';
import type { SessionState } from '../indexes/session-state.js';

/** Epoch ms of .NET's DateTime.MaxValue rounded down to the millisecond (9999-12-31T23:59:59.999Z). */
export const DOTNET_MAX_DATE_MS = 253_402_300_799_999;

/**
 * Ids of the entity's sessions that `since` selects, sorted, after skipping `skip` and at most `top`:
 * with `since` at or beyond DateTime.MaxValue, every session with a stored message or a state; otherwise every
 * session with messages or state whose last activity (state set, lock taken, renewed or released, or a message
 * enqueued) is at or after `since`.
 */
export function selectSessions(q: QueueState, since: number, skip: number, top: number): string[] {
  const ids: string[] = [];
  let skipped = 0;
  // In ordinal order, stopping once the page is full: a page costs the sessions before it, not every session.
  for (const id of q.sessionIds()) {
    if (ids.length >= Math.max(0, top)) break;
    const s = q.sessions.get(id);
    if (!s || !selected(q, s, since)) continue;
    if (skipped++ < skip) continue;
    ids.push(id);
  }
  return ids;
}

// Whether `since` selects the session (see selectSessions).
function selected(q: QueueState, s: SessionState, since: number): boolean {
  if (s.stored.size === 0 && !s.tail.open && s.state === null) return false;
  // A message's session exists as soon as the message does, even before anyone touched the session.
  return since >= DOTNET_MAX_DATE_MS || s.updatedAt >= since || newestEnqueued(q, s) >= since;
}

// The newest enqueued time among the session's stored messages; recomputed (from its messages only) when the
// newest one left.
function newestEnqueued(q: QueueState, s: SessionState): number {
  if (s.newestEnqueuedAt === null) {
    let newest = 0;
    for (const seq of s.stored) newest = Math.max(newest, q.rows.get(seq)?.enqueuedAt ?? 0);
    // Messages the session keeps in the store (session-tail.ts) count too; read once, then kept up to date.
    s.newestEnqueuedAt = Math.max(newest, q.coldNewestEnqueued(s));
  }
  return s.newestEnqueuedAt;
}
