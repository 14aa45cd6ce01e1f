// JSON Schema (draft-07) for peeklock's config file: the Azure Service Bus emulator's Config.json
// (`UserConfig`) plus peeklock's own optional `Broker` object. Ranges follow Azure (cloud) where the
// emulator is stricter. Every node's `description` completes the sentence "must be ..." so that
// `load.ts` can turn any schema violation into a one-line message. `additionalProperties: false`
// violations are reported as warnings (unknown keys are ignored), never as errors.

import { Ajv, type SchemaObject, type ValidateFunction } from 'ajv';
import { DURATION_PATTERN, formatDuration, parseDuration } from './duration.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Accepted ranges (inclusive); durations in milliseconds. */
export const LIMITS = {
  lockDurationMs: { min: 5_000, max: 5 * 60_000 },
  maxDeliveryCount: { min: 1, max: 2_147_483_647 },
  defaultMessageTtlMs: { min: 1_000, max: 10_675_199 * DAY_MS },
  duplicateDetectionWindowMs: { min: 5_000, max: 7 * DAY_MS },
  port: { min: 0, max: 65_535 },
  tlsPort: { min: -1, max: 65_535 },
  maxMessageSizeBytes: { min: 1_024, max: 104_857_600 },
  maxSizeInMegabytes: { min: 1, max: 81_920 },
  maxConnections: { min: 1, max: 1_000_000 },
  maxLinksPerConnection: { min: 1, max: 65_535 },
  maxFrameSizeBytes: { min: 4_096, max: 16_777_216 },
  maxBufferedTransferBytes: { min: 65_536, max: 2_147_483_647 },
  maxPendingSendBytes: { min: 65_536, max: 2_147_483_647 },
  logMaxBytes: { min: 1_048_576, max: 268_435_456 },
  authTimeoutMs: { min: 1_000, max: 5 * 60_000 },
  httpRequestTimeoutMs: { min: 1_000, max: 10 * 60_000 },
  deadLetterThreshold: { min: 0, max: 2_147_483_647 },
  rulesPerSubscription: { max: 1_000 },
  authorizationRulesPerEntity: { max: 12 },
} as const;

/** Regular-expression source for queue, topic, subscription and rule names (the emulator's pattern). */
export const ENTITY_NAME_PATTERN = '^[A-Za-z0-9]$|^[A-Za-z0-9][\\w./-]*[A-Za-z0-9]$';

const NAME_RULE = 'letters, digits, ".", "-", "_" or "/", starting and ending with a letter or digit';

