// The Service Bus management plane (Atom over HTTP) for queues, topics, subscriptions and rules, as the SDKs'
// administration clients call it: create (PUT,
// 201), get (200 with live counts), list (`$Resources/Queues`, `$Resources/Topics`, `{topic}/Subscriptions`,
// `…/Rules` feeds paged by $skip/$top), update (PUT with
// If-Match, 200), delete (200, empty body) and `$namespaceinfo`. Every request needs a SAS token with the Manage
// right, checked by the same code as the data plane; each client signs a different `sr` (the full request URL,
// the bare endpoint, or the path), so the audience only has to cover the requested path. Errors are the
// service's `<Error><Code/><Detail/></Error>` with the statuses the clients map (401, 404, 409, 400); a JSON or
// text body would reach the JS client as a parse error. Requests are told from the JSON admin API and the
// explorer by their `api-version` query parameter (every SDK sends one) or a `$` first segment.
//
// The handler takes a plain Node request and response, so a TLS socket handed to the same http.Server later
// serves it unchanged (links then say https, from the socket).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { AuthError, covers, namespaceKeys, verifySas, type Keys } from '../auth/sas.js';
import { MAX_ENTITY_NAME, type ManagementPort } from '../broker/ports.js';
import { BrokerError, entityNotFound } from '../broker/errors.js';
import type { SharedAccessPolicy } from '../config/types.js';
import { wireError } from '../errors/table.js';
import type { Logger } from '../log/logger.js';
import {
  AtomBodyError,
  DEFAULT_API_VERSION,
  descriptionOf,
  emptyServiceFeed,
  errorBody,
  feed,
  namespaceEntry,
  queueEntry,
  readQueuePatch,
  type LinkBase,
} from './atom-codec.js';
import { readRule, readSubscriptionPatch, readTopicPatch, ruleEntry, subscriptionEntry, subscriptionPath, topicEntry } from './atom-topics.js';
import { parseXml, XmlError, xmlDocument, type XmlElement, type XmlObject } from './xml.js';
import { BODY_TIMEOUT_MS } from './http-util.js';
import { MAX_ATOM_PAGE } from '../broker/runtime/limits.js';

/** Largest management request body, bytes (a queue description is about 1.5 KB; rules with parameters more). */
export const MAX_ATOM_BODY_BYTES = 64 * 1024;
/** Largest page a list returns, as the service caps `$top` (limits.ts). */
export const MAX_PAGE = MAX_ATOM_PAGE;

/** What the management routes work with. */
export interface AtomContext {
  broker: ManagementPort;
  policies: SharedAccessPolicy[];
  /** The namespace name reported by `$namespaceinfo` and as entry author. */
  namespace: string;
  /** When the broker started (the namespace's CreatedTime). */
  startedAt: number;
  log: Logger;
}

const ENTRY_TYPE = 'application/atom+xml;type=entry;charset=utf-8';
const FEED_TYPE = 'application/atom+xml;type=feed;charset=utf-8';
const ERROR_TYPE = 'application/xml; charset=utf-8';

/** A refusal with an HTTP status and the text that goes into `<Detail>`. */
class AtomError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'AtomError';
  }
}

/** True for a management-plane request: an `api-version` query parameter or a `$` first path segment. */
export function isAtomRequest(url: URL): boolean {
  return url.searchParams.has('api-version') || /^\/\$/.test(url.pathname);
}

/** Serves one management request; never throws (every failure becomes an XML error reply). */
export async function handleAtom(req: IncomingMessage, res: ServerResponse, url: URL, ctx: AtomContext): Promise<void> {
  try {
    const segments = pathSegments(url.pathname);
    const path = segments.join('/');
    authorize(req, namespaceKeys(ctx.policies, ctx.broker), path);
    const base = linkBase(req, url, ctx.namespace);
    const first = segments[0]?.toLowerCase();
    if (first === '$namespaceinfo' && segments.length === 1) {
      onlyMethods(req, 'GET');
      return send(res, 200, ENTRY_TYPE, namespaceEntry(base, ctx.namespace, ctx.startedAt));
    }
    if (first === '$resources' && segments.length === 2) {
      onlyMethods(req, 'GET');
      const kind = segments[1]!.toLowerCase();
      if (kind === 'queues') return listQueues(res, url, base, ctx.broker);
      if (kind === 'topics') return listTopics(res, url, base, ctx.broker);
      throw new AtomError(404, `There is no resource collection '${segments[1]}'; use Queues or Topics.`);
    }
    if (segments.length === 0 || first!.startsWith('$')) throw new AtomError(404, 'No service is hosted at the specified address.');
    const at = segments.findIndex((s) => /^subscriptions$/i.test(s));
    if (at < 0) return await entityRoute(req, res, path, base, ctx);
    if (at === 0) throw new AtomError(404, 'No service is hosted at the specified address.');
    return await subscriptionRoute(req, res, url, segments.slice(0, at).join('/'), segments.slice(at + 1), base, ctx);
  } catch (err) {
    sendFailure(res, err, ctx.log, req);
  }
}

