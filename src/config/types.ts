// The typed, validated configuration every other module consumes. Produced only by `config/load.ts`.

/** Rights a shared access policy can grant (Service Bus SAS rights). */
export type AccessRight = 'Manage' | 'Send' | 'Listen';

/** A shared access policy: SAS key name, key and rights. */
export interface SharedAccessPolicy {
  name: string;
  key: string;
  rights: AccessRight[];
}

/** Per-entity settings of a queue or subscription, in milliseconds where a duration. */
export interface EntitySettings {
  /** Peek-lock duration; Service Bus default PT1M, maximum PT5M. */
  lockDurationMs: number;
  /** Deliveries before dead-lettering with MaxDeliveryCountExceeded; default 10. */
  maxDeliveryCount: number;
  /** Default message TTL; null means "never expires" (Azure's TimeSpan.MaxValue default). */
  defaultMessageTtlMs: number | null;
  deadLetteringOnMessageExpiration: boolean;
  requiresDuplicateDetection: boolean;
  /** Duplicate detection history window; Azure default PT10M. */
  duplicateDetectionWindowMs: number;
  requiresSession: boolean;
  /** Auto-forward target entity name, or null. */
  forwardTo: string | null;
  /** Dead-letter auto-forward target entity name, or null. */
  forwardDeadLetteredMessagesTo: string | null;
  /** Entity size quota in bytes (MaxSizeInMegabytes; Azure default 1024 MB); sends past it get QuotaExceeded. */
  maxSizeBytes: number;
}

/** A queue from `UserConfig.Namespaces[0].Queues[]`. */
export interface QueueConfig {
  name: string;
  settings: EntitySettings;
}

/** A rule filter from the emulator schema: SQL or correlation. */
export type RuleFilterConfig =
  | { type: 'sql'; expression: string }
  | {
      type: 'correlation';
      contentType?: string;
      correlationId?: string;
      label?: string;
      messageId?: string;
      replyTo?: string;
      replyToSessionId?: string;
      sessionId?: string;
      to?: string;
      properties: Record<string, string | number | boolean>;
    };

/** A subscription rule; `action` is a SQL rule action expression. */
export interface RuleConfig {
  name: string;
  filter: RuleFilterConfig;
  action: string | null;
}

/** A subscription of a topic; no `Rules` means the `$Default` true rule. */
export interface SubscriptionConfig {
  name: string;
  settings: EntitySettings;
  rules: RuleConfig[];
}

/** A topic from `UserConfig.Namespaces[0].Topics[]`. */
export interface TopicConfig {
  name: string;
  defaultMessageTtlMs: number | null;
  requiresDuplicateDetection: boolean;
  duplicateDetectionWindowMs: number;
  subscriptions: SubscriptionConfig[];
}

/** peeklock's own settings from the optional top-level `Broker` object (CLI flags override). */
export interface BrokerSettings {
  host: string;
  port: number;
  dataDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Largest accepted message, bytes; advertised as max-message-size on attach. Default 262144 (256 KB). */
  maxMessageSizeBytes: number;
  policies: SharedAccessPolicy[];
}

/** The whole validated configuration. */
export interface PeeklockConfig {
  broker: BrokerSettings;
  namespace: string;
  queues: QueueConfig[];
  topics: TopicConfig[];
  /** `UserConfig.Logging.Type` as written (Console, File, ...); informational. */
  loggingType: string;
  /** Non-fatal notes found while loading (unknown keys, ignored values), one line each. */
  warnings: string[];
}
