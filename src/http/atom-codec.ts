// The Atom XML the Service Bus management plane speaks, for queues and the namespace. Requests are read by
// element local name in any order; read-only and unknown elements are ignored, because every client sends a
// different order and echoes what it got back on update. Responses copy the real service's shape: both `<id>`
// (absolute, as the JS client takes the entity name from it) and `<title>` (which .NET and Python read), the
// service's element order, `true`/`false`, durations in D/H/M/S with TimeSpan.MaxValue for "never", and
// CountDetails with exactly one prefixed namespace (the JS client's parser needs the prefix).

import {
  ENTITY_STATUSES,
  type AuthorizationRule,
  type AuthorizationRuleInput,
  type EntityStatus,
  type QueueCounts,
  type QueuePatch,
  type QueueView,
} from '../broker/ports.js';
import { formatDuration, parseDuration } from '../config/duration.js';
import type { AccessRight } from '../config/types.js';
import { child, el, textOf, type XmlElement, type XmlObject, type XmlValue } from './xml.js';

/** The Atom namespace. */
export const ATOM_NS = 'http://www.w3.org/2005/Atom';
/** The Service Bus description namespace. */
export const SB_NS = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';
/** The XMLSchema-instance namespace (`i:`). */
export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
const COUNT_NS = 'http://schemas.microsoft.com/netservices/2011/06/servicebus';
/** The api-version written into links when the request named none. */
export const DEFAULT_API_VERSION = '2021-05';
/** How Service Bus writes "never" (TimeSpan.MaxValue). */
export const MAX_TIMESPAN = 'P10675199DT2H48M5.4775807S';
/** Durations at least this long mean "never": clients send TimeSpan.MaxValue, some slightly truncated. */
const NEVER_MS = 10_675_199 * 86_400_000;
/** `AccessedAt` of an entity never accessed, as the service writes it. */
export const NEVER_ACCESSED = '0001-01-01T00:00:00Z';

/** A request body the codec cannot accept; the message names the element, for a 400 reply. */
export class AtomBodyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AtomBodyError';
  }
}

/** The description element of an Atom entry (`entry/content/<name>`), or an empty object for an empty body. */
export function descriptionOf(doc: XmlObject | null, name: string): XmlObject {
  if (doc === null) return {};
  const entry = child(doc, 'entry');
  if (entry === undefined) throw new AtomBodyError('The request body is not an Atom entry.');
  const d = child(child(entry, 'content'), name);
  if (d === undefined) throw new AtomBodyError(`The Atom entry does not hold a ${name}.`);
  return typeof d === 'string' || Array.isArray(d) ? {} : d;
}

/** Reads what a queue create or update sets; absent, read-only and unknown elements are left out. */
export function readQueuePatch(d: XmlObject): QueuePatch {
  const r = new Reader(d);
  const mb = r.int('MaxSizeInMegabytes');
  return {
    settings: {
      lockDurationMs: r.duration('LockDuration'),
      maxSizeBytes: mb === undefined ? undefined : mb * 1024 * 1024,
      requiresDuplicateDetection: r.bool('RequiresDuplicateDetection'),
      requiresSession: r.bool('RequiresSession'),
      defaultMessageTtlMs: r.durationOrNever('DefaultMessageTimeToLive'),
      deadLetteringOnMessageExpiration: r.bool('DeadLetteringOnMessageExpiration'),
      duplicateDetectionWindowMs: r.duration('DuplicateDetectionHistoryTimeWindow'),
      maxDeliveryCount: r.int('MaxDeliveryCount'),
      forwardTo: r.entityName('ForwardTo'),
      forwardDeadLetteredMessagesTo: r.entityName('ForwardDeadLetteredMessagesTo'),
    },
    authorizationRules: readAuthorizationRules(d),
    enableBatchedOperations: r.bool('EnableBatchedOperations'),
    status: r.status('Status'),
    userMetadata: r.optionalText('UserMetadata'),
    autoDeleteOnIdleMs: r.durationOrNever('AutoDeleteOnIdle'),
    enablePartitioning: r.bool('EnablePartitioning'),
    enableExpress: r.bool('EnableExpress'),
    maxMessageSizeInKilobytes: r.int('MaxMessageSizeInKilobytes'),
  };
}

/** Reads typed values of a description's child elements; a malformed value is a 400 naming the element. */
export class Reader {
  constructor(private readonly d: XmlObject) {}

  /** The text of child `name`; undefined when absent. */
  text(name: string): string | undefined {
    const v = child(this.d, name);
    if (v === undefined) return undefined;
    const t = textOf(v);
    if (t === undefined) throw new AtomBodyError(`${name} must be a text value.`);
    return t;
  }

