// The admin API's message actions, beside the entity routes of admin-api.ts (the explorer and `peeklock
// messages` both use them):
//   POST /api/entities/{queue|topic}/send          compose and send one message
//   POST /api/entities/{entity}/resubmit           a copy to its queue (a subscription's: its topic)
//   POST /api/entities/{entity}/delete             delete
//   POST /api/entities/{entity}/dead-letter        move to the dead-letter queue with a reason
// The last three act on a selection in one view (active, deadletter, scheduled, deferred): explicit
// `sequenceNumbers`, or a `filter` (dead-letter reason, subject, age, an application property); `dryRun`
// answers the count without acting, which the explorer shows in its confirmation. Each answers how many
// messages it acted on and is logged with the policy that asked (an audit trail, as Azure's activity log keeps).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { DLQ_SUFFIX, type BrowsedMessage } from '../broker/ports.js';
import { entityNotFound } from '../broker/errors.js';
import { APP_PROPERTY_TYPES, type AppPropertyType, type MessageSpec } from '../broker/types.js';
import { namespaceKeys } from '../auth/sas.js';
import { authorize, authorizeTarget, findEntity, onlyKeys, optString, parseView, type AdminContext, type View } from './admin-api.js';
import { HttpError, intIn, readJsonObject, sendJson } from './http-util.js';
import * as LIMITS from '../broker/runtime/limits.js';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** The action segments this file answers after /api/entities/{entity}/. */
export const MESSAGE_ACTIONS = ['send', 'resubmit', 'delete', 'dead-letter'] as const;
/** Most messages a filter selects (and one request acts on); limits.ts. */
export const MAX_SELECTION = LIMITS.MAX_SELECTION;
/** Most sequence numbers one request lists (a list of them stays well inside the 64 KB request limit). */
export const MAX_SEQUENCE_NUMBERS = LIMITS.MAX_ACTION_SEQUENCE_NUMBERS;
/** Longest message-id Service Bus accepts. */
const MAX_MESSAGE_ID = 128;

/** One of {@link MESSAGE_ACTIONS}. */
export type MessageAction = (typeof MESSAGE_ACTIONS)[number];

/** True when `parts` (after `api`) name a message action: entities/{entity}/{action}. */
export function isMessageActionRoute(parts: string[]): boolean {
  return parts.length === 3 && parts[0] === 'entities' && (MESSAGE_ACTIONS as readonly string[]).includes(parts[2]!);
}

/** A message in a selection, as the filter sees it. */
type Decode = (m: BrowsedMessage) => { deadLetterReason: string | null; subject: string | null; applicationProperties: Record<string, unknown> };

