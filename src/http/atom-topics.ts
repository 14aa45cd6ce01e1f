// The Atom XML of topics, subscriptions and rules (see atom-codec.ts for the rules every shape follows).
// Subscription ids must hold `/Subscriptions/` and rule ids `/Rules/`, capitalised: the JS client takes the
// names from the id with a case-sensitive pattern. Rule values carry `i:type="d6p1:…"` with a 4-character prefix
// declared on each value, as the service writes them (the JS client reads the type from that exact spelling).

import type { RuleView, SubscriptionPatch, SubscriptionView, TopicPatch, TopicView } from '../broker/ports.js';
import { parseDuration } from '../config/duration.js';
import { Typed, type FilterValue, type PlainValue, type RuleDescription, type RuleFilterDescription, type SqlParameters } from '../filters/index.js';
import {
  accessed,
  atomEntry,
  AtomBodyError,
  authorizationRulesElement,
  forwardElement,
  readAuthorizationRules,
  bool,
  countDetails,
  date,
  duration,
  Reader,
  SB_NS,
  XSI_NS,
  type LinkBase,
} from './atom-codec.js';
import { child, el, textOf, type XmlElement, type XmlObject, type XmlValue } from './xml.js';

const XSD_NS = 'http://www.w3.org/2001/XMLSchema';

/** Reads what a topic create or update sets. */
export function readTopicPatch(d: XmlObject): TopicPatch {
  const r = new Reader(d);
  const mb = r.int('MaxSizeInMegabytes');
  return {
    defaultMessageTtlMs: r.durationOrNever('DefaultMessageTimeToLive'),
    maxSizeBytes: mb === undefined ? undefined : mb * 1024 * 1024,
    requiresDuplicateDetection: r.bool('RequiresDuplicateDetection'),
    duplicateDetectionWindowMs: r.duration('DuplicateDetectionHistoryTimeWindow'),
    enableBatchedOperations: r.bool('EnableBatchedOperations'),
    status: r.status('Status'),
    userMetadata: r.optionalText('UserMetadata'),
    supportOrdering: r.bool('SupportOrdering'),
    autoDeleteOnIdleMs: r.durationOrNever('AutoDeleteOnIdle'),
    enablePartitioning: r.bool('EnablePartitioning'),
    enableExpress: r.bool('EnableExpress'),
    maxMessageSizeInKilobytes: r.int('MaxMessageSizeInKilobytes'),
    authorizationRules: readAuthorizationRules(d),
  };
}

/** Reads what a subscription create or update sets, and the DefaultRuleDescription a create may carry. */
export function readSubscriptionPatch(d: XmlObject): { patch: SubscriptionPatch; defaultRule?: RuleDescription } {
  const r = new Reader(d);
  const patch: SubscriptionPatch = {
    settings: {
      lockDurationMs: r.duration('LockDuration'),
      requiresSession: r.bool('RequiresSession'),
      defaultMessageTtlMs: r.durationOrNever('DefaultMessageTimeToLive'),
      deadLetteringOnMessageExpiration: r.bool('DeadLetteringOnMessageExpiration'),
      maxDeliveryCount: r.int('MaxDeliveryCount'),
      forwardTo: r.entityName('ForwardTo'),
      forwardDeadLetteredMessagesTo: r.entityName('ForwardDeadLetteredMessagesTo'),
    },
    deadLetteringOnFilterEvaluationExceptions: r.bool('DeadLetteringOnFilterEvaluationExceptions'),
    enableBatchedOperations: r.bool('EnableBatchedOperations'),
    status: r.status('Status'),
    userMetadata: r.optionalText('UserMetadata'),
    autoDeleteOnIdleMs: r.durationOrNever('AutoDeleteOnIdle'),
  };
  const rule = child(d, 'DefaultRuleDescription');
  if (rule === undefined || typeof rule === 'string' || Array.isArray(rule)) return { patch };
  return { patch, defaultRule: readRule(rule, '$Default') };
}

/** Reads a `<RuleDescription>` (Filter, Action, Name); `fallbackName` is the name from the URL. */
export function readRule(d: XmlObject, fallbackName: string): RuleDescription {
  const name = textOf(child(d, 'Name')) || fallbackName;
  const action = readAction(child(d, 'Action'));
  const rule: RuleDescription = { name, filter: readFilter(child(d, 'Filter')), action: action?.expression ?? null };
  return action?.parameters ? { ...rule, actionParameters: action.parameters } : rule;
}

