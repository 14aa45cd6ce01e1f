// Pure helpers over one message's delivery history image (issue 39): its caps and the pattern a person reads from
// it. Kept apart from the recorder (messaging/history.ts) so the read side (ports, tests) needs no broker state.

import type { AttemptEnd, DeliveryAttempt, DeliveryHistory, DeliveryOverlap, MessageEvent } from '../../store/history.js';

export type { AttemptEnd, AttemptHolder, DeliveryAttempt, DeliveryHistory, DeliveryOverlap, LateAction, MessageEvent } from '../../store/history.js';

/**
 * A message's delivery history (issue 39; docs/operations.md, "Delivery history"): every kept attempt (who locked
 * it, its renewals, how it ended), the events that moved it, the overlaps between attempts, and the pattern they form.
 */
export interface MessageHistoryView {
  entity: string;
  seq: number;
  /** True while an attempt is open (the message is locked now). */
  lockedNow: boolean;
  deliveries: DeliveryAttempt[];
  /** Attempts dropped by the cap between the first and the kept ones. */
  droppedDeliveries: number;
  events: MessageEvent[];
  overlaps: DeliveryOverlap[];
  /** `slowConsumer`: attempts keep ending in lock expiry; `poison`: in abandons or a dropped link; else null. */
  pattern: 'slowConsumer' | 'poison' | null;
}

/** Attempts kept: the first one plus the last 16 (issue 39). */
export const HISTORY_MAX_ATTEMPTS = 17;
/** Renewal times kept per attempt (all are counted in `renewCount`). */
export const HISTORY_MAX_RENEWALS = 16;
/** Events and overlaps kept per message (the most recent). */
export const HISTORY_MAX_EVENTS = 32;
/** Late settles or renewals kept per attempt. */
export const HISTORY_MAX_LATE = 8;
/** Bytes one message's history may take (its JSON form): past it the oldest detail goes first (see capHistory). */
export const HISTORY_MAX_BYTES = 8 * 1024;
/** Characters kept of each holder string (container id, link name, receiver name). */
export const HISTORY_MAX_NAME = 128;

// A settlement's property changes arrive in the store's typed form (`{ $type, value }`, 64-bit integers as decimal
// text), which keeps the AMQP type for the message itself. A person reading the history wants the values: a 64-bit
// integer (kept as decimal text) becomes a number when it is exact; binary stays base64 text.
const INTEGER_TYPES = new Set(['byte', 'ubyte', 'short', 'ushort', 'int', 'uint', 'long', 'ulong']);

/** The property changes of a settlement as plain values, for the history. */
export function plainProps(props: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(props)) {
    if (v === null || typeof v !== 'object' || !('$type' in v)) {
      out[k] = v;
      continue;
    }
    const { $type, value } = v as { $type: string; value: unknown };
    const big = INTEGER_TYPES.has($type) && typeof value === 'string' ? Number(value) : undefined;
    out[k] = big !== undefined && Number.isSafeInteger(big) ? big : value;
  }
  return out;
}

/** A history with nothing in it. */
export function emptyHistory(): DeliveryHistory {
  return { attempts: [], events: [], overlaps: [] };
}

/** Appends an attempt, keeping the first one and the last HISTORY_MAX_ATTEMPTS - 1. */
export function addAttempt(h: DeliveryHistory, a: DeliveryAttempt): void {
  h.attempts.push(a);
  while (h.attempts.length > HISTORY_MAX_ATTEMPTS) {
    h.attempts.splice(1, 1);
    h.dropped = (h.dropped ?? 0) + 1;
  }
}

/** Appends an event, keeping the last HISTORY_MAX_EVENTS. */
export function addEvent(h: DeliveryHistory, e: MessageEvent): void {
  h.events.push(e);
  if (h.events.length > HISTORY_MAX_EVENTS) h.events.splice(0, h.events.length - HISTORY_MAX_EVENTS);
}

/** Appends an overlap, keeping the last HISTORY_MAX_EVENTS. */
export function addOverlap(h: DeliveryHistory, o: DeliveryOverlap): void {
  h.overlaps.push(o);
  if (h.overlaps.length > HISTORY_MAX_EVENTS) h.overlaps.splice(0, h.overlaps.length - HISTORY_MAX_EVENTS);
}

/** The attempt numbered `n`, if it is still kept. */
export function attemptNumbered(h: DeliveryHistory, n: number): DeliveryAttempt | undefined {
  for (let i = h.attempts.length - 1; i >= 0; i--) if (h.attempts[i]!.n === n) return h.attempts[i];
  return undefined;
}

// The byte cap: what a settlement's properties add is the one part a client controls in size, so they go first
// (oldest attempt first), then whole attempts after the first, then the oldest events and overlaps.
/** Trims `h` in place until its JSON form is at most HISTORY_MAX_BYTES. */
export function capHistory(h: DeliveryHistory): DeliveryHistory {
  // A few entries without properties cannot reach the cap (each is at most ~1.4 KiB: four 128-character names, 16
  // renewals, 8 late actions), so the common case, a message delivered once or twice, is not serialised to measure.
  if (h.attempts.length + h.events.length + h.overlaps.length <= 4 && !h.attempts.some((a) => a.end?.props)) return h;
  const size = (): number => Buffer.byteLength(JSON.stringify(h));
  if (size() <= HISTORY_MAX_BYTES) return h;
  for (const a of h.attempts) {
    if (a.end?.props) {
      delete a.end.props;
      a.end.description &&= a.end.description.slice(0, HISTORY_MAX_NAME);
      if (size() <= HISTORY_MAX_BYTES) return h;
    }
  }
  while (h.attempts.length > 2 && size() > HISTORY_MAX_BYTES) {
    h.attempts.splice(1, 1);
    h.dropped = (h.dropped ?? 0) + 1;
  }
  while ((h.events.length || h.overlaps.length) && size() > HISTORY_MAX_BYTES) {
    if (h.events.length >= h.overlaps.length) h.events.shift();
    else h.overlaps.shift();
  }
  return h;
}

/**
 * What the attempts say about the message: `slowConsumer` when its attempts keep ending in lock expiry while the
 * holder was still attached (the handler outlives the lock), `poison` when they keep ending in abandons or in the
 * holder's link or connection dropping while it held the message (the message breaks its consumer).
 */
export function historyPattern(h: DeliveryHistory): 'slowConsumer' | 'poison' | null {
  let slow = 0;
  let poison = 0;
  for (const a of h.attempts) {
    const how: AttemptEnd | undefined = a.end?.how;
    if (how === 'lockExpired' && a.end?.holderGone) poison++;
    else if (how === 'lockExpired') slow++;
    else if (how === 'abandoned') poison++;
  }
  if (slow < 2 && poison < 2) return null;
  return slow > poison ? 'slowConsumer' : 'poison';
}