/** Handles POST /api/entities/{entity}/{send|resubmit|delete|dead-letter}. */
export async function handleMessageAction(
  req: IncomingMessage,
  res: ServerResponse,
  entity: string,
  action: MessageAction,
  ctx: AdminContext,
): Promise<void> {
  if (req.method !== 'POST') throw new HttpError(405, 'MethodNotAllowed', `/api/entities/{entity}/${action} takes POST.`);
  const claim = authorize(req, namespaceKeys(ctx.policies, ctx.broker), entity);
  const body = await readJsonObject(req);
  const audit = (fields: Record<string, unknown>): void =>
    ctx.log.info({ policy: claim.policy, action, ...fields }, 'message action');
  if (action === 'send') {
    const target = sendTarget(ctx, entity);
    authorizeTarget(claim, target);
    const spec = parseSend(body);
    const m = ctx.messages.compose(spec);
    const [seq] = await ctx.broker.send(target, [m]);
    audit({ entity: target, count: 1, messageId: m.messageId });
    return sendJson(res, 200, { entity: target, count: 1, messageId: m.messageId, sequenceNumber: seq ?? 0 });
  }
  const extra = action === 'resubmit' ? ['to', 'keepOriginal'] : action === 'dead-letter' ? ['deadLetterReason', 'deadLetterErrorDescription'] : [];
  onlyKeys(body, ['view', 'sequenceNumbers', 'filter', 'from', 'dryRun', ...extra]);
  const view = parseView(body.view);
  const path = findEntity(ctx.broker, entity).path + (view === 'deadletter' ? DLQ_SUFFIX : '');
  const dryRun = optBool(body, 'dryRun');
  // Checked before selecting, so a bad request is refused even when nothing would match.
  // `to` is authorised before it is looked up (a token learns nothing of entities it does not cover), and the
  // default target (a subscription's topic) once known.
  const named = action === 'resubmit' ? optString(body, 'to') : undefined;
  if (named !== undefined) authorizeTarget(claim, named);
  const to = action === 'resubmit' ? resubmitTo(ctx, body, path) : undefined;
  if (to !== undefined) authorizeTarget(claim, to);
  const keepOriginal = optBool(body, 'keepOriginal');
  const reason = optString(body, 'deadLetterReason');
  const description = optString(body, 'deadLetterErrorDescription');
  if (action === 'dead-letter' && view === 'deadletter')
    throw new HttpError(400, 'BadRequest', 'view = "deadletter": a dead-lettered message cannot be dead-lettered again.');
  const chosen = await select(ctx, path, view, body, (m) => ctx.messages.filterFields(m));
  const { seqs } = chosen;
  // A filter says how far it looked: `scanned` messages, and `next` when it stopped before the view's end.
  const reach = chosen.scanned === undefined ? {} : { scanned: chosen.scanned, ...(chosen.next === undefined ? {} : { next: chosen.next }) };
  if (dryRun) {
    audit({ entity: path, count: seqs.length, dryRun: true, ...reach });
    return sendJson(res, 200, { entity: path, ...(to ? { to } : {}), count: seqs.length, skipped: 0, dryRun: true, ...reach });
  }
  let result;
  if (action === 'resubmit') {
    result = await ctx.broker.resubmitMessages(path, seqs, { to, keepOriginal, reparse: ctx.messages.reparse });
  } else if (action === 'delete') {
    result = await ctx.broker.deleteBySequence(path, seqs);
  } else {
    result = await ctx.broker.deadLetterBySequence(path, seqs, reason ?? 'ManuallyDeadLettered', description);
  }
  audit({ entity: path, ...(to ? { to } : {}), ...result });
  ctx.alerter.check();
  sendJson(res, 200, { entity: path, ...(to ? { to } : {}), ...result, dryRun: false, ...reach });
}

function optBool(body: Record<string, unknown>, key: string): boolean {
  const v = body[key];
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new HttpError(400, 'BadRequest', `${key} = ${JSON.stringify(v)}: must be true or false.`);
  return v;
}

// A send goes to a queue or a topic, as with the SDK's sender; a subscription only receives.
function sendTarget(ctx: AdminContext, entity: string): string {
  const key = entity.toLowerCase();
  const topic = ctx.broker.topicPaths().find((t) => t.path.toLowerCase() === key);
  if (topic) return topic.path;
  const e = ctx.broker.listEntities().find((x) => x.path.toLowerCase() === key);
  if (!e) throw new HttpError(404, 'EntityNotFound', entityNotFound(entity).message);
  if (e.kind !== 'queue')
    throw new HttpError(400, 'BadRequest', `entity = "${e.path}": a ${e.kind} only receives; send to a queue or topic.`);
  return e.path;
}

function resubmitTo(ctx: AdminContext, body: Record<string, unknown>, path: string): string {
  const raw = optString(body, 'to');
  if (raw === undefined) return ctx.broker.resubmitTarget(path);
  try {
    return sendTarget(ctx, raw);
  } catch (err) {
    if (err instanceof HttpError) throw new HttpError(err.status === 404 ? 404 : 400, err.code, `to: ${err.message}`);
    throw err;
  }
}

/** What a selection chose, and for a filter how far it looked. */
interface Selection {
  seqs: number[];
  /** Messages the filter examined (absent for an explicit list). */
  scanned?: number;
  /** Where to go on from (the request's `from`), when the filter stopped before the end of the view. */
  next?: number;
}