// `<Parameters>` of a SqlFilter or SqlRuleAction: the same key/value list as a correlation filter's Properties;
// undefined when there are none, so a rule without parameters is stored as before.
function readParameters(node: XmlValue | undefined): SqlParameters | undefined {
  const params = readProperties(node);
  return Object.keys(params).length === 0 ? undefined : params;
}

// The `i:type` (or `xsi:type`, or any prefix: prefixes are dropped when parsing) of an element, without its prefix.
function typeOf(node: XmlValue | undefined): string | undefined {
  if (!node || typeof node === 'string' || Array.isArray(node)) return undefined;
  const t = node['@_type'];
  return typeof t === 'string' ? t.replace(/^.*:/, '') : undefined;
}

function readFilter(node: XmlValue | undefined): RuleFilterDescription {
  if (node === undefined) return { type: 'true' };
  const kind = typeOf(node);
  const f = typeof node === 'object' && !Array.isArray(node) ? node : {};
  const sql = textOf(child(f, 'SqlExpression'));
  switch (kind) {
    case 'TrueFilter':
      return { type: 'true' };
    case 'FalseFilter':
      return { type: 'false' };
    case 'SqlFilter':
    case undefined: {
      if (sql === undefined) throw new AtomBodyError('A SqlFilter needs a SqlExpression.');
      const parameters = readParameters(child(f, 'Parameters'));
      return parameters ? { type: 'sql', expression: sql, parameters } : { type: 'sql', expression: sql };
    }
    case 'CorrelationFilter': {
      const text = (name: string): string | undefined => {
        const t = textOf(child(f, name));
        return t === undefined || t === '' ? undefined : t;
      };
      return {
        type: 'correlation',
        correlationId: text('CorrelationId'),
        messageId: text('MessageId'),
        to: text('To'),
        replyTo: text('ReplyTo'),
        label: text('Label'),
        sessionId: text('SessionId'),
        replyToSessionId: text('ReplyToSessionId'),
        contentType: text('ContentType'),
        properties: readProperties(child(f, 'Properties')),
      };
    }
    default:
      throw new AtomBodyError(`Unknown filter type '${kind}'.`);
  }
}

function readAction(node: XmlValue | undefined): { expression: string; parameters?: SqlParameters } | null {
  if (node === undefined) return null;
  const kind = typeOf(node);
  if (kind === 'EmptyRuleAction' || kind === undefined) return null;
  if (kind !== 'SqlRuleAction') throw new AtomBodyError(`Unknown action type '${kind}'.`);
  const sql = textOf(child(node, 'SqlExpression'));
  if (!sql) throw new AtomBodyError('A SqlRuleAction needs a SqlExpression.');
  const parameters = readParameters(child(node, 'Parameters'));
  return parameters ? { expression: sql, parameters } : { expression: sql };
}

// `<Properties><KeyValueOfstringanyType><Key/><Value i:type="d6p1:int"/></…></Properties>` → plain values.
function readProperties(node: XmlValue | undefined): Record<string, PlainValue> {
  const out: Record<string, PlainValue> = {};
  if (!node || typeof node === 'string' || Array.isArray(node)) return out;
  const raw = node['KeyValueOfstringanyType'];
  const pairs = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  for (const pair of pairs) {
    const key = textOf(child(pair, 'Key'));
    if (!key) throw new AtomBodyError('A filter property needs a Key.');
    const valueNode = child(pair, 'Value');
    out[key] = typedValue(typeOf(valueNode), textOf(valueNode) ?? '', key);
  }
  return out;
}

function typedValue(type: string | undefined, text: string, key: string): PlainValue {
  switch (type) {
    case 'int':
    case 'long':
    case 'short':
    case 'double':
    case 'float':
    case 'decimal': {
      const n = Number(text);
      if (!Number.isFinite(n)) throw new AtomBodyError(`The value of '${key}' is not a number.`);
      return n;
    }
    case 'boolean':
      return /^true$/i.test(text);
    case 'dateTime': {
      const d = new Date(text);
      if (Number.isNaN(d.getTime())) throw new AtomBodyError(`The value of '${key}' is not a date.`);
      return d;
    }
    case 'duration': {
      // .NET sends a TimeSpan as an XSD duration; the filter language compares it as a TimeSpan.
      const ms = parseDuration(text);
      if (ms === null) throw new AtomBodyError(`The value of '${key}' is not a duration.`);
      return Typed.duration(ms);
    }
    default:
      return text;
  }
}