// A queue or a topic by name (they share one namespace of names).
async function entityRoute(req: IncomingMessage, res: ServerResponse, name: string, base: LinkBase, ctx: AtomContext): Promise<void> {
  const { broker } = ctx;
  switch (req.method) {
    case 'GET': {
      const q = broker.getQueue(name);
      if (q) return send(res, 200, ENTRY_TYPE, queueEntry(base, q, true));
      const t = broker.getTopic(name);
      if (t) return send(res, 200, ENTRY_TYPE, topicEntry(base, t, true));
      return notHosted(res, base);
    }
    case 'PUT': {
      const doc = await readXml(req);
      const kind = descriptionKind(doc);
      const update = req.headers['if-match'] !== undefined;
      if (kind === 'QueueDescription') {
        const patch = readQueuePatch(descriptionOf(doc, kind));
        if (update) return send(res, 200, ENTRY_TYPE, queueEntry(base, await broker.updateQueue(name, patch), false));
        return send(res, 201, ENTRY_TYPE, queueEntry(base, await broker.createQueue(name, patch), false));
      }
      if (kind === 'TopicDescription') {
        const patch = readTopicPatch(descriptionOf(doc, kind));
        if (update) return send(res, 200, ENTRY_TYPE, topicEntry(base, await broker.updateTopic(name, patch), false));
        return send(res, 201, ENTRY_TYPE, topicEntry(base, await broker.createTopic(name, patch), false));
      }
      throw new AtomBodyError(`A ${kind} cannot be created at '${name}'; send a QueueDescription or TopicDescription.`);
    }
    case 'DELETE':
      if (broker.getQueue(name)) await broker.deleteQueue(name);
      else if (broker.getTopic(name)) await broker.deleteTopic(name);
      else throw entityNotFound(name);
      return deleted(res);
    default:
      throw new AtomError(405, `${req.method ?? ''} is not supported here; use GET, PUT or DELETE.`);
  }
}

// `{topic}/Subscriptions/[{sub}[/Rules/[{rule}]]]`.
async function subscriptionRoute(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  topic: string,
  rest: string[],
  base: LinkBase,
  ctx: AtomContext,
): Promise<void> {
  const { broker } = ctx;
  if (rest.length === 0) {
    onlyMethods(req, 'GET');
    const { skip, top } = paging(url);
    const page = broker.listSubscriptions(topic, skip, top + 1);
    const entries = page.slice(0, top).map((v) => subscriptionEntry(base, v, true, false));
    return send(res, 200, FEED_TYPE, feed(base, 'Subscriptions', `${topic}/Subscriptions`, entries, { skip, top, more: page.length > top }, Date.now()));
  }
  const sub = rest[0]!;
  if (rest.length === 1) return subscriptionCrud(req, res, topic, sub, base, broker);
  if (!/^rules$/i.test(rest[1]!) || rest.length > 3) throw new AtomError(404, 'No service is hosted at the specified address.');
  if (rest.length === 2) {
    onlyMethods(req, 'GET');
    const { skip, top } = paging(url);
    const all = broker.subscriptionRules(topic, sub);
    const entries = all.slice(skip, skip + top).map((v) => ruleEntry(base, v, false));
    const more = all.length > skip + top;
    return send(res, 200, FEED_TYPE, feed(base, 'Rules', `${subscriptionPath(topic, sub)}/Rules`, entries, { skip, top, more }, Date.now()));
  }
  return ruleCrud(req, res, topic, sub, rest[2]!, base, broker);
}

async function subscriptionCrud(req: IncomingMessage, res: ServerResponse, topic: string, sub: string, base: LinkBase, broker: ManagementPort): Promise<void> {
  switch (req.method) {
    case 'GET': {
      const v = broker.getSubscription(topic, sub);
      if (!v) return notHosted(res, base);
      return send(res, 200, ENTRY_TYPE, subscriptionEntry(base, v, true));
    }
    case 'PUT': {
      const doc = await readXml(req);
      const kind = doc === null ? 'SubscriptionDescription' : descriptionKind(doc);
      if (kind !== 'SubscriptionDescription') throw new AtomBodyError(`Expected a SubscriptionDescription, not a ${kind}.`);
      const { patch, defaultRule } = readSubscriptionPatch(descriptionOf(doc, kind));
      if (req.headers['if-match'] !== undefined) {
        return send(res, 200, ENTRY_TYPE, subscriptionEntry(base, await broker.updateSubscription(topic, sub, patch), false));
      }
      return send(res, 201, ENTRY_TYPE, subscriptionEntry(base, await broker.createSubscription(topic, sub, patch, defaultRule), false));
    }
    case 'DELETE':
      await broker.deleteSubscription(topic, sub);
      return deleted(res);
    default:
      throw new AtomError(405, `${req.method ?? ''} is not supported here; use GET, PUT or DELETE.`);
  }
}