// The chosen messages of one view, locked ones left out (they belong to their receiver). A filter examines at
// most MAX_FILTER_SCAN messages, in pages of FILTER_PAGE with a yield to the event loop between two, and stops
// at MAX_SELECTION matches: a deep backlog is never read whole, nor in one turn of the loop.
async function select(ctx: AdminContext, path: string, view: View, body: Record<string, unknown>, decode: Decode): Promise<Selection> {
  const state = view === 'deadletter' ? 'active' : view;
  const hasSeqs = body.sequenceNumbers !== undefined;
  if (hasSeqs === (body.filter !== undefined)) {
    throw new HttpError(400, 'BadRequest', 'sequenceNumbers or filter: give exactly one (filter {} chooses every message of the view).');
  }
  if (hasSeqs) {
    if (body.from !== undefined) throw new HttpError(400, 'BadRequest', 'from: only with a filter.');
    const raw = body.sequenceNumbers;
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_SEQUENCE_NUMBERS)
      throw new HttpError(400, 'BadRequest', `sequenceNumbers: must be a list of 1 to ${MAX_SEQUENCE_NUMBERS} sequence numbers.`);
    const seqs = raw.map((n, i) => intIn(`sequenceNumbers[${i}]`, n, 1, Number.MAX_SAFE_INTEGER));
    const found = seqs.filter((seq) => {
      const [m] = ctx.broker.browse(path, { from: seq, count: 1 });
      return m?.row.seq === seq && m.row.state === state;
    });
    if (!found.length)
      throw new HttpError(404, 'MessageNotFound', `No ${view} message with sequence number ${seqs.join(', ')} in '${path}' (or it is locked).`);
    return { seqs: found };
  }
  const match = filterOf(body.filter, ctx.broker.now(), decode);
  let from = body.from === undefined ? 1 : intIn('from', body.from, 1, Number.MAX_SAFE_INTEGER);
  const out: number[] = [];
  let scanned = 0;
  for (let pages = 0; ; pages++) {
    if (out.length >= MAX_SELECTION || scanned >= LIMITS.MAX_FILTER_SCAN || pages >= LIMITS.MAX_FILTER_SCAN / LIMITS.FILTER_PAGE) {
      return { seqs: out, scanned, next: from };
    }
    if (pages > 0) await yieldToLoop();
    const count = Math.min(LIMITS.FILTER_PAGE, LIMITS.MAX_FILTER_SCAN - scanned);
    const page = ctx.broker.browsePage(path, { state, from, count });
    for (const m of page.messages) {
      if (out.length >= MAX_SELECTION) break;
      scanned++;
      from = m.row.seq + 1;
      if (match(m)) out.push(m.row.seq);
    }
    if (page.messages.length < count && out.length < MAX_SELECTION) {
      if (page.next === undefined) return { seqs: out, scanned };
      from = Math.max(from, page.next);
    }
  }
}

