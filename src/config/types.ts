// The typed, validated configuration every other module consumes. Produced only by `config/load.ts`.

/** Rights a shared access policy can grant (Service Bus SAS rights). */
export type AccessRight = 'Manage' | 'Send' | 'Listen';

/** A shared access policy: SAS key name, key and rights. */
export interface SharedAccessPolicy {
  name: string;
  key: string;
  rights: AccessRight[];
}

/**
 * An entity-level SAS rule as Config.json declares it (`Properties.AuthorizationRules[]`: KeyName, PrimaryKey,
 * SecondaryKey, Rights, the names of the management plane's `<AuthorizationRule>`); null keys are generated.
 */
export interface AuthorizationRuleConfig {
  keyName: string;
  primaryKey: string | null;
  secondaryKey: string | null;
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

/** A queue from a namespace's `Queues[]` (`UserConfig.Namespaces[i].Queues[]`). */
export interface QueueConfig {
  name: string;
  settings: EntitySettings;
  /** The queue's own SAS rules (`Properties.AuthorizationRules`); empty when it declares none. */
  authorizationRules?: AuthorizationRuleConfig[];
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

/** A topic from a namespace's `Topics[]` (`UserConfig.Namespaces[i].Topics[]`). */
export interface TopicConfig {
  name: string;
  defaultMessageTtlMs: number | null;
  requiresDuplicateDetection: boolean;
  duplicateDetectionWindowMs: number;
  /** MaxSizeInMegabytes in bytes (the topic's size is what its subscriptions hold). */
  maxSizeBytes: number;
  subscriptions: SubscriptionConfig[];
  /** The topic's own SAS rules (`Properties.AuthorizationRules`), covering its subscriptions too. */
  authorizationRules?: AuthorizationRuleConfig[];
}

/** peeklock's own settings from the optional top-level `Broker` object (CLI flags override). */
export interface BrokerSettings {
  host: string;
  port: number;
  dataDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Largest accepted message, bytes; advertised as max-message-size on attach. Default 262144 (256 KB). */
  maxMessageSizeBytes: number;
  /** Per-connection protection enforced in front of rhea (frame guard). */
  limits: ConnectionLimits;
  policies: SharedAccessPolicy[];
  /** HTTP port (health, metrics, admin API, explorer); unset = 5300 + (port − 5672), or 0 (see effectiveHttpPort). */
  httpPort?: number;
  /** amqps port; unset = 5671 + (port − 5672), or off when the AMQP port is 0; -1 = off (see effectiveTlsPort). */
  tlsPort?: number;
  /**
   * `Broker.Clock`: "system" (default) or "manual", a clock that moves only when a test advances it (embedded API,
   * POST /api/clock/advance). For test suites only; never on unless asked for.
   */
  clock?: 'system' | 'manual';
  /** `Broker.Faults`: true turns on fault injection (embedded API, /api/faults) for test suites; default off. */
  faults?: boolean;
  /**
   * `Broker.AutoNamespaces`: an unknown SharedAccessKeyName names a fresh namespace, created on first use (test
   * suites). Also on with the manual clock. Default off.
   */
  autoNamespaces?: boolean;
  /**
   * A dedicated TLS-only port for HTTPS and wss (and amqps), e.g. 443 for the Java admin client; unset or -1 = none.
   */
  httpsPort?: number;
  /**
   * `Broker.LogMaxBytes`: the write-ahead log's bound (a checkpoint is forced past it), segments a quarter of it;
   * unset = 256 MiB in 64 MiB segments. Lower for a small disk, or to make checkpoints frequent (the power-cut tests).
   */
  logMaxBytes?: number;
  /** Certificates for the TLS listeners (`Broker.Tls`); unset = the local CA in `<dataDir>/tls`. */
  tls?: TlsSettings;
  /** Dead-letter depth thresholds; unset = DEFAULT_DEAD_LETTER_ALERTS (every queue alerts from 1). */
  deadLetterAlerts?: DeadLetterAlerts;
  /** Lets one transaction work on several top-level entities (Service Bus's EnableCrossEntityTransactions). Default false. */
  enableCrossEntityTransactions?: boolean;
  /**
   * `Broker.AllowedOrigins`: browser origins (`http://localhost:3000`) allowed to upgrade to AMQP over WebSockets
   * and to send state-changing HTTP requests; the broker's own pages are always allowed. Unset = none.
   */
  allowedOrigins?: string[];
  /**
   * `Broker.AllowedHosts`: `Host` names the HTTP port serves besides loopback names, IP literals, single labels,
   * `Broker.Host` and `Broker.Tls.HostNames` (each with its namespace subdomains). Unset = none.
   */
  allowedHosts?: string[];
  /** `Broker.HttpRequestTimeout`: an HTTP request (headers and body) must arrive within this; unset = 30 s. */
  httpRequestTimeoutMs?: number;
}

/** Where the TLS listeners get their certificate (`Broker.Tls`). */
export interface TlsSettings {
  /** A PEM certificate (chain) to serve instead of the local CA's; set together with `keyFile`. */
  certFile?: string;
  /** The PEM private key of `certFile`. */
  keyFile?: string;
  /** Directory of the local CA; unset = `<dataDir>/tls`. */
  caDir?: string;
  /** Extra names (DNS names or addresses) for the local CA's server certificate, besides localhost and the loopback addresses. */
  hostNames: string[];
}

/** Per-queue dead-letter depth thresholds (`Broker.DeadLetterAlerts`); 0 turns alerting off. */
export interface DeadLetterAlerts {
  /** Threshold for queues not listed in `entities`. */
  default: number;
  /** Threshold by queue name (as declared in `Queues[]`). */
  entities: Record<string, number>;
}

/**
 * Limits that keep hostile or broken clients from hurting the broker (docs/durability.md, "The promises": hostile input
 * contained, memory bounded).
 */
export interface ConnectionLimits {
  /** Open connections; one more is opened and closed with amqp:resource-limit-exceeded. Default 5000 (Service Bus). */
  maxConnections: number;
  /** Links on one connection; one more is refused with amqp:resource-limit-exceeded. Default 1000. */
  maxLinksPerConnection: number;
  /** Largest frame accepted and advertised as max-frame-size. Default 262144 (Service Bus Standard). */
  maxFrameSizeBytes: number;
  /** Bytes of unfinished multi-frame transfers one connection may have buffered. Default 33554432. */
  maxBufferedTransferBytes: number;
  /**
   * Bytes of received messages one connection may have waiting to be stored (or otherwise settled); past it a
   * transfer is rejected with com.microsoft:server-busy (the SDK retries). One message alone always fits. Default 67108864.
   */
  maxPendingSendBytes: number;
  /** A connection without a SASL PLAIN login or valid put-token is closed after this long. Default 20 s. */
  authTimeoutMs: number;
}

/** One namespace of `UserConfig.Namespaces[]`: its entities, and its own keys if it declares any. */
export interface NamespaceConfig {
  name: string;
  queues: QueueConfig[];
  topics: TopicConfig[];
  /** The namespace's `SharedAccessPolicies`; null = `Broker.SharedAccessPolicies`. */
  policies: SharedAccessPolicy[] | null;
}

/** The whole validated configuration. */
export interface PeeklockConfig {
  broker: BrokerSettings;
  /** The first (default) namespace's name, queues and topics. */
  namespace: string;
  queues: QueueConfig[];
  topics: TopicConfig[];
  /** Every namespace of the file, the first being the one above; absent = that one alone. */
  namespaces?: NamespaceConfig[];
  /** `UserConfig.Logging.Type` as written (Console, File, ...); informational. */
  loggingType: string;
  /** Non-fatal notes found while loading (unknown keys, ignored values), one line each. */
  warnings: string[];
}
