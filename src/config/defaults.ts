// The defaults a config file may leave out, as Azure Service Bus sets them, and the service's defaults of an entity
// created with no options. Kept apart from the loader so that the layers that only need a default (the AMQP listener,
// the alerter, the broker's catalogue) never import the loader.

import type { BrokerSettings, DeadLetterAlerts } from './types.js';

const MB = 1024 * 1024;

// Frozen all the way down, so no caller can change a default for every entity created after it.
function deepFreeze<T extends object>(o: T): T {
  for (const v of Object.values(o)) if (typeof v === 'object' && v !== null) deepFreeze(v as object);
  return Object.freeze(o);
}

/**
 * Azure Service Bus's defaults for an entity created with no options, the one place they are written: what the
 * service reports for an empty create (REST "Create Queue" / "Create Topic" / "Create Subscription", the
 * QueueDescription, TopicDescription and SubscriptionDescription ATOM schemas). The management plane's creates
 * (catalog/entity-model.ts) and Config.json's entities (the loader, for what the file leaves out) both take them
 * from here. Config.json follows Azure's defaults rather than the emulator schema's, so an entity declared with no
 * properties behaves as one created on Azure with no options (docs/configuration.md).
 */
export const SERVICE_BUS_DEFAULTS = deepFreeze({
  /** What a queue or subscription acts on; a topic takes its TTL, duplicate detection and size from here too. */
  settings: {
    lockDurationMs: 60_000, // LockDuration PT1M
    maxDeliveryCount: 10,
    defaultMessageTtlMs: null, // TimeSpan.MaxValue: never expires
    deadLetteringOnMessageExpiration: false,
    requiresDuplicateDetection: false,
    duplicateDetectionWindowMs: 600_000, // DuplicateDetectionHistoryTimeWindow PT10M
    requiresSession: false,
    forwardTo: null,
    forwardDeadLetteredMessagesTo: null,
    maxSizeBytes: 1024 * MB, // MaxSizeInMegabytes 1024
  },
  /** What every kind stores and reports besides; AutoDeleteOnIdle null is TimeSpan.MaxValue (never). */
  entity: { enableBatchedOperations: true, status: 'Active', userMetadata: null, autoDeleteOnIdleMs: null },
  // MaxMessageSizeInKilobytes: the 2021-05 service reports 256 for a Standard namespace; peeklock's own limit is
  // Broker.MaxMessageSizeBytes.
  /** A queue's own properties. */
  queue: { enablePartitioning: false, enableExpress: false, maxMessageSizeInKilobytes: 256 },
  /** A topic's own properties. */
  topic: { enablePartitioning: false, enableExpress: false, supportOrdering: true, maxMessageSizeInKilobytes: 256 },
  /** A subscription's own properties. */
  subscription: { deadLetteringOnFilterEvaluationExceptions: true },
} as const);

/** Broker settings used when the config file has no `Broker` object (or leaves fields out). */
export const DEFAULT_BROKER: Readonly<BrokerSettings> = Object.freeze<BrokerSettings>({
  host: '127.0.0.1',
  port: 5672,
  dataDir: './data',
  logLevel: 'info',
  maxMessageSizeBytes: 262_144,
  limits: Object.freeze({
    maxConnections: 5_000,
    maxLinksPerConnection: 1_000,
    maxFrameSizeBytes: 262_144,
    maxBufferedTransferBytes: 33_554_432,
    maxPendingSendBytes: 67_108_864,
    authTimeoutMs: 20_000,
  }),
  policies: [{ name: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE', rights: ['Manage', 'Send', 'Listen'] }],
});

/** Dead-letter alerting when `Broker.DeadLetterAlerts` is absent: any dead letter in any queue alerts. */
export const DEFAULT_DEAD_LETTER_ALERTS: Readonly<DeadLetterAlerts> = Object.freeze({ default: 1, entities: {} });
