// The admin JSON API under /api: entity counts, browsing every message state with its lock, purge and
// redrive. Every request needs a SAS token with the Manage right in the Authorization header, as Service
// Bus's management plane takes it; a token whose `sr` is narrower than the namespace reaches only the
// entities it covers.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { AuthError, covers, hasRight, namespaceKeys, verifySas, type Claim, type Keys } from '../auth/sas.js';
import { DLQ_SUFFIX, type BrowsedMessage, type BrowsePage, type EntityInfo, type HttpPort, type RedriveOptions, type RedriveResult } from '../broker/ports.js';
import { BrokerError, entityNotFound } from '../broker/errors.js';
import type { SharedAccessPolicy } from '../config/types.js';
import type { EntityRow } from '../contract/admin-api.js';
import type { Logger } from '../log/logger.js';
import type { DeadLetterAlerter } from './alerts.js';
import { HttpError, intIn, readJsonObject, sendJson } from './http-util.js';
import type { Metrics } from './metrics.js';
import { wireError } from '../errors/table.js';
import type { IncomingMessage as SendableMessage, MessageSpec } from '../broker/types.js';
import { MAX_VIEW_COUNT } from '../broker/runtime/limits.js';

/**
 * Message lists the API can show: active (with locked), the dead-letter queue, scheduled, deferred. "Active" is
 * Service Bus's: a locked message is still active (ActiveMessageCount counts it, and peek returns it: "Peek also
 * returns messages that were locked", message-browsing docs); the lock columns show which rows are locked.
 */
export const VIEWS = ['active', 'deadletter', 'scheduled', 'deferred'] as const;
/** One of {@link VIEWS}. */
export type View = (typeof VIEWS)[number];
/** Most messages one peek returns (limits.ts). */
export const MAX_PEEK = MAX_VIEW_COUNT;
/** Fastest redrive rate accepted, messages per second. */
export const MAX_RATE = 100_000;
/** Least time between two progress lines of a streamed redrive. */
const PROGRESS_EVERY_MS = 250;
const NDJSON = 'application/x-ndjson';

/**
 * How the HTTP layer reads stored message bytes. The AMQP layer owns the encoding, so the composition root
 * hands its reader in; HTTP never decodes AMQP itself.
 */
export interface MessageReader {
  /** The admin API's JSON view of a browsed message. */
  view(m: BrowsedMessage): unknown;
  /** The explorer's full view of one message: the view plus the whole body and property types. */
  detail(m: BrowsedMessage): unknown;
  /** What a message-action filter matches on (subject, dead-letter reason, merged application properties). */
  filterFields(m: BrowsedMessage): { subject: string | null; deadLetterReason: string | null; applicationProperties: Record<string, unknown> };
  /** The application properties of stored bytes, for the redrive `where` filter. */
  appProperties(body: Uint8Array): Record<string, unknown>;
  /** Encodes an operator's message (the send action) as an AMQP client would. */
  compose(spec: MessageSpec): SendableMessage;
  /** Reads stored bytes back into a message to send again (the resubmit action). */
  reparse(body: Uint8Array): SendableMessage;
}

/** What the admin routes work with. */
export interface AdminContext {
  broker: HttpPort;
  messages: MessageReader;
  policies: SharedAccessPolicy[];
  metrics: Metrics;
  alerter: DeadLetterAlerter;
  log: Logger;
  /** Aborts of the redrives in progress (called when the server closes). */
  redrives: Set<() => void>;
}

/**
 * Turns the broker's counts of an entity into the admin API's row (src/contract/admin-api.ts) with its dead-letter
 * alert state, as GET /api/entities lists it and GET /api/tree shows it; the alerts are checked once per call.
 */
export function entityRow(ctx: AdminContext): (e: EntityInfo) => EntityRow {
  const alerts = new Map(ctx.alerter.check().map((a) => [a.entity, a]));
  const overlaps = ctx.broker.overlapCounts();
  return (e) => ({
    ...e,
    overlaps: (overlaps[e.path] ?? 0) + (overlaps[e.path + DLQ_SUFFIX] ?? 0),
    deadLetterThreshold: alerts.get(e.path)?.threshold ?? 0,
    deadLetterAlert: alerts.get(e.path)?.firing ?? false,
  });
}

/** Checks the Authorization header: 401 for a missing or bad token, 403 without Manage or outside its `sr`. */
export function authorize(req: IncomingMessage, keys: Keys, entity: string | null): Claim {
  const header = req.headers.authorization;
  if (!header) {
    throw new HttpError(
      401,
      'Unauthorized',
      'Missing Authorization header: send a SharedAccessSignature token of a policy with the Manage right.',
    );
  }
  let claim: Claim;
  try {
    claim = verifySas(header, keys, Date.now());
  } catch (err) {
    if (err instanceof AuthError) {
      const e = wireError(err);
      throw new HttpError(e.http, e.code, e.description);
    }
    throw err;
  }
  if (!hasRight(claim.rights, 'Manage')) {
    throw new HttpError(403, 'Forbidden', `The policy '${claim.policy}' lacks the Manage right the admin API needs.`);
  }
  if (entity === null ? claim.audience !== '' : !covers(claim.audience, entity)) {
    throw new HttpError(403, 'Forbidden', `The token's audience does not cover '${entity ?? 'the namespace'}'.`);
  }
  return claim;
}