function filterOf(raw: unknown, now: number, decode: Decode): (m: BrowsedMessage) => boolean {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new HttpError(400, 'BadRequest', `filter = ${JSON.stringify(raw)}: must be an object (e.g. {"reason": "Poison"}).`);
  const f = raw as Record<string, unknown>;
  const extra = Object.keys(f).find((k) => !['reason', 'subject', 'olderThanSeconds', 'property'].includes(k));
  if (extra !== undefined)
    throw new HttpError(400, 'BadRequest', `filter.${extra}: unknown; allowed: reason, subject, olderThanSeconds, property.`);
  const text = (k: string): string | undefined => {
    const v = f[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') throw new HttpError(400, 'BadRequest', `filter.${k} = ${JSON.stringify(v)}: must be a non-empty string.`);
    return v;
  };
  const reason = text('reason');
  const subject = text('subject');
  const property = text('property');
  const eq = property?.indexOf('=') ?? -1;
  if (property !== undefined && eq <= 0)
    throw new HttpError(400, 'BadRequest', `filter.property = ${JSON.stringify(property)}: must be key=value with a non-empty key.`);
  const older = f.olderThanSeconds === undefined ? undefined : intIn('filter.olderThanSeconds', f.olderThanSeconds, 0, 10 * 365 * 86_400);
  const needsDecode = reason !== undefined || subject !== undefined || property !== undefined;
  return (m) => {
    if (older !== undefined && m.row.enqueuedAt > now - older * 1000) return false;
    if (!needsDecode) return true;
    const v = decode(m);
    if (reason !== undefined && v.deadLetterReason !== reason) return false;
    if (subject !== undefined && v.subject !== subject) return false;
    if (property !== undefined) {
      const got = v.applicationProperties[property.slice(0, eq)];
      if (got === undefined || got === null || String(got) !== property.slice(eq + 1)) return false;
    }
    return true;
  };
}

/** Validates a send request into a message spec; every error names its field. */
export function parseSend(body: Record<string, unknown>): MessageSpec {
  onlyKeys(body, [
    'body',
    'bodyEncoding',
    'contentType',
    'subject',
    'correlationId',
    'messageId',
    'sessionId',
    'timeToLiveSeconds',
    'scheduledEnqueueTimeUtc',
    'applicationProperties',
  ]);
  if (typeof body.body !== 'string') throw new HttpError(400, 'BadRequest', `body = ${JSON.stringify(body.body)}: required, a string.`);
  const encoding = body.bodyEncoding ?? 'text';
  if (encoding !== 'text' && encoding !== 'base64')
    throw new HttpError(400, 'BadRequest', `bodyEncoding = ${JSON.stringify(encoding)}: must be "text" or "base64".`);
  if (encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(body.body))
    throw new HttpError(400, 'BadRequest', 'body: not valid base64 (bodyEncoding is "base64").');
  const spec: MessageSpec = { body: Buffer.from(body.body, encoding === 'base64' ? 'base64' : 'utf8') };
  for (const k of ['contentType', 'subject', 'correlationId', 'messageId', 'sessionId'] as const) {
    const v = optString(body, k);
    if (v !== undefined) spec[k] = v;
  }
  if (spec.messageId !== undefined && spec.messageId.length > MAX_MESSAGE_ID)
    throw new HttpError(400, 'BadRequest', `messageId: longer than ${MAX_MESSAGE_ID} characters.`);
  if (body.timeToLiveSeconds !== undefined)
    spec.ttlMs = intIn('timeToLiveSeconds', body.timeToLiveSeconds, 1, 10 * 365 * 86_400) * 1000;
  if (body.scheduledEnqueueTimeUtc !== undefined) spec.scheduledAt = time('scheduledEnqueueTimeUtc', body.scheduledEnqueueTimeUtc);
  if (body.applicationProperties !== undefined) spec.applicationProperties = appProperties(body.applicationProperties);
  return spec;
}

function time(field: string, v: unknown): number {
  const ms = typeof v === 'string' ? Date.parse(v) : NaN;
  if (!Number.isFinite(ms)) throw new HttpError(400, 'BadRequest', `${field} = ${JSON.stringify(v)}: must be an ISO 8601 time, e.g. 2030-01-01T00:00:00Z.`);
  return ms;
}

// Each property is a plain value (string; number: long when whole, else double; boolean) or { type, value }.
function appProperties(raw: unknown): NonNullable<MessageSpec['applicationProperties']> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new HttpError(400, 'BadRequest', 'applicationProperties: must be an object of name → value or {"type", "value"}.');
  const out: NonNullable<MessageSpec['applicationProperties']> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const field = `applicationProperties.${k}`;
    if (typeof v === 'string') out[k] = { type: 'string', value: v };
    else if (typeof v === 'boolean') out[k] = { type: 'boolean', value: v };
    else if (typeof v === 'number' && Number.isFinite(v)) out[k] = { type: Number.isInteger(v) ? 'long' : 'double', value: v };
    else if (v && typeof v === 'object' && 'type' in v && 'value' in v) out[k] = typed(field, v as { type: unknown; value: unknown });
    else throw new HttpError(400, 'BadRequest', `${field} = ${JSON.stringify(v)}: must be a string, number, boolean or {"type", "value"}.`);
  }
  return out;
}

function typed(field: string, p: { type: unknown; value: unknown }): { type: AppPropertyType; value: string | number | boolean } {
  const type = p.type as AppPropertyType;
  if (!(APP_PROPERTY_TYPES as readonly unknown[]).includes(type))
    throw new HttpError(400, 'BadRequest', `${field}.type = ${JSON.stringify(p.type)}: must be one of ${APP_PROPERTY_TYPES.join(', ')}.`);
  const v = p.value;
  const bad = (what: string): never => {
    throw new HttpError(400, 'BadRequest', `${field}.value = ${JSON.stringify(v)}: must be ${what}.`);
  };
  switch (type) {
    case 'string':
      return typeof v === 'string' ? { type, value: v } : bad('a string');
    case 'boolean':
      return typeof v === 'boolean' ? { type, value: v } : bad('true or false');
    case 'double': {
      const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
      return typeof n === 'number' && Number.isFinite(n) ? { type, value: n } : bad('a number');
    }
    case 'timestamp':
      return { type, value: typeof v === 'number' && Number.isFinite(v) ? v : time(`${field}.value`, v) };
    default: {
      const n = typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
      const [lo, hi] = type === 'int' ? [-(2 ** 31), 2 ** 31 - 1] : [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
      return typeof n === 'number' && Number.isInteger(n) && n >= lo && n <= hi ? { type, value: n } : bad(`a whole number from ${lo} to ${hi}`);
    }
  }
}
