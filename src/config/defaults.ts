// The defaults a config file may leave out, as Azure Service Bus and its emulator set them. Kept apart from the
// loader so that the layers that only need a default (the AMQP listener, the alerter) never import the loader.

import type { BrokerSettings, DeadLetterAlerts } from './types.js';

/** Default peek-lock duration (Azure: PT1M). */
export const DEFAULT_LOCK_DURATION_MS = 60_000;
/** Default entity size quota in megabytes (Azure: 1024). */
export const DEFAULT_MAX_SIZE_MB = 1024;
/** Default max delivery count (Azure: 10). */
export const DEFAULT_MAX_DELIVERY_COUNT = 10;
/** Default duplicate detection history window (Azure: PT10M). */
export const DEFAULT_DUPLICATE_DETECTION_WINDOW_MS = 600_000;

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
