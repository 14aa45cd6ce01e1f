// One description of each entity kind, whether it came from Config.json or from the management API: the settings
// the broker acts on (`EntitySettings`) plus the properties Service Bus keeps and reports but peeklock only stores
// (status, metadata, partitioning flags ...). Every default comes from the one table of Service Bus's defaults
// (config/defaults.ts): a `createQueue("q")` with no options behaves like Azure (PT1M lock, 10 deliveries, no TTL,
// PT10M duplicate window), and a Config.json entity gets the same for what its file leaves out.

import type { EntitySettings, TopicConfig } from '../../config/types.js';
import { SERVICE_BUS_DEFAULTS as DEFAULTS } from '../../config/defaults.js';
import { BrokerError } from '../errors.js';
import type { AuthorizationRule, AuthorizationRuleInput } from './sas-rules.js';

/** Service Bus entity status values (the .NET SDK's EntityStatus). */
export const ENTITY_STATUSES = ['Active', 'Disabled', 'SendDisabled', 'ReceiveDisabled'] as const;

/** An entity's status; peeklock stores and reports it (it does not yet refuse sends or receives by it). */
export type EntityStatus = (typeof ENTITY_STATUSES)[number];

/** What Service Bus keeps and reports for a queue and a topic alike (their QueueDescription / TopicDescription). */
export interface SharedDescription {
  enableBatchedOperations: boolean;
  status: EntityStatus;
  userMetadata: string | null;
  /** AutoDeleteOnIdle; null = never (TimeSpan.MaxValue). Stored and reported, not acted on. */
  autoDeleteOnIdleMs: number | null;
  enablePartitioning: boolean;
  enableExpress: boolean;
  maxMessageSizeInKilobytes: number;
  /** The entity's own SAS rules (sas-rules.ts; a topic's cover its subscriptions); absent in descriptions stored before they existed. */
  authorizationRules?: AuthorizationRule[];
}

/** A queue's full description: what the broker acts on plus what it stores and reports. */
export interface QueueDescription extends SharedDescription {
  settings: EntitySettings;
}

/**
 * What a create or update may set; absent fields keep the default (create) or the current value (update). Rules
 * given replace the entity's rules (keys left out are generated).
 */
export type QueuePatch = Partial<Omit<QueueDescription, 'settings' | 'authorizationRules'>> & {
  settings?: Partial<EntitySettings>;
  authorizationRules?: AuthorizationRuleInput[];
};

/** The real service's description of a queue created with no options (Service Bus REST "Create Queue"). */
export function serviceQueueDefaults(): QueueDescription {
  return { settings: { ...DEFAULTS.settings }, ...DEFAULTS.entity, ...DEFAULTS.queue };
}

/** The description of a Config.json queue: its configured settings and rules, and the service defaults for the rest. */
export function configQueueDescription(settings: EntitySettings, authorizationRules: AuthorizationRule[] = []): QueueDescription {
  return { ...serviceQueueDefaults(), settings: { ...settings }, authorizationRules };
}

/** Applies a patch to a description (a new object; `base` is not changed); the caller settles `authorizationRules`. */
export function applyQueuePatch(base: QueueDescription, patch: QueuePatch): QueueDescription {
  const { settings, authorizationRules: _rules, ...rest } = patch;
  const out: QueueDescription = { ...base, settings: { ...base.settings } };
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  for (const [k, v] of Object.entries(settings ?? {})) if (v !== undefined) (out.settings as unknown as Record<string, unknown>)[k] = v;
  return out;
}

/** Partitions of a partitioned entity on Standard (Service Bus "Partitioned queues and topics"). */
export const PARTITIONS = 16;
/** Standard's largest MaxSizeInMegabytes (5 GB): a larger value given for a partitioned entity is already the total. */
const MAX_PARTITION_MB = 5120;

/**
 * The size a partitioned entity reports and is held to: Service Bus creates 16 partitions of the size asked for and
 * reports MaxSizeInMegabytes as 16 × that size. A value above Standard's largest size is taken as the total, so a
 * client that sends back what it read (16384 for a 1024 MB partitioned queue) does not multiply it again.
 */
