// The rule engine's input model, independent of rhea: a message's broker (system) properties and its typed
// application properties. Filters see only these, never the body (docs/filters.md, "Fan-out", topic filters doc).

import { toFilterValue, type FilterValue, type PlainValue } from './values.js';

/**
 * Broker properties a filter reads (`sys.` scope, docs/filters.md, "Property resolution") by Service Bus name; absent
 * and null both mean no value.
 */
export interface SystemProperties {
  /** properties.message-id, rendered as a string. */
  messageId?: string | null;
  /** properties.correlation-id. */
  correlationId?: string | null;
  /** properties.to. */
  to?: string | null;
  /** properties.reply-to. */
  replyTo?: string | null;
  /** `sys.Label`: properties.subject (the SDKs' Subject). */
  label?: string | null;
  /** properties.group-id. */
  sessionId?: string | null;
  /** properties.reply-to-group-id. */
  replyToSessionId?: string | null;
  /** properties.content-type. */
  contentType?: string | null;
  /** header.ttl, ms. */
  timeToLive?: number | null;
  /** Annotation x-opt-scheduled-enqueue-time, epoch ms. */
  scheduledEnqueueTimeUtc?: number | null;
  /** Annotation x-opt-partition-key. */
  partitionKey?: string | null;
  /** Annotation x-opt-via-partition-key. */
  viaPartitionKey?: string | null;
  /** Broker flag ForcePersistence. */
  forcePersistence?: boolean | null;
  /** Assigned by the topic at accept, epoch ms. */
  enqueuedTimeUtc?: number | null;
  /** Assigned by the topic at accept. */
  sequenceNumber?: number | bigint | null;
  /** Original sequence number after forwarding (x-opt-enqueue-sequence-number). */
  enqueuedSequenceNumber?: number | bigint | null;
  /** 0 at filter time. */
  deliveryCount?: number | null;
  /** Stored size in bytes. */
  size?: number | bigint | null;
}

/** A message as filters and actions see it. Treat as immutable: actions return modified copies. */
export interface FilterMessage {
  readonly system: Readonly<SystemProperties>;
  /** Application properties in wire order, with their AMQP types; names are matched case-insensitively. */
  readonly properties: ReadonlyMap<string, FilterValue>;
}

/** A plain description of a message, for tests and tools. */
export interface MessageDescription {
  system?: SystemProperties;
  properties?: Record<string, PlainValue> | Iterable<readonly [string, PlainValue]>;
}

/** Builds a FilterMessage from plain JS values (see `toFilterValue` for how numbers are typed). */
export function filterMessage(d: MessageDescription = {}): FilterMessage {
  const entries: Iterable<readonly [string, PlainValue]> =
    d.properties === undefined
      ? []
      : Symbol.iterator in d.properties
        ? (d.properties as Iterable<readonly [string, PlainValue]>)
        : Object.entries(d.properties);
  const properties = new Map<string, FilterValue>();
  for (const [k, v] of entries) properties.set(k, toFilterValue(v));
  return { system: { ...d.system }, properties };
}

// Lower-cased name → first key in wire order. Service Bus property names are case-insensitive, including application
// property names (SQL filter syntax doc; the SDKs' rule-manager live tests send `color` and filter on `Color`); for two
// keys differing only in case we choose the first one (docs/filters.md, "Property resolution"; our choice).
const indexes = new WeakMap<ReadonlyMap<string, FilterValue>, Map<string, string>>();

/** Folds a property or rule name for case-insensitive comparison. */
export function foldName(name: string): string {
  return name.toLowerCase();
}

function indexOf(props: ReadonlyMap<string, FilterValue>): Map<string, string> {
  let idx = indexes.get(props);
  if (idx === undefined) {
    idx = new Map();
    for (const k of props.keys()) {
      const f = foldName(k);
      if (!idx.has(f)) idx.set(f, k);
    }
    indexes.set(props, idx);
  }
  return idx;
}

/** The actual key of an application property, matched case-insensitively; undefined when absent. */
export function findPropertyKey(props: ReadonlyMap<string, FilterValue>, name: string): string | undefined {
  return indexOf(props).get(foldName(name));
}

/** An application property by case-insensitive name; undefined when absent (typed null when present as null). */
export function getProperty(props: ReadonlyMap<string, FilterValue>, name: string): FilterValue | undefined {
  const key = findPropertyKey(props, name);
  return key === undefined ? undefined : props.get(key);
}
