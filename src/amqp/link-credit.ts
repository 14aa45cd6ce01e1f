// The budget the receiver links of one AMQP session share. Each link pushes the broker one credit figure
// (delivery-link.ts); two of its bounds belong to the session, not the link: the free slots of rhea's outgoing
// delivery buffer and the peer's session incoming window (AMQP 1.0 §2.5.6). The broker spends a link's credit
// without asking, so the deliveries it has reserved for any link of the session, not yet handed to rhea, are
// counted here, and the links hear when the session's room changes under them.

import { ON_SESSION_FLOW } from './rhea-patches.js';
import { sessionOutgoingRoom } from './rhea.js';

/** A receiver link of the session, as the session sees it: it can recompute and push its credit figure. */
export interface SessionMember {
  refresh(): void;
}

/** The receiver links of one AMQP session and the deliveries reserved for them that rhea does not hold yet. */
export class SessionCredit {
  /** The links of the session (several may share one; the SDKs open one per link). */
  readonly links = new Set<SessionMember>();
  /** Deliveries the broker reserved for the session's links whose transfers are not handed to rhea yet. */
  reserved = 0;

  constructor(private readonly session: object) {}

  /** Deliveries the session can still take beyond what rhea holds and what is reserved for its links. */
  room(): number {
    return sessionOutgoingRoom(this.session) - this.reserved;
  }

  /** Has every link of the session (but `except`) push its figure again: the session's room changed. */
  refresh(except?: SessionMember): void {
    for (const l of this.links) if (l !== except) l.refresh();
  }
}

const SESSIONS = new WeakMap<object, SessionCredit>();

/** The shared budget of a rhea session; it refreshes its links when the peer reopens its window (a session flow). */
export function sessionCreditOf(session: object): SessionCredit {
  let credit = SESSIONS.get(session);
  if (credit) return credit;
  const created = (credit = new SessionCredit(session));
  SESSIONS.set(session, created);
  (session as { [ON_SESSION_FLOW]?: () => void })[ON_SESSION_FLOW] = () => created.refresh();
  return created;
}