  /** A true/false child. */
  bool(name: string): boolean | undefined {
    const t = this.text(name);
    if (t === undefined) return undefined;
    if (/^true$/i.test(t)) return true;
    if (/^false$/i.test(t)) return false;
    throw new AtomBodyError(`${name} must be true or false, not '${t.slice(0, 50)}'.`);
  }

  /** An integer child. */
  int(name: string): number | undefined {
    const t = this.text(name);
    if (t === undefined) return undefined;
    if (!/^-?\d{1,15}$/.test(t)) throw new AtomBodyError(`${name} must be an integer, not '${t.slice(0, 50)}'.`);
    return Number(t);
  }

  /** A duration child ("never" as the longest duration). */
  duration(name: string): number | undefined {
    const v = this.durationOrNever(name);
    return v === null ? NEVER_MS : v;
  }

  /** A duration child; null for "never". */
  durationOrNever(name: string): number | null | undefined {
    const t = this.text(name);
    if (t === undefined) return undefined;
    const ms = parseDuration(t);
    if (ms === null) throw new AtomBodyError(`${name} must be an ISO 8601 duration such as PT1M, not '${t.slice(0, 50)}'.`);
    return ms >= NEVER_MS ? null : ms;
  }

  /** A text child; an empty one is null. */
  optionalText(name: string): string | null | undefined {
    const t = this.text(name);
    return t === undefined ? undefined : t === '' ? null : t;
  }

  /** ForwardTo and its kin: the SDKs send `sb://host:port/name`; Config.json-style bare names are accepted too. */
  entityName(name: string): string | null | undefined {
    const t = this.optionalText(name);
    if (t === undefined || t === null) return t;
    const path = t.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').replace(/^\/+|\/+$/g, '');
    return path === '' ? null : path;
  }

  /** An entity status child. */
  status(name: string): EntityStatus | undefined {
    const t = this.text(name);
    if (t === undefined) return undefined;
    const s = ENTITY_STATUSES.find((x) => x.toLowerCase() === t.toLowerCase());
    if (!s) throw new AtomBodyError(`${name} must be one of ${ENTITY_STATUSES.join(', ')}.`);
    return s;
  }
}

/** Where links point: the scheme, host and port the client used, and the api-version it asked for. */
export interface LinkBase {
  /** `http://host:port` or `https://host:port`. */
  origin: string;
  apiVersion: string;
  /** The namespace name written as the entries' author. */
  namespace: string;
}

/** `true`/`false`, as the service writes booleans. */
export const bool = (b: boolean): string => (b ? 'true' : 'false');
/** A duration in D/H/M/S, or TimeSpan.MaxValue for "never". */
export const duration = (ms: number | null): string => (ms === null || ms >= NEVER_MS ? MAX_TIMESPAN : formatDuration(ms));
/** An ISO 8601 UTC timestamp. */
export const date = (ms: number): string => new Date(ms).toISOString();
/** AccessedAt: the last use, or the service's "never" (DateTime.MinValue). */
export const accessed = (ms: number | null | undefined): string => (ms ? date(ms) : NEVER_ACCESSED);

/** The entity URL of `path` (path segments encoded, `/` kept) with the api-version. */
export function entityUrl(base: LinkBase, path: string, query = ''): string {
  const p = path.split('/').map(encodeURIComponent).join('/');
  return `${base.origin}/${p}?${query}api-version=${encodeURIComponent(base.apiVersion)}`;
}

