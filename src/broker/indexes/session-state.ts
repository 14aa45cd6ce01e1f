// A message session of a session-enabled queue or subscription: its own FIFO of available messages, the
// exclusive session lock, and the session state (Service Bus message sessions). Messages delivered on a
// session link are locked by the session: their locks last as long as the session lock does.

import TinyQueue from 'tinyqueue';
import { SessionTail } from './session-tail.js';
import type { Consumer } from '../types.js';

/** The one receiver that holds a session after a restart, until the recovered lock lapses. */
export const RECOVERED_HOLDER = 'recovered';

/** One message session. */
export class SessionState {
  /** Sequence numbers of this session's available messages, lowest first (re-checked when taken). */
  readonly ready = new TinyQueue<number>([], (a, b) => a - b);
  /** The receiver holding the session lock, or RECOVERED_HOLDER after a restart, or null when free. */
  holder: Consumer | typeof RECOVERED_HOLDER | null = null;
  /** Session lock expiry (epoch ms); meaningful while `holder` is set. */
  lockedUntil = 0;
  /** Session state as the client set it (opaque bytes), or null. */
  state: Uint8Array | null = null;
  /** When the session state was last set or cleared (epoch ms; get-message-sessions' last-updated-time), 0 if never. */
  updatedAt = 0;
  /** Sequence numbers of every stored message of this session, whatever its state (kept by QueueState). */
  readonly stored = new Set<number>();
  /** Sequence numbers of this session's locked messages (kept by QueueState), so ending the lock reads only them. */
  readonly locked = new Set<number>();
  /** True while the store holds a record of this session (state, or a lock written by `Sessions`). */
  recordStored = false;
  /** True while the held lock has not been written: it is written with the first message delivered under it. */
  lockUnwritten = false;
  /** This session's available rows in memory, and the highest sequence number of it memory has held. */
  active = 0;
  maxSeq = 0;
  /** Where this session's stored rows that are not in memory begin (session-tail.ts). */
  readonly tail = new SessionTail();
  /** The sequence number this session is filed under in the entity's AvailableSessions, if it is filed. */
  indexedSeq: number | undefined = undefined;

  constructor(readonly id: string) {}

  /** True while the session is locked (by anyone). */
  isLocked(now: number): boolean {
    return this.holder !== null && this.lockedUntil > now;
  }
}
