// Session browsing (the `com.microsoft:get-message-sessions` management operation, "enumerate sessions"):
// which session ids of a session-enabled entity a `last-updated-time` selects. Service Bus has two readings of
// that one field, and the clients rely on both: the .NET DateTime.MaxValue (which the Java and Go clients send as
// 10000-01-01T00:00:00Z) means "every session that has messages or state" (.NET SDK 7.21's
// GetMessageSessionsAsync, JS listMessageSessions without sessionStateUpdatedAfter), any other time means
// "sessions whose session state was set or updated after it" (the same SDKs with a time; Java 3.x's
// getMessageSessions(lastUpdatedTime)): messages arriving and session locks do not count. The rules chosen where
// Microsoft's documentation is silent are in docs/sdk-7.10.md.
// It reads the entity's sessions, not its messages, and the entity keeps its session ids sorted, so a page costs
// the sessions up to its end, not the entity's messages.

import type { QueueState } from '../indexes/queue-state.js';
import type { SessionState } from '../indexes/session-state.js';

/** Epoch ms of .NET's DateTime.MaxValue rounded down to the millisecond (9999-12-31T23:59:59.999Z). */
export const DOTNET_MAX_DATE_MS = 253_402_300_799_999;

/**
 * Ids of the entity's sessions that `since` selects, sorted, after skipping `skip` and at most `top`:
 * with `since` at or beyond DateTime.MaxValue, every session with a stored message or a state; otherwise every
 * session with a state set or updated at or after `since`.
 */
export function selectSessions(q: QueueState, since: number, skip: number, top: number): string[] {
  const ids: string[] = [];
  let skipped = 0;
  // In ordinal order, stopping once the page is full: a page costs the sessions before it, not every session.
  for (const id of q.sessionIds()) {
    if (ids.length >= Math.max(0, top)) break;
    const s = q.sessions.get(id);
    if (!s || !selected(s, since)) continue;
    if (skipped++ < skip) continue;
    ids.push(id);
  }
  return ids;
}

// Whether `since` selects the session (see selectSessions). A cleared state is no state: Service Bus keeps the
// last-updated time with the state, so a session whose state was cleared is not listed by time (our choice;
// docs/sdk-7.10.md).
function selected(s: SessionState, since: number): boolean {
  if (since >= DOTNET_MAX_DATE_MS) return s.stored.size > 0 || s.tail.open || s.state !== null;
  return s.state !== null && s.updatedAt >= since;
}
