// Fault injection for users' own tests (opt-in: `Broker.Faults: true` or `startBroker({ faults: true })`). A
// consumer of Service Bus must retry transient failures (ServerBusy is retried by every SDK) and be idempotent,
// because a lock can be lost at any time; these faults let a test provoke exactly those moments on demand instead of
// waiting for them. The protocol layer asks `beforeSend` and `beforeManagement` at the points the faults act on;
// nothing here knows AMQP.

import { BrokerError, type BrokerErrorCode } from '../errors.js';

/** The failures a send can be made to fail with (the names the SDK reports as `ServiceBusError.code`). */
export const SEND_FAILURES = ['ServerBusy', 'QuotaExceeded'] as const;
/** One of {@link SEND_FAILURES}. */
export type SendFailure = (typeof SEND_FAILURES)[number];

/** What to do to the next `count` sends (to `entity`, or to any entity when it is absent). */
export interface SendFault {
  /** Sends affected; each one counts down by one. */
  count: number;
  /** Entity path the fault applies to (case-insensitive); absent = every entity. */
  entity?: string;
  /** Fail the send with this condition instead of storing it. */
  fail?: SendFailure;
  /** Hold the send this long (real milliseconds) before it is handled. */
  delayMs?: number;
}

/** Longest delay a fault may add, so a mistaken value cannot hang a test run. */
export const MAX_FAULT_DELAY_MS = 120_000;

const CODES: Record<SendFailure, { code: BrokerErrorCode; text: string }> = {
  ServerBusy: { code: 'ServerBusy', text: 'The server is busy (injected fault). Please retry the operation.' },
  QuotaExceeded: { code: 'QuotaExceeded', text: 'The entity has reached its quota (injected fault).' },
};

/** The faults waiting to happen; counts down as sends pass. */
export class Faults {
  private sends: SendFault[] = [];
  private managementDelayMs = 0;

  /** Arms a send fault; throws RangeError for a value out of range. */
  addSendFault(f: SendFault): void {
    if (!Number.isInteger(f.count) || f.count < 1 || f.count > 1_000_000) throw new RangeError('count must be an integer from 1 to 1000000');
    if (f.fail !== undefined && !SEND_FAILURES.includes(f.fail)) {
      throw new RangeError(`fail must be one of ${SEND_FAILURES.map((x) => JSON.stringify(x)).join(', ')}`);
    }
    if (f.delayMs !== undefined) checkDelay(f.delayMs, 'delayMs');
    if (f.fail === undefined && !f.delayMs) throw new RangeError('a send fault needs fail or delayMs');
    this.sends.push({ ...f });
  }

  /** Makes every `$management` request wait `ms` real milliseconds before it is handled (0 = off). */
  setManagementDelay(ms: number): void {
    checkDelay(ms, 'ms');
    this.managementDelayMs = ms;
  }

  /** Forgets every armed fault. */
  clear(): void {
    this.sends = [];
    this.managementDelayMs = 0;
  }

  /** Sends still to be affected, per armed fault (for the admin view). */
  pending(): { sends: SendFault[]; managementDelayMs: number } {
    return { sends: this.sends.map((f) => ({ ...f })), managementDelayMs: this.managementDelayMs };
  }

  /** Called before a send to `entity` is handled: waits, then throws if the send is to fail. */
  async beforeSend(entity: string): Promise<void> {
    const i = this.sends.findIndex((f) => f.entity === undefined || f.entity.toLowerCase() === entity.toLowerCase());
    if (i < 0) return;
    const f = this.sends[i]!;
    if (--f.count === 0) this.sends.splice(i, 1);
    if (f.delayMs) await sleep(f.delayMs);
    if (f.fail) throw new BrokerError(CODES[f.fail].code, CODES[f.fail].text, entity);
  }

  /** Called before a `$management` request is handled. */
  async beforeManagement(): Promise<void> {
    if (this.managementDelayMs > 0) await sleep(this.managementDelayMs);
  }
}

function checkDelay(ms: number, name: string): void {
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_FAULT_DELAY_MS) throw new RangeError(`${name} must be an integer from 0 to ${MAX_FAULT_DELAY_MS}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