/**
 * Checks that `claim` also covers `entity`, a second entity a request writes to (a resubmit's or redrive's `to`):
 * every entity a request touches is authorised, as a Send there would be. The admin API's Manage implies Send.
 */
export function authorizeTarget(claim: Claim, entity: string): void {
  if (!covers(claim.audience, entity)) {
    throw new HttpError(403, 'Forbidden', `The token's audience does not cover '${entity}', where this request sends.`);
  }
}

/** Maps a broker failure to an HTTP error. */
export function brokerFailure(err: unknown): HttpError | null {
  if (!(err instanceof BrokerError)) return null;
  const e = wireError(err);
  return new HttpError(e.http, e.code, e.description);
}

/** Handles a request under /api; `parts` are the decoded path segments after `api`. */
export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  parts: string[],
  ctx: AdminContext,
): Promise<void> {
  if (
    parts[0] !== 'entities' ||
    parts.length > 3 ||
    (parts.length === 3 && !['messages', 'purge', 'redrive'].includes(parts[2]!))
  ) {
    throw new HttpError(404, 'NotFound', `No admin route ${url.pathname}.`);
  }
  const entity = parts[1] ?? null;
  const action = parts[2] ?? (entity === null ? 'list' : 'show');
  const method = action === 'messages' || action === 'list' || action === 'show' ? 'GET' : 'POST';
  if (req.method !== method) throw new HttpError(405, 'MethodNotAllowed', `${url.pathname} takes ${method}.`);
  const claim = authorize(req, namespaceKeys(ctx.policies, ctx.broker), entity);
  const { policy } = claim;
  switch (action) {
    case 'list': {
      const rows: EntityRow[] = ctx.broker.listEntities().filter((e) => e.kind !== 'deadletter').map(entityRow(ctx));
      return sendJson(res, 200, { entities: rows });
    }
    case 'show':
      return sendJson(res, 200, findEntity(ctx.broker, entity!));
    case 'messages': {
      // `next`, when present: the view stopped after MAX_BROWSE_SCAN stored rows; ask again with from=next.
      const page = peek(ctx.broker, entity!, url.searchParams);
      const messages = page.messages.map((m) => ctx.messages.view(m));
      return sendJson(res, 200, page.next === undefined ? { messages } : { messages, next: page.next });
    }
    case 'purge':
      return purge(req, res, entity!, ctx, policy);
    default:
      return redrive(req, res, entity!, ctx, claim);
  }
}

/** The queue or subscription named (any case), or a 404 naming it. */
export function findEntity(broker: HttpPort, name: string): EntityInfo {
  const found = broker.listEntities().find((e) => e.path.toLowerCase() === name.toLowerCase());
  if (!found) throw new HttpError(404, 'EntityNotFound', entityNotFound(name).message);
  return found;
}

/** The `view` of a request (default active), or a 400 naming the field. */
export function parseView(raw: unknown): View {
  const v = raw ?? 'active';
  if (typeof v !== 'string' || !(VIEWS as readonly string[]).includes(v)) {
    throw new HttpError(400, 'BadRequest', `view = ${JSON.stringify(raw)}: must be one of ${VIEWS.join(', ')}.`);
  }
  return v as View;
}

function peek(broker: HttpPort, entity: string, q: URLSearchParams): BrowsePage {
  const view = parseView(q.get('view') ?? undefined);
  const count = q.has('count') ? intIn('count', q.get('count'), 1, MAX_PEEK) : 50;
  const from = q.has('from') ? intIn('from', q.get('from'), 1, Number.MAX_SAFE_INTEGER) : 1;
  const path = findEntity(broker, entity).path;
  return broker.browsePage(view === 'deadletter' ? path + DLQ_SUFFIX : path, { state: viewStates(view), from, count });
}

/** The message states a view shows (the dead-letter queue's messages are all active there). */
export function viewStates(view: View): BrowsedMessage['row']['state'][] {
  if (view === 'deadletter') return [];
  return view === 'active' ? ['active', 'locked'] : [view];
}

async function purge(req: IncomingMessage, res: ServerResponse, entity: string, ctx: AdminContext, policy: string): Promise<void> {
  const body = await readJsonObject(req);
  onlyKeys(body, ['view']);
  const view = parseView(body.view);
  if (view !== 'active' && view !== 'deadletter') {
    throw new HttpError(400, 'BadRequest', `view = "${view}": purge takes "active" (the whole queue) or "deadletter".`);
  }
  const path = findEntity(ctx.broker, entity).path + (view === 'deadletter' ? DLQ_SUFFIX : '');
  const purged = await ctx.broker.purge(path);
  ctx.log.info({ policy, entity: path, purged }, 'purged');
  ctx.alerter.check();
  sendJson(res, 200, { entity: path, purged });
}