async function ruleCrud(
  req: IncomingMessage,
  res: ServerResponse,
  topic: string,
  sub: string,
  name: string,
  base: LinkBase,
  broker: ManagementPort,
): Promise<void> {
  const subPath = subscriptionPath(topic, sub);
  switch (req.method) {
    case 'GET': {
      const v = broker.getSubscription(topic, sub) ? broker.getRule(topic, sub, name) : undefined;
      if (!v) return notHosted(res, base);
      return send(res, 200, ENTRY_TYPE, ruleEntry(base, v));
    }
    case 'PUT': {
      const doc = await readXml(req);
      const kind = doc === null ? 'RuleDescription' : descriptionKind(doc);
      if (kind !== 'RuleDescription') throw new AtomBodyError(`Expected a RuleDescription, not a ${kind}.`);
      // The name in the URL is the rule's name, whatever the body says.
      const rule = { ...readRule(descriptionOf(doc, kind), name), name };
      if (req.headers['if-match'] !== undefined) return send(res, 200, ENTRY_TYPE, ruleEntry(base, await broker.updateRule(topic, sub, rule)));
      await broker.addRule(subPath, rule);
      return send(res, 201, ENTRY_TYPE, ruleEntry(base, broker.getRule(topic, sub, name)!));
    }
    case 'DELETE':
      await broker.removeRule(subPath, name);
      return deleted(res);
    default:
      throw new AtomError(405, `${req.method ?? ''} is not supported here; use GET, PUT or DELETE.`);
  }
}

// A GET of an entity that does not exist: the service answers 200 with its empty "Publicly Listed Services"
// feed, not 404. The clients map that to not-found (JS: MessageEntityNotFoundError with statusCode 200; Python:
// ResourceNotFoundError; .NET: MessagingEntityNotFound, as the body is not an entry), and `queueExists` to false.
function notHosted(res: ServerResponse, base: LinkBase): void {
  send(res, 200, FEED_TYPE, emptyServiceFeed(base, Date.now()));
}

function deleted(res: ServerResponse): void {
  res.writeHead(200, { 'content-length': '0' });
  res.end();
}

function paging(url: URL): { skip: number; top: number } {
  return { skip: queryInt(url, '$skip', 0), top: Math.min(queryInt(url, '$top', MAX_PAGE), MAX_PAGE) };
}

function listTopics(res: ServerResponse, url: URL, base: LinkBase, broker: ManagementPort): void {
  const { skip, top } = paging(url);
  const page = broker.listTopics(skip, top + 1);
  const entries = page.slice(0, top).map((v) => topicEntry(base, v, true, false));
  send(res, 200, FEED_TYPE, feed(base, 'Topics', '$Resources/Topics', entries, { skip, top, more: page.length > top }, Date.now()));
}

function listQueues(res: ServerResponse, url: URL, base: LinkBase, broker: ManagementPort): void {
  const { skip, top } = paging(url);
  const page = broker.listQueues(skip, top + 1);
  const more = page.length > top;
  const entries = page.slice(0, top).map((v) => queueEntry(base, v, true, false));
  send(res, 200, FEED_TYPE, feed(base, 'Queues', '$Resources/Queues', entries, { skip, top, more }, Date.now()));
}

// Which description a PUT carries (QueueDescription, TopicDescription ...); an empty body is a queue's, as
// the service treats a bare PUT.
function descriptionKind(doc: XmlObject | null): string {
  if (doc === null) return 'QueueDescription';
  const content = (doc['entry'] as XmlObject | undefined)?.['content'];
  if (content && typeof content === 'object' && !Array.isArray(content)) {
    const kind = Object.keys(content).find((k) => !k.startsWith('@_') && k !== '#text');
    if (kind) return kind;
  }
  throw new AtomBodyError('The request body is not an Atom entry with a description.');
}

function pathSegments(pathname: string): string[] {
  return pathname
    .split('/')
    .filter(Boolean)
    .map((s) => {
      let d: string;
      try {
        d = decodeURIComponent(s);
      } catch {
        throw new AtomError(400, `The path segment '${s.slice(0, 100)}' is not correctly URL-encoded.`);
      }
      if (d.length > MAX_ENTITY_NAME) throw new AtomError(400, `A path segment is longer than ${MAX_ENTITY_NAME} characters.`);
      return d;
    });
}

