// The persisted delivery history of one message (issue 39): the attempts that locked it, how each ended, the events
// that moved it (scheduled, deferred, dead-lettered, redriven) and the overlaps between attempts. The store keeps it
// under the message's [qid, seq] as one opaque image, written whole each time (so replaying a write is idempotent),
// removed with the row's `delete` and with its entity's `clear`. The broker owns the shape; the store reads none of it.

/** Who took a lock: the client's container id, the connection, the link, and the SDK's receiver name if it sent one. */
export interface AttemptHolder {
  container?: string;
  connection?: string;
  link?: string;
  /** The attach property `com.microsoft:receiver-name` (the JS SDK's receiver identifier). */
  receiver?: string;
}

/** How a delivery attempt ended. */
export type AttemptEnd =
  | 'completed'
  | 'abandoned'
  | 'released'
  | 'deadLettered'
  | 'deferred'
  | 'lockExpired'
  | 'receivedAndDeleted'
  | 'sessionLockLost'
  | 'brokerRestarted'
  | 'notDelivered';

/** A settle or renewal by a holder whose lock had already lapsed: refused with MessageLockLost, and recorded. */
export interface LateAction {
  action: 'complete' | 'abandon' | 'defer' | 'deadLetter' | 'renew';
  /** Epoch ms. */
  at: number;
}

/** One delivery attempt: one lock taken on the message. */
export interface DeliveryAttempt {
  /** 1-based attempt number over the message's life (kept when older attempts are dropped by the cap). */
  n: number;
  /** How the lock was taken: by a receiver link, by sequence number (receive-deferred), or under a session lock. */
  via: 'receive' | 'receiveDeferred' | 'session';
  /** Epoch ms. */
  lockedAt: number;
  /** The lock's first locked-until, epoch ms. */
  lockedUntil: number;
  holder?: AttemptHolder;
  /** Epoch ms of each renewal (the last 16), and how many there were in all. */
  renewals?: number[];
  renewCount?: number;
  /** Unset while the lock is held. */
  end?: {
    how: AttemptEnd;
    at: number;
    reason?: string;
    description?: string;
    props?: Record<string, unknown>;
    holderGone?: boolean;
    /** For `brokerRestarted`: the locked-until the lock had at the restart (epoch ms). */
    lockedUntil?: number;
  };
  /** Settles and renewals that came after this attempt's lock lapsed. */
  late?: LateAction[];
}

/** Something that happened to the message outside a delivery attempt. */
export interface MessageEvent {
  kind: 'scheduled' | 'due' | 'deadLettered' | 'redriven' | 'resubmitted' | 'brokerRestarted';
  /** Epoch ms. */
  at: number;
  /** For scheduled: the due time; for dead-lettered: its reason; for redrive/resubmit: where it came from. */
  detail?: string | number;
}

/** Two attempts that were held at once: the later lock was taken while the earlier holder was still working. */
export interface DeliveryOverlap {
  /** The attempt numbers: the lapsed one and the one that locked (or completed) the message after it. */
  attempts: [number, number];
  /** Epoch ms: when the later attempt took the message. */
  from: number;
  /** Epoch ms: the last sign of the earlier holder (a late settle or renewal, or its link seen open); unset while open. */
  until?: number;
  /** The late settle or renewal that showed it, if any. */
  late?: LateAction;
}

/** The persisted history of one message. */
export interface DeliveryHistory {
  /** The first attempt and the last ones (see HISTORY_MAX_ATTEMPTS), oldest first. */
  attempts: DeliveryAttempt[];
  /** Attempts dropped between the first and the kept ones. */
  dropped?: number;
  events: MessageEvent[];
  overlaps: DeliveryOverlap[];
}

// A copy by shape, not structuredClone: histories are copied on every read and write of one (the overlay hands each
// reader its own, the log stages what it will write), and structuredClone costs several times more on this path
// (each lock expiry and each overlapping redelivery). Leaves are numbers and strings; a settlement's properties are
// copied one level deep, as rows' are (their values are never changed in place).
/** A deep copy of a delivery history. */
export function copyHistory(h: DeliveryHistory): DeliveryHistory {
  const out: DeliveryHistory = { attempts: h.attempts.map(copyAttempt), events: h.events.map((e) => ({ ...e })), overlaps: h.overlaps.map(copyOverlap) };
  if (h.dropped !== undefined) out.dropped = h.dropped;
  return out;
}

/** A deep copy of one delivery attempt. */
export function copyAttempt(a: DeliveryAttempt): DeliveryAttempt {
  const out: DeliveryAttempt = { ...a };
  if (a.holder) out.holder = { ...a.holder };
  if (a.renewals) out.renewals = [...a.renewals];
  if (a.end) {
    out.end = { ...a.end };
    if (a.end.props) out.end.props = { ...a.end.props };
  }
  if (a.late) out.late = a.late.map((l) => ({ ...l }));
  return out;
}

function copyOverlap(o: DeliveryOverlap): DeliveryOverlap {
  const out: DeliveryOverlap = { ...o, attempts: [o.attempts[0], o.attempts[1]] };
  if (o.late) out.late = { ...o.late };
  return out;
}
