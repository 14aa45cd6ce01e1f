// The `sys.` scope: which broker property names exist, their evaluator types, and which ones an action may set or
// remove (docs/filters.md, "Property resolution", "Actions"). Names are case-insensitive (SQL filter syntax doc).

import { FilterEvaluationError } from './errors.js';
import type { FilterMessage, SystemProperties } from './message.js';
import { foldName } from './message.js';
import { parseTimeSpan, renderText, Typed, type EvalValue, type FilterValue } from './values.js';

type SysType = 'string' | 'timestamp' | 'duration' | 'long' | 'int' | 'boolean';

/** One system property: canonical name, where it lives in SystemProperties, its type, what actions may do. */
export interface SystemProperty {
  readonly name: string;
  /** null: computed (ExpiresAtUtc) or meaningless at filter time (LockToken…), read as NULL. */
  readonly key: keyof SystemProperties | null;
  readonly type: SysType;
  /**
   * Settable = not read-only in message payloads doc; Microsoft keeps allowing it for compatibility
   * (azure-service-bus#180).
   */
  readonly settable: boolean;
  /** REMOVE allowed: nullable string properties only (docs/filters.md, "Actions"; our choice). */
  readonly removable: boolean;
}

function prop(name: string, key: keyof SystemProperties | null, type: SysType, settable: boolean): SystemProperty {
  // MessageId is never null on a Service Bus message, so it cannot be removed.
  const removable = settable && type === 'string' && key !== 'messageId';
  return { name, key, type, settable, removable };
}

const LABEL = prop('Label', 'label', 'string', true);

const TABLE: readonly SystemProperty[] = [
  prop('MessageId', 'messageId', 'string', true),
  prop('CorrelationId', 'correlationId', 'string', true),
  prop('To', 'to', 'string', true),
  prop('ReplyTo', 'replyTo', 'string', true),
  LABEL,
  prop('SessionId', 'sessionId', 'string', true),
  prop('ReplyToSessionId', 'replyToSessionId', 'string', true),
  prop('ContentType', 'contentType', 'string', true),
  prop('TimeToLive', 'timeToLive', 'duration', true),
  prop('ScheduledEnqueueTimeUtc', 'scheduledEnqueueTimeUtc', 'timestamp', true),
  prop('PartitionKey', 'partitionKey', 'string', true),
  prop('ViaPartitionKey', 'viaPartitionKey', 'string', true),
  prop('ForcePersistence', 'forcePersistence', 'boolean', true),
  prop('EnqueuedTimeUtc', 'enqueuedTimeUtc', 'timestamp', false),
  prop('SequenceNumber', 'sequenceNumber', 'long', false),
  prop('EnqueuedSequenceNumber', 'enqueuedSequenceNumber', 'long', false),
  prop('ExpiresAtUtc', null, 'timestamp', false),
  prop('DeliveryCount', 'deliveryCount', 'int', false),
  prop('Size', 'size', 'long', false),
  prop('DeadLetterSource', null, 'string', false),
  prop('LockToken', null, 'string', false),
  prop('LockedUntilUtc', null, 'timestamp', false),
  prop('State', null, 'string', false),
];

const BY_NAME = new Map<string, SystemProperty>(TABLE.map((p) => [foldName(p.name), p]));
// `sys.Subject` as an alias of `sys.Label`: the current SDKs call the field Subject (docs/filters.md, "Property
// resolution"; our choice).
BY_NAME.set('subject', LABEL);

/** Looks a `sys.` name up case-insensitively; undefined when Service Bus has no such property. */
export function systemProperty(name: string): SystemProperty | undefined {
  return BY_NAME.get(foldName(name));
}

/** Reads a system property of a message as a typed value (typed null when unset). */
export function readSystem(msg: FilterMessage, p: SystemProperty): FilterValue {
  const s = msg.system;
  if (p.key === null) {
    // ExpiresAtUtc = EnqueuedTimeUtc + TimeToLive (message payloads doc); the other keyless ones mean nothing at filter
    // time.
    if (p.name !== 'ExpiresAtUtc' || s.enqueuedTimeUtc == null || s.timeToLive == null) return Typed.null();
    return Typed.timestamp(s.enqueuedTimeUtc + s.timeToLive);
  }
  const v = s[p.key];
  if (v === null || v === undefined) return Typed.null();
  switch (p.type) {
    case 'string':
      return Typed.string(v as string);
    case 'timestamp':
      return Typed.timestamp(v as number);
    case 'duration':
      return Typed.duration(v as number);
    case 'boolean':
      return Typed.boolean(v as boolean);
    case 'int':
    case 'long':
      return { type: p.type, value: BigInt(v as number | bigint) };
  }
}

function castError(p: SystemProperty, v: FilterValue): FilterEvaluationError {
  return new FilterEvaluationError(
    'InvalidCastException',
    `Cannot assign a value of type ${v.type} to system property ${p.name}.`,
  );
}

/**
 * Converts an assigned value to the property's type (docs/filters.md, "Actions"; our choice: render to string, parse
 * strings).
 */
function convertForSystem(p: SystemProperty, v: FilterValue): string | number | boolean {
  switch (p.type) {
    case 'string': {
      const text = v.type === 'boolean' ? null : renderText(v);
      if (text === null) throw castError(p, v);
      return text;
    }
    case 'duration': {
      if (v.type === 'duration') return v.value;
      const ms = v.type === 'string' ? parseTimeSpan(v.value) : null;
      if (ms === null) throw castError(p, v);
      return ms;
    }
    case 'timestamp': {
      if (v.type === 'timestamp') return v.value;
      const ms = v.type === 'string' ? Date.parse(v.value) : NaN;
      if (Number.isNaN(ms)) throw castError(p, v);
      return ms;
    }
    case 'boolean': {
      if (v.type === 'boolean') return v.value;
      const t = v.type === 'string' ? v.value.trim().toLowerCase() : '';
      if (t !== 'true' && t !== 'false') throw castError(p, v);
      return t === 'true';
    }
    default:
      throw castError(p, v); // read-only properties never reach here (refused at compile time)
  }
}

/** Returns a copy of `system` with `p` set to `v` (null/UNKNOWN clears it); throws FilterEvaluationError. */
export function assignSystem(system: Readonly<SystemProperties>, p: SystemProperty, v: EvalValue): SystemProperties {
  if (p.key === null) throw castError(p, v ?? Typed.null());
  if (v === null || v.type === 'null') {
    if (!p.removable && p.type === 'string') {
      throw new FilterEvaluationError('InvalidCastException', `System property ${p.name} cannot be null.`);
    }
    return { ...system, [p.key]: null };
  }
  return { ...system, [p.key]: convertForSystem(p, v) };
}