/** The entity path of a subscription, as ids and links spell it. */
export function subscriptionPath(topic: string, name: string): string {
  return `${topic}/Subscriptions/${name}`;
}

/** An Atom entry for a topic; `runtime` adds AccessedAt, CountDetails, SubscriptionCount and the filter counts. */
export function topicEntry(base: LinkBase, v: TopicView, runtime: boolean, root = true): XmlElement {
  const d = v.description;
  const body = el(
    'TopicDescription',
    { xmlns: SB_NS, 'xmlns:i': XSI_NS },
    el('DefaultMessageTimeToLive', null, duration(d.defaultMessageTtlMs)),
    el('MaxSizeInMegabytes', null, String(Math.floor(d.maxSizeBytes / 1048576))),
    el('RequiresDuplicateDetection', null, bool(d.requiresDuplicateDetection)),
    el('DuplicateDetectionHistoryTimeWindow', null, duration(d.duplicateDetectionWindowMs)),
    el('EnableBatchedOperations', null, bool(d.enableBatchedOperations)),
    el('SizeInBytes', null, String(v.sizeInBytes)),
    el('FilteringMessagesBeforePublishing', null, 'false'),
    el('IsAnonymousAccessible', null, 'false'),
    authorizationRulesElement(d.authorizationRules),
    el('Status', null, d.status),
    d.userMetadata === null ? null : el('UserMetadata', null, d.userMetadata),
    el('CreatedAt', null, date(v.createdAt)),
    el('UpdatedAt', null, date(v.updatedAt)),
    runtime ? el('AccessedAt', null, accessed(v.accessedAt)) : null,
    el('SupportOrdering', null, bool(d.supportOrdering)),
    runtime
      ? countDetails({ active: 0, deadLetter: 0, scheduled: v.scheduled, transfer: 0, transferDeadLetter: 0, total: 0, sizeInBytes: 0 })
      : null,
    runtime ? el('SubscriptionCount', null, String(v.subscriptionCount)) : null,
    runtime && v.sqlFilterCount !== undefined ? el('SqlFilterCount', null, String(v.sqlFilterCount)) : null,
    runtime && v.correlationFilterCount !== undefined ? el('CorrelationFilterCount', null, String(v.correlationFilterCount)) : null,
    el('AutoDeleteOnIdle', null, duration(d.autoDeleteOnIdleMs)),
    el('EnablePartitioning', null, bool(d.enablePartitioning)),
    el('EntityAvailabilityStatus', null, 'Available'),
    el('EnableSubscriptionPartitioning', null, 'false'),
    el('EnableExpress', null, bool(d.enableExpress)),
    el('MaxMessageSizeInKilobytes', null, String(d.maxMessageSizeInKilobytes)),
  );
  return atomEntry(base, v.name, v.name, v.createdAt, v.updatedAt, body, root);
}

/** An Atom entry for a subscription; `runtime` adds AccessedAt and CountDetails. */
export function subscriptionEntry(base: LinkBase, v: SubscriptionView, runtime: boolean, root = true): XmlElement {
  const d = v.description;
  const s = d.settings;
  const body = el(
    'SubscriptionDescription',
    { xmlns: SB_NS, 'xmlns:i': XSI_NS },
    el('LockDuration', null, duration(s.lockDurationMs)),
    el('RequiresSession', null, bool(s.requiresSession)),
    el('DefaultMessageTimeToLive', null, duration(s.defaultMessageTtlMs)),
    el('DeadLetteringOnMessageExpiration', null, bool(s.deadLetteringOnMessageExpiration)),
    el('DeadLetteringOnFilterEvaluationExceptions', null, bool(d.deadLetteringOnFilterEvaluationExceptions)),
    el('MessageCount', null, String(v.counts.total)),
    el('MaxDeliveryCount', null, String(s.maxDeliveryCount)),
    el('EnableBatchedOperations', null, bool(d.enableBatchedOperations)),
    el('Status', null, d.status),
    forwardElement('ForwardTo', base, s.forwardTo),
    el('CreatedAt', null, date(v.createdAt)),
    el('UpdatedAt', null, date(v.updatedAt)),
    runtime ? el('AccessedAt', null, accessed(v.accessedAt)) : null,
    runtime ? countDetails(v.counts) : null,
    d.userMetadata === null ? null : el('UserMetadata', null, d.userMetadata),
    forwardElement('ForwardDeadLetteredMessagesTo', base, s.forwardDeadLetteredMessagesTo),
    el('AutoDeleteOnIdle', null, duration(d.autoDeleteOnIdleMs)),
    el('EntityAvailabilityStatus', null, 'Available'),
  );
  return atomEntry(base, subscriptionPath(v.topic, v.name), v.name, v.createdAt, v.updatedAt, body, root);
}