export function partitionedSizeBytes(bytes: number): number {
  return bytes > MAX_PARTITION_MB * 1048576 ? bytes : bytes * PARTITIONS;
}

/** Longest entity name Service Bus accepts (queue, topic); subscriptions and rules allow 50. */
export const MAX_ENTITY_NAME = 260;

/**
 * Checks an entity name by Service Bus's naming rules: letters, digits, periods, hyphens, underscores and
 * slashes (for a path-like name), up to 260 characters, not starting or ending with a slash or holding an
 * empty segment; `$` names are reserved for the service's own nodes.
 */
export function checkEntityName(name: string): void {
  const bad = (why: string): BrokerError =>
    new BrokerError('InvalidOperation', `The entity name '${name.slice(0, 300)}' is not valid: ${why}.`);
  if (name.length === 0) throw bad('it is empty');
  if (name.length > MAX_ENTITY_NAME) throw bad(`it is longer than ${MAX_ENTITY_NAME} characters`);
  if (!/^[A-Za-z0-9._\-/]+$/.test(name)) throw bad('it may only hold letters, digits, periods, hyphens, underscores and slashes');
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) throw bad('it may not start or end with a slash or hold an empty segment');
  if (/(^|\/)(subscriptions|rules)(\/|$)/i.test(name)) throw bad("'Subscriptions' and 'Rules' are reserved path segments");
}

/** Checks a description against Service Bus's ranges; throws ArgumentOutOfRange naming the property. */
export function checkQueueDescription(d: QueueDescription): void {
  const s = d.settings;
  range('LockDuration', s.lockDurationMs >= 5_000 && s.lockDurationMs <= 300_000, 'PT5S to PT5M');
  range('MaxDeliveryCount', Number.isInteger(s.maxDeliveryCount) && s.maxDeliveryCount >= 1, 'an integer of at least 1');
  checkSharedRanges({ ...s, autoDeleteOnIdleMs: d.autoDeleteOnIdleMs });
  range('MaxMessageSizeInKilobytes', Number.isInteger(d.maxMessageSizeInKilobytes) && d.maxMessageSizeInKilobytes >= 1, 'a positive integer');
  checkUserMetadata(d.userMetadata);
}

function range(name: string, ok: boolean, allowed: string): void {
  if (!ok) throw new BrokerError('ArgumentOutOfRange', `${name} is out of range; allowed: ${allowed}.`);
}

// The ranges queues and topics share (Service Bus's QueueDescription and TopicDescription limits).
function checkSharedRanges(d: Pick<TopicDescription, 'defaultMessageTtlMs' | 'duplicateDetectionWindowMs' | 'maxSizeBytes' | 'autoDeleteOnIdleMs'>): void {
  range('DefaultMessageTimeToLive', d.defaultMessageTtlMs === null || d.defaultMessageTtlMs >= 1_000, 'at least PT1S');
  range(
    'DuplicateDetectionHistoryTimeWindow',
    d.duplicateDetectionWindowMs >= 20_000 && d.duplicateDetectionWindowMs <= 7 * 86_400_000,
    'PT20S to P7D',
  );
  range('MaxSizeInMegabytes', Number.isInteger(d.maxSizeBytes / 1048576) && d.maxSizeBytes >= 1048576, 'a positive integer');
  range('AutoDeleteOnIdle', d.autoDeleteOnIdleMs === null || d.autoDeleteOnIdleMs >= 300_000, 'at least PT5M');
}

function checkUserMetadata(m: string | null): void {
  if (m !== null && m.length > 1024) throw new BrokerError('ArgumentOutOfRange', 'UserMetadata is longer than 1024 characters.');
}

/** A topic's full description: the settings the broker acts on plus what it stores and reports. */
export interface TopicDescription extends SharedDescription {
  defaultMessageTtlMs: number | null;
  requiresDuplicateDetection: boolean;
  duplicateDetectionWindowMs: number;
  /** MaxSizeInMegabytes in bytes: the most the topic's subscriptions hold together (send.ts enforces it). */
  maxSizeBytes: number;
  supportOrdering: boolean;
}