/** Quotes and lists enum values for a description. */
function oneOf(values: readonly string[]): string {
  return `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
}

function duration(range: { min: number; max: number }): SchemaObject {
  return {
    type: 'string',
    description: `a duration from ${formatDuration(range.min)} to ${formatDuration(range.max)}`,
    pattern: DURATION_PATTERN,
    durationRange: [range.min, range.max],
  };
}

function integer(range: { min: number; max: number }): SchemaObject {
  return {
    type: 'integer',
    description: `an integer from ${range.min} to ${range.max}`,
    minimum: range.min,
    maximum: range.max,
  };
}

function stringEnum(values: readonly string[]): SchemaObject {
  return { type: 'string', description: oneOf(values), enum: [...values] };
}

const bool: SchemaObject = { type: 'boolean', description: 'true or false' };
const str: SchemaObject = { type: 'string', description: 'a string' };
const nonEmpty: SchemaObject = { type: 'string', description: 'a non-empty string', minLength: 1 };
const entityName: SchemaObject = {
  type: 'string',
  description: `a name of ${NAME_RULE}`,
  pattern: ENTITY_NAME_PATTERN,
};
/** A namespace name: matched against a host's first DNS label, and a directory name under the data directory. */
export const NAMESPACE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,49}$';
const namespaceName: SchemaObject = {
  type: 'string',
  description: 'a namespace name of 1 to 50 letters, digits, "-" or "_", starting with a letter or digit',
  pattern: NAMESPACE_NAME_PATTERN,
};
/** A browser origin: http or https, a host (name, IPv4 or [IPv6]) and an optional port; no path. */
export const ORIGIN_PATTERN = '^https?://([A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$';
const origin: SchemaObject = {
  type: 'string',
  description: 'an origin such as "http://localhost:3000": http or https, a host and an optional port, no path',
  pattern: ORIGIN_PATTERN,
};
const hostName: SchemaObject = {
  type: 'string',
  description: 'a host name such as "broker.example" (letters, digits, "-" and ".")',
  pattern: '^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*$',
};
const forwardTarget: SchemaObject = {
  type: 'string',
  description: `"" or an entity name of ${NAME_RULE}`,
  pattern: `^$|${ENTITY_NAME_PATTERN}`,
};

function object(description: string, properties: Record<string, SchemaObject>, required: string[] = []): SchemaObject {
  return { type: 'object', description, properties, required, additionalProperties: false };
}

function array(description: string, items: SchemaObject, minItems = 0, maxItems?: number): SchemaObject {
  const schema: SchemaObject = { type: 'array', description, items, minItems };
  if (maxItems !== undefined) schema.maxItems = maxItems;
  return schema;
}

const rights = array(
  `a non-empty array of rights, each ${oneOf(['Manage', 'Send', 'Listen'])}`,
  stringEnum(['Manage', 'Send', 'Listen']),
  1,
);

// An entity's own SAS rules, named as the management plane's <AuthorizationRule> names its fields (KeyName,
// PrimaryKey, SecondaryKey, Rights); keys left out are generated once and kept with the entity.
const authorizationRules = array(
  `an array of at most ${LIMITS.authorizationRulesPerEntity.max} authorization rules`,
  object(
    'an authorization rule object with KeyName and Rights',
    {
      KeyName: { type: 'string', description: 'a key name of 1 to 256 letters, digits, ".", "-" or "_"', pattern: '^[A-Za-z0-9._-]{1,256}$' },
      PrimaryKey: { type: 'string', description: 'a key of 1 to 256 characters', minLength: 1, maxLength: 256 },
      SecondaryKey: { type: 'string', description: 'a key of 1 to 256 characters', minLength: 1, maxLength: 256 },
      Rights: rights,
    },
    ['KeyName', 'Rights'],
  ),
  0,
  LIMITS.authorizationRulesPerEntity.max,
);

const queueProperties = object('an object of queue properties', {
  AuthorizationRules: authorizationRules,
  DeadLetteringOnMessageExpiration: bool,
  DefaultMessageTimeToLive: duration(LIMITS.defaultMessageTtlMs),
  DuplicateDetectionHistoryTimeWindow: duration(LIMITS.duplicateDetectionWindowMs),
  ForwardDeadLetteredMessagesTo: forwardTarget,
  ForwardTo: forwardTarget,
  LockDuration: duration(LIMITS.lockDurationMs),
  MaxDeliveryCount: integer(LIMITS.maxDeliveryCount),
  // Not in the emulator's schema; the cloud's entity size quota (CreateQueueOptions.maxSizeInMegabytes).
  MaxSizeInMegabytes: integer(LIMITS.maxSizeInMegabytes),
  RequiresDuplicateDetection: bool,
  RequiresSession: bool,
});

const topicProperties = object('an object of topic properties', {
  AuthorizationRules: authorizationRules,
  DefaultMessageTimeToLive: duration(LIMITS.defaultMessageTtlMs),
  DuplicateDetectionHistoryTimeWindow: duration(LIMITS.duplicateDetectionWindowMs),
  RequiresDuplicateDetection: bool,
});

const subscriptionProperties = object('an object of subscription properties', {
  DeadLetteringOnMessageExpiration: bool,
  DefaultMessageTimeToLive: duration(LIMITS.defaultMessageTtlMs),
  // Not a subscription setting in Service Bus, but emulator configs carry it; accepted and ignored.
  DuplicateDetectionHistoryTimeWindow: duration(LIMITS.duplicateDetectionWindowMs),
  ForwardDeadLetteredMessagesTo: forwardTarget,
  ForwardTo: forwardTarget,
  LockDuration: duration(LIMITS.lockDurationMs),
  MaxDeliveryCount: integer(LIMITS.maxDeliveryCount),
  MaxSizeInMegabytes: integer(LIMITS.maxSizeInMegabytes),
  RequiresSession: bool,
});

const correlationFilter = object('an object of correlation filter fields', {
  ContentType: str,
  CorrelationId: str,
  Label: str,
  MessageId: str,
  ReplyTo: str,
  ReplyToSessionId: str,
  SessionId: str,
  To: str,
  Properties: {
    type: 'object',
    description: 'an object mapping application property names to strings, numbers or booleans',
    additionalProperties: {
      type: ['string', 'number', 'boolean'],
      description: 'a string, number or boolean',
    },
  },
});

const sqlExpression = object('an object with a SqlExpression string', { SqlExpression: str });

const rule = object(
  'a rule object with Name and Properties',
  {
    Name: entityName,
    Properties: object(
      'an object of rule properties',
      {
        FilterType: stringEnum(['Correlation', 'Sql']),
        CorrelationFilter: correlationFilter,
        SqlFilter: sqlExpression,
        Action: sqlExpression,
      },
      ['FilterType'],
    ),
  },
  ['Name', 'Properties'],
);

const subscription = object(
  'a subscription object with a Name',
  {
    Name: entityName,
    Properties: subscriptionProperties,
    Rules: array(
      `an array of at most ${LIMITS.rulesPerSubscription.max} rules`,
      rule,
      0,
      LIMITS.rulesPerSubscription.max,
    ),
  },
  ['Name'],
);

const topic = object(
  'a topic object with Name and Subscriptions',
  {
    Name: entityName,
    Properties: topicProperties,
    Subscriptions: array('an array of at least 1 subscription', subscription, 1),
  },
  ['Name', 'Subscriptions'],
);

const queue = object('a queue object with a Name', { Name: entityName, Properties: queueProperties }, ['Name']);

const policy = object(
  'a policy object with Name, Key and Rights',
  {
    Name: nonEmpty,
    Key: nonEmpty,
    Rights: rights,
  },
  ['Name', 'Key', 'Rights'],
);

// A namespace's Name is matched against the first label of the host a client connects to (ns1.localhost), so
// it is a DNS-label-like name. `SharedAccessPolicies` is peeklock's own: a namespace's keys when they must differ
// from `Broker.SharedAccessPolicies` (so one namespace's key does not open another's).
const namespace = object(
  'a namespace object with a Name',
  {
    Name: namespaceName,
    Queues: array('an array of queues', queue),
    Topics: array('an array of topics', topic),
    SharedAccessPolicies: array('an array of shared access policies', policy, 1),
  },
  ['Name'],
);

const broker = object('an object of peeklock broker settings', {
  Host: nonEmpty,
  Port: integer(LIMITS.port),
  DataDir: nonEmpty,
  LogLevel: stringEnum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  MaxMessageSizeBytes: integer(LIMITS.maxMessageSizeBytes),
  MaxConnections: integer(LIMITS.maxConnections),
  MaxLinksPerConnection: integer(LIMITS.maxLinksPerConnection),
  MaxFrameSizeBytes: integer(LIMITS.maxFrameSizeBytes),
  MaxBufferedTransferBytes: integer(LIMITS.maxBufferedTransferBytes),
  MaxPendingSendBytes: integer(LIMITS.maxPendingSendBytes),
  LogMaxBytes: integer(LIMITS.logMaxBytes),
  AuthTimeout: duration(LIMITS.authTimeoutMs),
  HttpRequestTimeout: duration(LIMITS.httpRequestTimeoutMs),
  AllowedOrigins: array('an array of origins', origin),
  AllowedHosts: array('an array of host names', hostName),
  SharedAccessPolicies: array('an array of shared access policies', policy),
  HttpPort: integer(LIMITS.port),
  TlsPort: integer(LIMITS.tlsPort),
  EnableCrossEntityTransactions: bool,
  Clock: stringEnum(['system', 'manual']),
  Faults: bool,
  AutoNamespaces: bool,
  HttpsPort: integer(LIMITS.tlsPort),
  Tls: object('an object of TLS settings (CertFile, KeyFile, CaDir, HostNames)', {
    CertFile: nonEmpty,
    KeyFile: nonEmpty,
    CaDir: nonEmpty,
    HostNames: array('an array of host names or addresses', nonEmpty),
  }),
  DeadLetterAlerts: object('an object with Default and Entities dead-letter thresholds', {
    Default: integer(LIMITS.deadLetterThreshold),
    Entities: {
      type: 'object',
      description: 'an object mapping queue names to thresholds',
      additionalProperties: integer(LIMITS.deadLetterThreshold),
    },
  }),
});

/** The config file's JSON Schema (draft-07 plus the custom `durationRange: [minMs, maxMs]` keyword). */
export const configSchema: SchemaObject = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  ...object(
    'a JSON object with a UserConfig object',
    {
      $schema: str,
      UserConfig: object(
        'an object with Namespaces and Logging',
        {
          Namespaces: array('an array of 1 to 100 namespaces', namespace, 1, 100),
          Logging: object(
            'an object with a logging Type',
            { Type: stringEnum(['File', 'Console', 'File,Console', 'Console,File']) },
            ['Type'],
          ),
        },
        ['Namespaces'],
      ),
      Broker: broker,
    },
    ['UserConfig'],
  ),
};

let compiled: ValidateFunction | undefined;

/** Returns the (cached) ajv validator for {@link configSchema}; run with allErrors and verbose errors. */
export function configValidator(): ValidateFunction {
  if (compiled !== undefined) return compiled;
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true });
  ajv.addKeyword({
    keyword: 'durationRange',
    type: 'string',
    schemaType: 'array',
    validate: (range: [number, number], data: string): boolean => {
      const ms = parseDuration(data);
      return ms !== null && ms >= range[0] && ms <= range[1];
    },
  });
  compiled = ajv.compile(configSchema);
  return compiled;
}