/** Refuses fields other than `allowed` with a 400 naming the first unknown one. */
export function onlyKeys(body: Record<string, unknown>, allowed: string[]): void {
  const extra = Object.keys(body).find((k) => !allowed.includes(k));
  if (extra !== undefined)
    throw new HttpError(400, 'BadRequest', `Unknown field '${extra}'; allowed: ${allowed.join(', ')}.`);
}

/** An optional non-empty string field, or a 400 naming it. */
export function optString(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '')
    throw new HttpError(400, 'BadRequest', `${key} = ${JSON.stringify(v)}: must be a non-empty string.`);
  return v;
}

/** Validates a redrive request body into broker options (without the callbacks). */
export function redriveOptions(body: Record<string, unknown>): RedriveOptions {
  onlyKeys(body, ['to', 'reason', 'where', 'rate', 'max', 'dryRun']);
  const opts: RedriveOptions = {};
  const to = optString(body, 'to');
  if (to !== undefined) opts.to = to;
  const reason = optString(body, 'reason');
  if (reason !== undefined) opts.reason = reason;
  const where = optString(body, 'where');
  if (where !== undefined) {
    const i = where.indexOf('=');
    if (i <= 0)
      throw new HttpError(
        400,
        'BadRequest',
        `where = ${JSON.stringify(where)}: must be key=value with a non-empty key.`,
      );
    opts.where = { key: where.slice(0, i), value: where.slice(i + 1) };
  }
  if (body.rate !== undefined) {
    const r = body.rate;
    if (typeof r !== 'number' || !Number.isFinite(r) || r <= 0 || r > MAX_RATE) {
      throw new HttpError(
        400,
        'BadRequest',
        `rate = ${JSON.stringify(r)}: must be a number of messages per second above 0 and at most ${MAX_RATE}.`,
      );
    }
    opts.ratePerSec = r;
  }
  if (body.max !== undefined) opts.max = intIn('max', body.max, 1, Number.MAX_SAFE_INTEGER);
  if (body.dryRun !== undefined) {
    if (typeof body.dryRun !== 'boolean')
      throw new HttpError(400, 'BadRequest', `dryRun = ${JSON.stringify(body.dryRun)}: must be true or false.`);
    opts.dryRun = body.dryRun;
  }
  return opts;
}

// Streams NDJSON progress lines when the client asks for them (the CLI does), else answers once.
async function redrive(req: IncomingMessage, res: ServerResponse, entity: string, ctx: AdminContext, claim: Claim): Promise<void> {
  const { policy } = claim;
  const opts = redriveOptions(await readJsonObject(req));
  // Authorised before it is looked up, so a token learns nothing of entities it does not cover.
  if (opts.to) authorizeTarget(claim, opts.to);
  const queue = findEntity(ctx.broker, entity).path;
  const from = queue + DLQ_SUFFIX;
  const to = opts.to ? findEntity(ctx.broker, opts.to).path : queue;
  opts.to = to;
  const stream = (req.headers.accept ?? '').includes(NDJSON);
  let aborted = false;
  const abort = (): void => void (aborted = true);
  const userMax = opts.max;
  // The broker checks `max` before each move, so a stopped client or a closing server ends the redrive
  // after the move in hand: reading `max` as 0 is the one way to stop it between two atomic moves.
  Object.defineProperty(opts, 'max', { get: () => (aborted ? 0 : userMax), enumerable: true });
  res.once('close', () => {
    if (res.writableFinished) return;
    abort();
    res.destroy(); // the client has gone: nothing more will be written, and a closing server need not wait
  });
  ctx.redrives.add(abort);
  let last = 0;
  if (stream) {
    res.writeHead(200, { 'content-type': NDJSON, 'cache-control': 'no-store' });
    res.flushHeaders(); // the client sees the redrive has started before the first progress line
  }
  opts.onProgress = (p: RedriveResult) => {
    const now = Date.now();
    if (!stream || now - last < PROGRESS_EVERY_MS) return;
    last = now;
    res.write(JSON.stringify({ progress: p }) + '\n');
  };
  opts.appProperties = (body) => ctx.messages.appProperties(body);
  ctx.log.info(
    { policy, from, to, reason: opts.reason, where: opts.where, max: userMax, rate: opts.ratePerSec, dryRun: !!opts.dryRun },
    'redrive started',
  );
  let result: RedriveResult;
  try {
    result = await ctx.broker.redrive(from, opts);
  } catch (err) {
    if (!stream) throw err;
    const e = brokerFailure(err) ?? new HttpError(500, 'Internal', 'The redrive failed.');
    res.end(JSON.stringify({ error: { code: e.code, message: e.message } }) + '\n');
    return;
  } finally {
    ctx.redrives.delete(abort);
  }
  ctx.metrics.countRedriven(queue, result.dryRun ? 0 : result.moved);
  ctx.alerter.check();
  ctx.log.info({ policy, from, to, ...result, aborted }, 'redrive finished');
  const body = { from, to, ...result, aborted };
  if (res.destroyed || res.writableEnded) return;
  if (stream) res.end(JSON.stringify({ result: body }) + '\n');
  else sendJson(res, 200, body);
}