/** A queue's `<QueueDescription>`, in the service's element order; `runtime` adds the read-only counts. */
function queueDescription(base: LinkBase, v: QueueView, runtime: boolean): XmlElement {
  const d = v.description;
  const s = d.settings;
  const c: QueueCounts = v.counts;
  return el(
    'QueueDescription',
    { xmlns: SB_NS, 'xmlns:i': XSI_NS },
    el('LockDuration', null, duration(s.lockDurationMs)),
    el('MaxSizeInMegabytes', null, String(Math.floor(s.maxSizeBytes / 1048576))),
    el('RequiresDuplicateDetection', null, bool(s.requiresDuplicateDetection)),
    el('RequiresSession', null, bool(s.requiresSession)),
    el('DefaultMessageTimeToLive', null, duration(s.defaultMessageTtlMs)),
    el('DeadLetteringOnMessageExpiration', null, bool(s.deadLetteringOnMessageExpiration)),
    el('DuplicateDetectionHistoryTimeWindow', null, duration(s.duplicateDetectionWindowMs)),
    el('MaxDeliveryCount', null, String(s.maxDeliveryCount)),
    el('EnableBatchedOperations', null, bool(d.enableBatchedOperations)),
    el('SizeInBytes', null, String(c.sizeInBytes)),
    el('MessageCount', null, String(c.total)),
    el('IsAnonymousAccessible', null, 'false'),
    authorizationRulesElement(d.authorizationRules),
    el('Status', null, d.status),
    forwardElement('ForwardTo', base, s.forwardTo),
    d.userMetadata === null ? null : el('UserMetadata', null, d.userMetadata),
    el('CreatedAt', null, date(v.createdAt)),
    el('UpdatedAt', null, date(v.updatedAt)),
    runtime ? el('AccessedAt', null, accessed(v.accessedAt)) : null,
    el('SupportOrdering', null, 'true'),
    runtime ? countDetails(c) : null,
    el('AutoDeleteOnIdle', null, duration(d.autoDeleteOnIdleMs)),
    el('EnablePartitioning', null, bool(d.enablePartitioning)),
    forwardElement('ForwardDeadLetteredMessagesTo', base, s.forwardDeadLetteredMessagesTo),
    el('EntityAvailabilityStatus', null, 'Available'),
    el('EnableExpress', null, bool(d.enableExpress)),
    el('MaxMessageSizeInKilobytes', null, String(d.maxMessageSizeInKilobytes)),
  );
}

/** CountDetails with exactly one prefixed namespace, as the JS client's parser needs. */
export function countDetails(c: QueueCounts): XmlElement {
  const n = (name: string, v: number): XmlElement => el(`d2p1:${name}`, null, String(v));
  return el(
    'CountDetails',
    { 'xmlns:d2p1': COUNT_NS },
    n('ActiveMessageCount', c.active),
    n('DeadLetterMessageCount', c.deadLetter),
    n('ScheduledMessageCount', c.scheduled),
    n('TransferMessageCount', c.transfer),
    n('TransferDeadLetterMessageCount', c.transferDeadLetter),
  );
}

/** An Atom entry for one queue; `runtime` (a GET) adds AccessedAt and CountDetails, as the service does. */
export function queueEntry(base: LinkBase, v: QueueView, runtime: boolean, root = true): XmlElement {
  return atomEntry(base, v.name, v.name, v.createdAt, v.updatedAt, queueDescription(base, v, runtime), root);
}

/** An Atom entry around a description: `<id>` is the entity URL of `path`, `<title>` its `title`. */
export function atomEntry(
  base: LinkBase,
  path: string,
  title: string,
  createdAt: number,
  updatedAt: number,
  description: XmlElement,
  root: boolean,
): XmlElement {
  const url = entityUrl(base, path);
  return el(
    'entry',
    root ? { xmlns: ATOM_NS } : { 'xml:base': url },
    el('id', null, url),
    el('title', { type: 'text' }, title),
    el('published', null, date(createdAt)),
    el('updated', null, date(updatedAt)),
    el('author', null, el('name', null, base.namespace)),
    el('link', { rel: 'self', href: url }),
    el('content', { type: 'application/xml' }, description),
  );
}

/** A feed of entries with `self` and, when more remain, `next` links (the JS client needs both to page). */
export function feed(
  base: LinkBase,
  title: string,
  path: string,
  entries: XmlElement[],
  page: { skip: number; top: number; more: boolean },
  now: number,
): XmlElement {
  const self = entityUrl(base, path, page.skip ? `%24skip=${page.skip}&%24top=${page.top}&` : '');
  const next = entityUrl(base, path, `%24skip=${page.skip + page.top}&%24top=${page.top}&`);
  return el(
    'feed',
    { xmlns: ATOM_NS },
    el('title', { type: 'text' }, title),
    el('id', null, self),
    el('updated', null, date(now)),
    el('link', { rel: 'self', href: self }),
    page.more ? el('link', { rel: 'next', href: next }) : null,
    ...entries,
  );
}

/** The service's answer to a GET of a missing entity: an empty "Publicly Listed Services" feed. */
export function emptyServiceFeed(base: LinkBase, now: number): XmlElement {
  return el(
    'feed',
    { xmlns: ATOM_NS },
    el('title', { type: 'text' }, 'Publicly Listed Services'),
    el('subtitle', { type: 'text' }, 'This is the list of publicly-listed services currently available.'),
    el('id', null, `${base.origin}/`),
    el('updated', null, date(now)),
    el('generator', null, 'peeklock'),
  );
}

