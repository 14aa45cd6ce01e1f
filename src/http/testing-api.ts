// The test-suite routes under /api: the manual clock (`POST /api/clock/advance`) and fault injection
// (`/api/faults/...`). Both exist only when the broker was started with them (`Broker.Clock: "manual"`,
// `Broker.Faults: true`); otherwise they answer 404 saying how to turn them on, so a production broker can never have
// its time moved or its sends failed over HTTP. Like the rest of the admin API they need the Manage right.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SharedAccessPolicy } from '../config/types.js';
import { MAX_FAULT_DELAY_MS, SEND_FAILURES, type Faults, type SendFailure } from '../broker/runtime/faults.js';
import { authorize } from './admin-api.js';
import { HttpError, intIn, readJsonObject, sendJson } from './http-util.js';

/** What the composition root hands the test routes; a missing part means that feature is off. */
export interface TestingHooks {
  /** Moves the manual clock; absent unless `Broker.Clock` is "manual". */
  advance?: (ms: number) => Promise<number>;
  /** Fault injection; absent unless `Broker.Faults` is true. */
  faults?: {
    faults: Faults;
    /** Ends a message lock now (LockLost for an unknown token). */
    expireLock(token: string): void;
    /** Closes every AMQP connection with a link to the entity; resolves with how many. */
    dropConnections(entity: string): Promise<number>;
  };
}

/** Longest single advance accepted: about 10 years, far past any Service Bus duration. */
const MAX_ADVANCE_MS = 10 * 366 * 24 * 3600 * 1000;

/** True for the paths (after `/api`) this module answers. */
export function isTestingRoute(parts: string[]): boolean {
  return parts[0] === 'clock' || parts[0] === 'faults';
}

/** Handles `/api/clock/...` and `/api/faults/...`. */
export async function handleTesting(
  req: IncomingMessage,
  res: ServerResponse,
  parts: string[],
  policies: SharedAccessPolicy[],
  hooks: TestingHooks,
): Promise<void> {
  if (parts[0] === 'clock') return clock(req, res, parts, policies, hooks);
  const f = hooks.faults;
  if (!f) {
    throw new HttpError(404, 'NotFound', 'Fault injection is off; start the broker with Broker.Faults: true (or startBroker({ faults: true })).');
  }
  const route = `${req.method ?? ''} ${parts.slice(1).join('/')}`;
  const known = ['GET ', 'DELETE ', 'POST sends', 'POST management', 'POST expire-lock', 'POST drop-connections'];
  if (!known.includes(route)) {
    throw new HttpError(404, 'NotFound', `No fault route ${req.method ?? ''} /api/${parts.join('/')}; see docs/testing.md.`);
  }
  authorize(req, policies, null);
  if (route === 'GET ') return sendJson(res, 200, f.faults.pending());
  if (route === 'DELETE ') {
    f.faults.clear();
    return sendJson(res, 200, f.faults.pending());
  }
  const body = await readJsonObject(req);
  switch (route) {
    case 'POST sends': {
      const fail = body.fail;
      if (fail !== undefined && !SEND_FAILURES.includes(fail as SendFailure)) {
        throw new HttpError(400, 'BadRequest', `fail = ${JSON.stringify(fail)}: must be one of ${SEND_FAILURES.map((x) => `"${x}"`).join(', ')}.`);
      }
      const entity = optionalString(body.entity, 'entity');
      const delayMs = body.delayMs === undefined ? undefined : intIn('delayMs', body.delayMs, 0, MAX_FAULT_DELAY_MS);
      if (fail === undefined && !delayMs) throw new HttpError(400, 'BadRequest', 'A send fault needs "fail" or a positive "delayMs".');
      f.faults.addSendFault({
        count: intIn('count', body.count ?? 1, 1, 1_000_000),
        ...(entity === undefined ? {} : { entity }),
        ...(fail === undefined ? {} : { fail: fail as SendFailure }),
        ...(delayMs === undefined ? {} : { delayMs }),
      });
      return sendJson(res, 200, f.faults.pending());
    }
    case 'POST management':
      f.faults.setManagementDelay(intIn('delayMs', body.delayMs, 0, MAX_FAULT_DELAY_MS));
      return sendJson(res, 200, f.faults.pending());
    case 'POST expire-lock':
      f.expireLock(requiredString(body.lockToken, 'lockToken'));
      return sendJson(res, 200, { expired: true });
    default:
      return sendJson(res, 200, { dropped: await f.dropConnections(requiredString(body.entity, 'entity')) });
  }
}

async function clock(req: IncomingMessage, res: ServerResponse, parts: string[], policies: SharedAccessPolicy[], hooks: TestingHooks): Promise<void> {
  if (!hooks.advance) {
    throw new HttpError(404, 'NotFound', 'The broker clock is not manual; start the broker with Broker.Clock: "manual" (or startBroker({ clock: "manual" })).');
  }
  if (parts.length !== 2 || parts[1] !== 'advance') throw new HttpError(404, 'NotFound', `No clock route /api/${parts.join('/')}; try POST /api/clock/advance.`);
  if (req.method !== 'POST') throw new HttpError(405, 'MethodNotAllowed', '/api/clock/advance takes POST.');
  authorize(req, policies, null);
  const body = await readJsonObject(req);
  const now = await hooks.advance(intIn('ms', body.ms, 0, MAX_ADVANCE_MS));
  sendJson(res, 200, { now: new Date(now).toISOString(), nowMs: now });
}

function optionalString(v: unknown, name: string): string | undefined {
  if (v === undefined) return undefined;
  return requiredString(v, name);
}

function requiredString(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.length === 0) throw new HttpError(400, 'BadRequest', `${name} must be a non-empty string.`);
  return v;
}
