// The explorer's two read-only admin routes, beside the entity routes of admin-api.ts:
//   GET /api/tree                  every queue and topic, each topic's subscriptions with their rules as text,
//                                  each with its counts (dead-letter queue included)
//   GET /api/history[?entity=P]    the last hour of samples (history.ts) for one entity, or for the namespace
//                                  with its busiest entities
//   GET /api/message?entity=P&seq=N[&view=deadletter]
//                                  one message in full (every property, the whole body, who holds its lock)
//                                  and its delivery history (deliveries, events, overlaps, pattern; issue 39)
// Both need the Manage right, as the whole admin API does (Service Bus's management plane asks the same).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { DLQ_SUFFIX } from '../broker/ports.js';
import { entityNotFound } from '../broker/errors.js';
import type { RuleDescription } from '../filters/index.js';
import type { MessageHistoryFields, Tree } from '../contract/admin-api.js';
import { authorize, entityRow, type AdminContext } from './admin-api.js';
import type { History } from './history.js';
import { HttpError, intIn, sendJson } from './http-util.js';

/** The first path segments after /api this file answers. */
export const EXPLORER_ROUTES = ['tree', 'history', 'message'] as const;

/** True when `parts` (after `api`) is one of this file's routes. */
export function isExplorerRoute(parts: string[]): boolean {
  return parts.length === 1 && (EXPLORER_ROUTES as readonly string[]).includes(parts[0]!);
}

/** Handles GET /api/tree, /api/history and /api/message. */
export function handleExplorer(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  parts: string[],
  ctx: AdminContext,
  explorer: { history: History; namespace: string },
): void {
  const { history } = explorer;
  if (req.method !== 'GET') throw new HttpError(405, 'MethodNotAllowed', `${url.pathname} takes GET.`);
  if (parts[0] === 'tree') {
    authorize(req, ctx.policies, null);
    return sendJson(res, 200, tree(ctx, explorer.namespace));
  }
  const raw = url.searchParams.get('entity');
  if (parts[0] === 'message') return message(req, res, url.searchParams, ctx);
  if (raw === null) {
    authorize(req, ctx.policies, null);
    return sendJson(res, 200, { entity: null, ...history.namespace(), busiest: history.busiest() });
  }
  if (raw === '') throw new HttpError(400, 'BadRequest', 'entity = "": must name a queue, topic or subscription.');
  authorize(req, ctx.policies, raw);
  const path = entityPath(ctx, raw);
  sendJson(res, 200, { entity: path, ...history.entity(path) });
}

/** The path as the broker spells it (queue, topic or subscription), or a 404 naming it. */
function entityPath(ctx: AdminContext, raw: string): string {
  const key = raw.toLowerCase();
  const known = [
    ...ctx.broker.listEntities().map((e) => e.path),
    ...ctx.broker.topicPaths().map((t) => t.path),
  ].find((p) => p.toLowerCase() === key);
  if (!known) throw new HttpError(404, 'EntityNotFound', entityNotFound(raw).message);
  return known;
}

// One message by sequence number, with the lock's remaining time worked out here so the browser's clock
// does not matter.
function message(req: IncomingMessage, res: ServerResponse, q: URLSearchParams, ctx: AdminContext): void {
  const raw = q.get('entity');
  if (!raw) throw new HttpError(400, 'BadRequest', 'entity: required, the queue or subscription the message is in.');
  const view = q.get('view') ?? 'active';
  if (view !== 'active' && view !== 'deadletter' && view !== 'scheduled' && view !== 'deferred')
    throw new HttpError(400, 'BadRequest', `view = ${JSON.stringify(view)}: must be active, deadletter, scheduled or deferred.`);
  const seq = intIn('seq', q.get('seq'), 1, Number.MAX_SAFE_INTEGER);
  authorize(req, ctx.policies, raw);
  const known = ctx.broker.listEntities().find((e) => e.path.toLowerCase() === raw.toLowerCase());
  if (!known) throw new HttpError(404, 'EntityNotFound', entityNotFound(raw).message);
  const path = known.path + (view === 'deadletter' ? DLQ_SUFFIX : '');
  const [m] = ctx.broker.browse(path, { from: seq, count: 1 });
  if (!m || m.row.seq !== seq)
    throw new HttpError(404, 'MessageNotFound', `No message with sequence number ${seq} in '${path}'.`);
  const lockRemainingMs = m.row.lock ? Math.max(0, m.row.lock.until - Date.now()) : null;
  // The delivery history (issue 39): every kept attempt, and the overlaps between them; empty when none was recorded.
  const h = ctx.broker.messageHistory(path, seq);
  const history: MessageHistoryFields = {
    deliveries: h?.deliveries ?? [],
    droppedDeliveries: h?.droppedDeliveries ?? 0,
    events: h?.events ?? [],
    overlaps: h?.overlaps ?? [],
    pattern: h?.pattern ?? null,
  };
  sendJson(res, 200, { entity: path, lockRemainingMs, message: ctx.messages.detail(m), ...history });
}

function tree(ctx: AdminContext, namespace: string): Tree {
  const withAlert = entityRow(ctx);
  const all = ctx.broker.listEntities();
  const byPath = new Map(all.map((e) => [e.path, e]));
  return {
    namespace,
    queues: all.filter((e) => e.kind === 'queue').map(withAlert),
    topics: ctx.broker.topicPaths().map((t) => ({
      path: t.path,
      subscriptions: t.subscriptions.flatMap((path) => {
        const info = byPath.get(path);
        if (!info) return [];
        const name = path.slice(path.lastIndexOf('/') + 1);
        return [{ ...withAlert(info), name, rules: ctx.broker.listRules(path).map(ruleText) }];
      }),
    })),
  };
}

/** A rule as one line: its name, its filter as SQL or correlation fields, and its action if any. */
export function ruleText(r: RuleDescription): string {
  const f = r.filter;
  let filter: string;
  if (f.type === 'sql') filter = f.expression;
  else if (f.type === 'true') filter = '1=1';
  else if (f.type === 'false') filter = '1=0';
  else {
    const { type: _type, properties, ...fields } = f;
    const props = properties instanceof Map ? Object.fromEntries(properties) : (properties ?? {});
    const parts = [
      ...Object.entries(fields)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => `${k}=${literal(v)}`),
      ...Object.entries(props).map(([k, v]) => `${k}=${literal(v)}`),
    ];
    filter = `correlation(${parts.join(', ')})`;
  }
  return `${r.name}: ${filter}${r.action ? ` | ${r.action}` : ''}`;
}

// Correlation property values are plain values or typed filter values ({ type, value }), bigints included.
function literal(v: unknown): string {
  const plain = v !== null && typeof v === 'object' && 'value' in v ? (v as { value: unknown }).value : v;
  return typeof plain === 'bigint' ? plain.toString() : JSON.stringify(plain) ?? String(plain);
}