/** `$namespaceinfo`: what the namespace reports of itself (a Standard namespace, as the emulator presents). */
export function namespaceEntry(base: LinkBase, name: string, createdAt: number): XmlElement {
  const url = `${base.origin}/$namespaceinfo?api-version=${encodeURIComponent(base.apiVersion)}`;
  return el(
    'entry',
    { xmlns: ATOM_NS },
    el('id', null, url),
    el('title', { type: 'text' }, name),
    el('updated', null, date(createdAt)),
    el('author', null, el('name', null, name)),
    el('link', { rel: 'self', href: url }),
    el(
      'content',
      { type: 'application/xml' },
      el(
        'NamespaceInfo',
        { xmlns: SB_NS, 'xmlns:i': XSI_NS },
        el('CreatedTime', null, date(createdAt)),
        el('MessagingSKU', null, 'Standard'),
        el('ModifiedTime', null, date(createdAt)),
        el('Name', null, name),
        el('NamespaceType', null, 'Messaging'),
      ),
    ),
  );
}

/** The service's error body: `<Error><Code>status</Code><Detail>text</Detail></Error>`. */
export function errorBody(status: number, detail: string): XmlElement {
  return el('Error', null, el('Code', null, String(status)), el('Detail', null, detail));
}

// ---- what points at or guards an entity -------------------------------------------------------------------------
// `<AuthorizationRules>` (the entity's SAS rules, as the service writes them and the SDKs' serializers send them) and
// ForwardTo-style targets, which the service answers as `sb://<namespace host>/<name>` whatever form the request used
// (the SDKs' atomManagement tests expect exactly that).

const RIGHTS: readonly AccessRight[] = ['Manage', 'Send', 'Listen'];


/**
 * Reads `<AuthorizationRules>`: undefined when absent (an update keeps the rules), [] when empty (none), else each
 * `<AuthorizationRule>`'s KeyName, PrimaryKey, SecondaryKey and `Rights/AccessRights`.
 */
export function readAuthorizationRules(d: XmlObject): AuthorizationRuleInput[] | undefined {
  const node = child(d, 'AuthorizationRules');
  if (node === undefined) return undefined;
  if (typeof node === 'string' || Array.isArray(node)) return [];
  return list(node['AuthorizationRule']).map((r, i) => {
    if (typeof r === 'string' || Array.isArray(r)) throw new AtomBodyError(`AuthorizationRule ${i + 1} must hold KeyName and Rights.`);
    const claim = text(r, 'ClaimType');
    if (claim !== undefined && claim !== 'SharedAccessKey') throw new AtomBodyError(`AuthorizationRule ${i + 1}: ClaimType must be SharedAccessKey.`);
    const keyName = text(r, 'KeyName');
    if (!keyName) throw new AtomBodyError(`AuthorizationRule ${i + 1} has no KeyName.`);
    const rights = list((child(r, 'Rights') as XmlObject | undefined)?.['AccessRights']).map((v) => {
      const right = RIGHTS.find((x) => x.toLowerCase() === (textOf(v) ?? '').toLowerCase());
      if (!right) throw new AtomBodyError(`AuthorizationRule '${keyName}': each AccessRights must be Manage, Send or Listen.`);
      return right;
    });
    return { keyName, primaryKey: text(r, 'PrimaryKey') || null, secondaryKey: text(r, 'SecondaryKey') || null, rights };
  });
}

/** `<AuthorizationRules>` as the service writes it (each rule typed SharedAccessAuthorizationRule). */
export function authorizationRulesElement(rules: readonly AuthorizationRule[] | undefined): XmlElement {
  return el(
    'AuthorizationRules',
    null,
    ...(rules ?? []).map((r) =>
      el(
        'AuthorizationRule',
        { 'i:type': 'SharedAccessAuthorizationRule' },
        el('ClaimType', null, 'SharedAccessKey'),
        el('ClaimValue', null, 'None'),
        el('Rights', null, ...r.rights.map((x) => el('AccessRights', null, x))),
        el('CreatedTime', null, date(r.createdAt)),
        el('ModifiedTime', null, date(r.modifiedAt)),
        el('KeyName', null, r.keyName),
        el('PrimaryKey', null, r.primaryKey),
        el('SecondaryKey', null, r.secondaryKey),
      ),
    ),
  );
}

/** A ForwardTo-style element for `target` (an entity name), as `sb://<host the client addressed>/<name>`; null when unset. */
export function forwardElement(name: string, base: LinkBase, target: string | null): XmlElement | null {
  return target === null ? null : el(name, null, `sb://${base.origin.replace(/^[a-z]+:\/\//i, '')}/${target}`);
}

function list(v: XmlValue | undefined): XmlValue[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

function text(node: XmlObject, name: string): string | undefined {
  const v = child(node, name);
  return v === undefined ? undefined : textOf(v);
}