function queryInt(url: URL, name: string, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return fallback;
  if (!/^\d{1,9}$/.test(raw)) throw new AtomError(400, `${name} must be a non-negative integer.`);
  return Number(raw);
}

function onlyMethods(req: IncomingMessage, method: string): void {
  if (req.method !== method) throw new AtomError(405, `${req.method ?? ''} is not supported here; use ${method}.`);
}

// 401 for a missing or invalid token, a policy without Manage, or an audience that does not cover the path:
// the service answers all of these with 401 (SubCode 40100), which every client maps to unauthorized. An entity's
// Manage rule manages that entity (its `sr` is the entity, so the audience check keeps it there).
function authorize(req: IncomingMessage, keys: Keys, path: string): void {
  const header = req.headers.authorization;
  if (!header) throw new AtomError(401, 'MissingToken: The request has no Authorization header.');
  let claim;
  try {
    claim = verifySas(header, keys, Date.now());
  } catch (err) {
    if (err instanceof AuthError) throw new AtomError(401, `InvalidSignature: ${err.message}`);
    throw err;
  }
  if (!claim.rights.includes('Manage')) {
    // The service's own text for a key without Manage ("Manage,EntityRead claims required for this operation"), 401.
    throw new AtomError(401, `Manage,EntityRead claims required for this operation; the policy '${claim.policy}' lacks Manage.`);
  }
  // The JS client signs the whole request URL, query included; only the path part is an audience.
  const audience = claim.audience.replace(/[?#].*$/, '').replace(/\/+$/, '');
  if (!covers(audience, path)) throw new AtomError(401, `Unauthorized: the token's audience does not cover '${path}'.`);
}

function linkBase(req: IncomingMessage, url: URL, namespace: string): LinkBase {
  const tls = (req.socket as TLSSocket).encrypted === true;
  const host = req.headers.host && /^[A-Za-z0-9.\-:[\]]{1,300}$/.test(req.headers.host) ? req.headers.host : `${req.socket.localAddress}:${req.socket.localPort}`;
  const apiVersion = url.searchParams.get('api-version');
  return {
    origin: `${tls ? 'https' : 'http'}://${host}`,
    apiVersion: apiVersion && /^[\w.-]{1,40}$/.test(apiVersion) ? apiVersion : DEFAULT_API_VERSION,
    namespace,
  };
}

// Reads the body (null when empty) within MAX_ATOM_BODY_BYTES and parses it with the hardened parser.
async function readXml(req: IncomingMessage): Promise<XmlObject | null> {
  const declared = Number(req.headers['content-length']);
  if (declared > MAX_ATOM_BODY_BYTES) throw new AtomError(413, `The request body exceeds ${MAX_ATOM_BODY_BYTES} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  // A body that trickles in gets its own bound, shorter than the server's Broker.HttpRequestTimeout by default.
  const slow = setTimeout(() => req.destroy(new AtomError(408, `The request body did not arrive within ${BODY_TIMEOUT_MS} ms.`)), BODY_TIMEOUT_MS);
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ATOM_BODY_BYTES) throw new AtomError(413, `The request body exceeds ${MAX_ATOM_BODY_BYTES} bytes.`);
      chunks.push(chunk);
    }
  } finally {
    clearTimeout(slow);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  return text === '' ? null : parseXml(text);
}

function send(res: ServerResponse, status: number, type: string, body: XmlElement): void {
  const text = xmlDocument(body);
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendFailure(res: ServerResponse, err: unknown, log: Logger, req: IncomingMessage): void {
  let status: number;
  let detail: string;
  if (err instanceof AtomError) {
    status = err.status;
    detail = err.message;
  } else if (err instanceof XmlError || err instanceof AtomBodyError) {
    status = 400;
    detail = err.message;
  } else {
    const e = wireError(err);
    status = e.http;
    detail = e.description;
    if (e.code === 'Internal' && !(err instanceof BrokerError)) log.error({ err, method: req.method, path: req.url }, 'management request failed');
    // The JS client maps 409 to "already exists" only on a create; the SubCode is what the service sends.
    if (status === 409) detail = `SubCode=40900. Conflict. ${detail}`;
  }
  if (res.headersSent) return void res.end();
  const text = xmlDocument(errorBody(status, detail));
  const headers: Record<string, string | number> = { 'content-type': ERROR_TYPE, 'content-length': Buffer.byteLength(text) };
  // An unread oversized body would otherwise be drained (or block) on a keep-alive connection.
  if (status === 413) headers['connection'] = 'close';
  res.writeHead(status, headers);
  res.end(text);
}