/** What a topic create or update may set; rules given replace the topic's rules. */
export type TopicPatch = Partial<Omit<TopicDescription, 'authorizationRules'>> & { authorizationRules?: AuthorizationRuleInput[] };

/** The real service's description of a topic created with no options (Service Bus REST "Create Topic"). */
export function serviceTopicDefaults(): TopicDescription {
  const { defaultMessageTtlMs, requiresDuplicateDetection, duplicateDetectionWindowMs, maxSizeBytes } = DEFAULTS.settings;
  return { defaultMessageTtlMs, requiresDuplicateDetection, duplicateDetectionWindowMs, maxSizeBytes, ...DEFAULTS.entity, ...DEFAULTS.topic };
}

/** The description of a Config.json topic: its configured settings and rules, and the service defaults for the rest. */
export function configTopicDescription(tc: TopicConfig, authorizationRules: AuthorizationRule[]): TopicDescription {
  return {
    ...serviceTopicDefaults(),
    defaultMessageTtlMs: tc.defaultMessageTtlMs,
    requiresDuplicateDetection: tc.requiresDuplicateDetection,
    duplicateDetectionWindowMs: tc.duplicateDetectionWindowMs,
    maxSizeBytes: tc.maxSizeBytes,
    authorizationRules,
  };
}

/** A subscription's full description. */
export interface SubscriptionDescription {
  /** Lock, delivery count, TTL, dead-lettering, sessions and forwarding (duplicate detection is the topic's). */
  settings: EntitySettings;
  deadLetteringOnFilterEvaluationExceptions: boolean;
  enableBatchedOperations: boolean;
  status: EntityStatus;
  userMetadata: string | null;
  autoDeleteOnIdleMs: number | null;
}

/** What a subscription create or update may set. */
export type SubscriptionPatch = Partial<Omit<SubscriptionDescription, 'settings'>> & { settings?: Partial<EntitySettings> };

/** The real service's description of a subscription created with no options (Service Bus REST "Create Subscription"). */
export function serviceSubscriptionDefaults(): SubscriptionDescription {
  return { settings: { ...DEFAULTS.settings }, ...DEFAULTS.subscription, ...DEFAULTS.entity };
}

/** The description of a Config.json subscription: its configured settings, and the service defaults for the rest. */
export function configSubscriptionDescription(settings: EntitySettings): SubscriptionDescription {
  return { ...serviceSubscriptionDefaults(), settings: { ...settings } };
}

/** Applies a patch field by field (nested `settings` too); `undefined` fields keep the base value. */
export function applyPatch<T extends object>(base: T, patch: Partial<Record<keyof T, unknown>>): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (k === 'settings' && typeof v === 'object' && v !== null) {
      const merged = { ...(out[k] as object) } as Record<string, unknown>;
      for (const [sk, sv] of Object.entries(v)) if (sv !== undefined) merged[sk] = sv;
      out[k] = merged;
    } else out[k] = v;
  }
  return out as T;
}

/** Checks a topic description against Service Bus's ranges. */
export function checkTopicDescription(d: TopicDescription): void {
  checkSharedRanges(d);
  checkUserMetadata(d.userMetadata);
}

/** Checks a subscription description (its settings as a queue's, plus the subscription's own rules). */
export function checkSubscriptionDescription(d: SubscriptionDescription): void {
  checkQueueDescription({ ...serviceQueueDefaults(), settings: d.settings, autoDeleteOnIdleMs: d.autoDeleteOnIdleMs, userMetadata: d.userMetadata });
}

/** Longest subscription (and rule) name Service Bus accepts. */
export const MAX_SUBSCRIPTION_NAME = 50;

/** Checks a subscription name: 1 to 50 letters, digits, periods, hyphens and underscores. */
export function checkSubscriptionName(name: string): void {
  if (!/^[A-Za-z0-9._-]{1,50}$/.test(name)) {
    throw new BrokerError(
      'InvalidOperation',
      `The subscription name '${name.slice(0, 100)}' is not valid: 1 to ${MAX_SUBSCRIPTION_NAME} letters, digits, periods, hyphens or underscores.`,
    );
  }
}