/** An Atom entry for a rule. */
export function ruleEntry(base: LinkBase, v: RuleView, root = true): XmlElement {
  const r = v.description;
  const body = el(
    'RuleDescription',
    { xmlns: SB_NS, 'xmlns:i': XSI_NS },
    filterElement(r.filter),
    r.action === null
      ? el('Action', { 'i:type': 'EmptyRuleAction' })
      : el(
          'Action',
          { 'i:type': 'SqlRuleAction' },
          el('SqlExpression', null, r.action),
          parametersElement(r.actionParameters),
          el('CompatibilityLevel', null, '20'),
        ),
    el('CreatedAt', null, date(v.createdAt)),
    el('Name', null, r.name),
  );
  return atomEntry(base, `${subscriptionPath(v.topic, v.subscription)}/Rules/${r.name}`, r.name, v.createdAt, v.createdAt, body, root);
}

// `<Parameters>` in the service's order (after SqlExpression, before CompatibilityLevel); left out when empty.
function parametersElement(p: SqlParameters | undefined): XmlElement | null {
  const entries = Object.entries(p ?? {});
  if (entries.length === 0) return null;
  return el('Parameters', null, ...entries.map(([k, v]) => el('KeyValueOfstringanyType', null, el('Key', null, k), valueElement(v))));
}

function filterElement(f: RuleFilterDescription): XmlElement {
  const sql = (type: string, expr: string, params?: SqlParameters): XmlElement =>
    el('Filter', { 'i:type': type }, el('SqlExpression', null, expr), parametersElement(params), el('CompatibilityLevel', null, '20'));
  switch (f.type) {
    case 'true':
      return sql('TrueFilter', '1=1');
    case 'false':
      return sql('FalseFilter', '1=0');
    case 'sql':
      return sql('SqlFilter', f.expression, f.parameters);
    case 'correlation': {
      const text = (name: string, v: string | null | undefined): XmlElement | null => (v ? el(name, null, v) : null);
      const props = f.properties ? Object.entries(f.properties as Record<string, PlainValue>) : [];
      return el(
        'Filter',
        { 'i:type': 'CorrelationFilter' },
        text('CorrelationId', f.correlationId),
        text('MessageId', f.messageId),
        text('To', f.to),
        text('ReplyTo', f.replyTo),
        text('Label', f.label ?? f.subject),
        text('SessionId', f.sessionId),
        text('ReplyToSessionId', f.replyToSessionId),
        text('ContentType', f.contentType),
        el('Properties', null, ...props.map(([k, v]) => el('KeyValueOfstringanyType', null, el('Key', null, k), valueElement(v)))),
      );
    }
  }
}

// The service's spelling: `<Value i:type="d6p1:int" xmlns:d6p1="…XMLSchema">`.
function valueElement(v: PlainValue): XmlElement {
  const typed = (type: string, text: string): XmlElement => el('Value', { 'i:type': `d6p1:${type}`, 'xmlns:d6p1': XSD_NS }, text);
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? typed('int', String(v)) : typed('double', String(v));
  if (typeof v === 'boolean') return typed('boolean', bool(v));
  if (v instanceof Date) return typed('dateTime', v.toISOString());
  if (typeof v === 'bigint') return typed('long', String(v));
  if (v !== null && typeof v === 'object') return typedValueElement(v, typed);
  return typed('string', String(v));
}

// A value already typed (a duration from .NET, or a typed property): the service's name for its type.
function typedValueElement(v: FilterValue, typed: (type: string, text: string) => XmlElement): XmlElement {
  switch (v.type) {
    case 'duration':
      return el('Value', { 'i:type': 'd6p1:duration', 'xmlns:d6p1': 'http://schemas.microsoft.com/2003/10/Serialization/' }, duration(v.value));
    case 'timestamp':
      return typed('dateTime', new Date(v.value).toISOString());
    case 'boolean':
      return typed('boolean', bool(v.value));
    case 'null':
      return el('Value', { 'i:nil': 'true' });
    default:
      return typeof v.value === 'bigint' || typeof v.value === 'number' ? typed(Number.isInteger(Number(v.value)) ? 'long' : 'double', String(v.value)) : typed('string', String(v.value));
  }
}
