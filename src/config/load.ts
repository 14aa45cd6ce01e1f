// Loads and validates the config file (the Service Bus emulator's Config.json dialect, JSONC allowed)
// into a typed `PeeklockConfig`. Every problem is reported at once (a user fixing a file should not meet its
// errors one run at a time), each as one line naming the JSON path, the value and what is allowed. Unknown keys
// are warnings with a "did you mean" from the names allowed at that place, or errors with `strict`.

import { readFileSync } from 'node:fs';
import jsonc from 'jsonc-parser';
import type { ParseError } from 'jsonc-parser';
import { parseDuration } from './duration.js';
import { describeParseError, explainSchemaErrors, fail, formatPath, type Located, type UnknownKey } from './explain.js';
import { ConfigError, Problems, type LoadOptions } from './errors.js';
import { configValidator } from './schema.js';
import type {
  AccessRight,
  AuthorizationRuleConfig,
  BrokerSettings,
  DeadLetterAlerts,
  EntitySettings,
  NamespaceConfig,
  PeeklockConfig,
  QueueConfig,
  RuleConfig,
  RuleFilterConfig,
  SharedAccessPolicy,
  SubscriptionConfig,
  TlsSettings,
  TopicConfig,
} from './types.js';

export { ConfigError, suggestKey, type LoadOptions } from './errors.js';

export * from './defaults.js';
import { DEFAULT_BROKER, DEFAULT_DEAD_LETTER_ALERTS, SERVICE_BUS_DEFAULTS } from './defaults.js';

export * from './ports.js';

// ---- raw (schema-validated) shapes --------------------------------------------------------------

interface RawEntityProps {
  DeadLetteringOnMessageExpiration?: boolean;
  DefaultMessageTimeToLive?: string;
  DuplicateDetectionHistoryTimeWindow?: string;
  ForwardDeadLetteredMessagesTo?: string;
  ForwardTo?: string;
  LockDuration?: string;
  MaxDeliveryCount?: number;
  MaxSizeInMegabytes?: number;
  RequiresDuplicateDetection?: boolean;
  RequiresSession?: boolean;
  AuthorizationRules?: RawAuthorizationRule[];
}
interface RawAuthorizationRule {
  KeyName: string;
  PrimaryKey?: string;
  SecondaryKey?: string;
  Rights: AccessRight[];
}
type RawCorrelation = Partial<Record<(typeof CORRELATION_FIELDS)[number][1], string>> & {
  Properties?: Record<string, string | number | boolean>;
};
interface RawRule {
  Name: string;
  Properties: {
    FilterType: 'Correlation' | 'Sql';
    CorrelationFilter?: RawCorrelation;
    SqlFilter?: { SqlExpression?: string };
    Action?: { SqlExpression?: string };
  };
}
interface RawSubscription {
  Name: string;
  Properties?: RawEntityProps;
  Rules?: RawRule[];
}
interface RawTopic {
  Name: string;
  Properties?: RawEntityProps;
  Subscriptions: RawSubscription[];
}
interface RawQueue {
  Name: string;
  Properties?: RawEntityProps;
}
interface RawBroker {
  Host?: string;
  Port?: number;
  DataDir?: string;
  LogLevel?: BrokerSettings['logLevel'];
  MaxMessageSizeBytes?: number;
  MaxConnections?: number;
  MaxLinksPerConnection?: number;
  MaxFrameSizeBytes?: number;
  MaxBufferedTransferBytes?: number;
  MaxPendingSendBytes?: number;
  LogMaxBytes?: number;
  AuthTimeout?: string;
  HttpRequestTimeout?: string;
  AllowedOrigins?: string[];
  AllowedHosts?: string[];
  SharedAccessPolicies?: RawPolicy[];
  HttpPort?: number;
  TlsPort?: number;
  EnableCrossEntityTransactions?: boolean;
  Clock?: 'system' | 'manual';
  Faults?: boolean;
  AutoNamespaces?: boolean;
  HttpsPort?: number;
  Tls?: { CertFile?: string; KeyFile?: string; CaDir?: string; HostNames?: string[] };
  DeadLetterAlerts?: { Default?: number; Entities?: Record<string, number> };
}
type RawPolicy = { Name: string; Key: string; Rights: AccessRight[] };
interface RawNamespace {
  Name: string;
  Queues?: RawQueue[];
  Topics?: RawTopic[];
  SharedAccessPolicies?: RawPolicy[];
}
interface RawConfig {
  UserConfig: {
    Namespaces: RawNamespace[];
    Logging?: { Type: string };
  };
  Broker?: RawBroker;
}

const CORRELATION_FIELDS = [
  ['contentType', 'ContentType'],
  ['correlationId', 'CorrelationId'],
  ['label', 'Label'],
  ['messageId', 'MessageId'],
  ['replyTo', 'ReplyTo'],
  ['replyToSessionId', 'ReplyToSessionId'],
  ['sessionId', 'SessionId'],
  ['to', 'To'],
] as const;

// ---- semantic stage -----------------------------------------------------------------------------

function durationOr<T>(text: string | undefined, fallback: T): number | T {
  if (text === undefined) return fallback;
  return parseDuration(text) ?? fallback; // already range-checked by the schema
}

// What the file leaves out is Service Bus's default (the one table, defaults.ts). The keys keep this order: a
// Config.json entity's fingerprint (entities.ts, configHash) is taken over this object as JSON.
function entitySettings(p: RawEntityProps | undefined): EntitySettings {
  const d = SERVICE_BUS_DEFAULTS.settings;
  return {
    lockDurationMs: durationOr(p?.LockDuration, d.lockDurationMs),
    maxDeliveryCount: p?.MaxDeliveryCount ?? d.maxDeliveryCount,
    defaultMessageTtlMs: durationOr(p?.DefaultMessageTimeToLive, d.defaultMessageTtlMs),
    deadLetteringOnMessageExpiration: p?.DeadLetteringOnMessageExpiration ?? d.deadLetteringOnMessageExpiration,
    requiresDuplicateDetection: p?.RequiresDuplicateDetection ?? d.requiresDuplicateDetection,
    duplicateDetectionWindowMs: durationOr(p?.DuplicateDetectionHistoryTimeWindow, d.duplicateDetectionWindowMs),
    requiresSession: p?.RequiresSession ?? d.requiresSession,
    forwardTo: p?.ForwardTo ? p.ForwardTo : d.forwardTo,
    forwardDeadLetteredMessagesTo: p?.ForwardDeadLetteredMessagesTo ? p.ForwardDeadLetteredMessagesTo : d.forwardDeadLetteredMessagesTo,
    maxSizeBytes: p?.MaxSizeInMegabytes === undefined ? d.maxSizeBytes : p.MaxSizeInMegabytes * 1024 * 1024,
  };
}

/** An entity's `Properties.AuthorizationRules` (shape checked by the schema); key names unique per entity. */
function authorizationRules(raw: RawAuthorizationRule[] | undefined, path: string, problems: Problems): AuthorizationRuleConfig[] {
  const names = new NameSet('rule key');
  return (raw ?? []).map((r, i) => {
    problems.attempt(() => names.add(r.KeyName, `AuthorizationRules[${i}]`, `${path}[${i}].KeyName`));
    return { keyName: r.KeyName, primaryKey: r.PrimaryKey ?? null, secondaryKey: r.SecondaryKey ?? null, rights: [...new Set(r.Rights)] };
  });
}

/** Tracks names case-insensitively and fails on the second occurrence. */
class NameSet {
  private readonly seen = new Map<string, string>();
  constructor(private readonly kind: string) {}
  add(name: string, label: string, path: string): void {
    const first = this.seen.get(name.toLowerCase());
    if (first !== undefined) fail(path, name, `duplicate ${this.kind} name (also ${first})`);
    this.seen.set(name.toLowerCase(), label);
  }
}

function buildRule(r: RawRule, path: string, warnings: string[]): RuleConfig {
  const p = r.Properties;
  const propsPath = `${path}.Properties`;
  const actionText = p.Action?.SqlExpression;
  const action = actionText !== undefined && actionText.trim() !== '' ? actionText : null;
  if (p.FilterType === 'Sql') {
    if (p.CorrelationFilter !== undefined) warnings.push(`${propsPath}.CorrelationFilter: ignored (FilterType is "Sql")`);
    const expression = p.SqlFilter?.SqlExpression;
    if (expression === undefined) throw new ConfigError(`${propsPath}.SqlFilter.SqlExpression: required when FilterType is "Sql"`);
    if (expression.trim() === '') fail(`${propsPath}.SqlFilter.SqlExpression`, expression, 'must be a non-empty SQL expression');
    return { name: r.Name, filter: { type: 'sql', expression }, action };
  }
  if (p.SqlFilter !== undefined) warnings.push(`${propsPath}.SqlFilter: ignored (FilterType is "Correlation")`);
  const cf = p.CorrelationFilter;
  if (cf === undefined) throw new ConfigError(`${propsPath}.CorrelationFilter: required when FilterType is "Correlation"`);
  const filter: RuleFilterConfig = { type: 'correlation', properties: Object.fromEntries(Object.entries(cf.Properties ?? {})) };
  let fields = Object.keys(filter.properties).length;
  for (const [key, jsonKey] of CORRELATION_FIELDS) {
    const v = cf[jsonKey];
    if (v !== undefined) {
      filter[key] = v;
      fields++;
    }
  }
  if (fields === 0) {
    const names = [...CORRELATION_FIELDS.map(([, k]) => k), 'Properties'].join(', ');
    fail(`${propsPath}.CorrelationFilter`, cf, `must set at least one of ${names}`);
  }
  return { name: r.Name, filter, action };
}

/** Resolves `DeadLetterAlerts.Entities` keys to declared queue names; an unknown name is an error. */
function buildAlerts(raw: NonNullable<RawBroker['DeadLetterAlerts']>, queues: Map<string, string>, p: Problems): DeadLetterAlerts {
  const entities: Record<string, number> = {};
  for (const [name, threshold] of Object.entries(raw.Entities ?? {})) {
    const found = queues.get(name.toLowerCase());
    if (found === undefined) {
      p.attempt(() =>
        fail(formatPath(['Broker', 'DeadLetterAlerts', 'Entities', name]), threshold, 'must be keyed by a queue declared in Queues[]'),
      );
      continue;
    }
    entities[found] = threshold;
  }
  return { default: raw.Default ?? DEFAULT_DEAD_LETTER_ALERTS.default, entities };
}

/** `Broker.Tls`: a user certificate needs both files; the files themselves are read at start. */
function buildTls(t: NonNullable<RawBroker['Tls']>, problems: Problems): TlsSettings {
  const out: TlsSettings = { hostNames: [...(t.HostNames ?? [])] };
  if (t.CertFile !== undefined) out.certFile = t.CertFile;
  if (t.KeyFile !== undefined) out.keyFile = t.KeyFile;
  if (t.CaDir !== undefined) out.caDir = t.CaDir;
  if ((out.certFile === undefined) !== (out.keyFile === undefined)) {
    const [set, missing] = out.certFile !== undefined ? ['CertFile', 'KeyFile'] : ['KeyFile', 'CertFile'];
    problems.attempt(() => {
      throw new ConfigError(`Broker.Tls.${missing}: required when Broker.Tls.${set} is set (a certificate and its private key, PEM)`);
    });
  }
  return out;
}

/** Shared access policies at `path`, names unique. */
function buildPolicies(raw: RawPolicy[], path: string, problems: Problems): SharedAccessPolicy[] {
  const names = new NameSet('policy');
  return raw.map((p, i) => {
    problems.attempt(() => names.add(p.Name, `SharedAccessPolicies[${i}]`, `${path}[${i}].Name`));
    return { name: p.Name, key: p.Key, rights: [...new Set(p.Rights)] };
  });
}

function buildBroker(b: RawBroker | undefined, queues: Map<string, string>, problems: Problems): BrokerSettings {
  const policies = buildPolicies(b?.SharedAccessPolicies ?? [], 'Broker.SharedAccessPolicies', problems);
  const settings: BrokerSettings = {
    host: b?.Host ?? DEFAULT_BROKER.host,
    port: b?.Port ?? DEFAULT_BROKER.port,
    dataDir: b?.DataDir ?? DEFAULT_BROKER.dataDir,
    logLevel: b?.LogLevel ?? DEFAULT_BROKER.logLevel,
    maxMessageSizeBytes: b?.MaxMessageSizeBytes ?? DEFAULT_BROKER.maxMessageSizeBytes,
    limits: {
      maxConnections: b?.MaxConnections ?? DEFAULT_BROKER.limits.maxConnections,
      maxLinksPerConnection: b?.MaxLinksPerConnection ?? DEFAULT_BROKER.limits.maxLinksPerConnection,
      maxFrameSizeBytes: b?.MaxFrameSizeBytes ?? DEFAULT_BROKER.limits.maxFrameSizeBytes,
      maxBufferedTransferBytes: b?.MaxBufferedTransferBytes ?? DEFAULT_BROKER.limits.maxBufferedTransferBytes,
      maxPendingSendBytes: b?.MaxPendingSendBytes ?? DEFAULT_BROKER.limits.maxPendingSendBytes,
      authTimeoutMs: durationOr(b?.AuthTimeout, DEFAULT_BROKER.limits.authTimeoutMs),
    },
    policies:
      policies.length > 0 ? policies : DEFAULT_BROKER.policies.map((p) => ({ ...p, rights: [...p.rights] })),
  };
  // Left unset when absent so that defaults are resolved where they are used (effectiveHttpPort).
  if (b?.HttpPort !== undefined) settings.httpPort = b.HttpPort;
  if (b?.TlsPort !== undefined) settings.tlsPort = b.TlsPort;
  if (b?.EnableCrossEntityTransactions !== undefined) settings.enableCrossEntityTransactions = b.EnableCrossEntityTransactions;
  if (b?.Clock === 'manual') settings.clock = 'manual';
  if (b?.Faults === true) settings.faults = true;
  if (b?.AutoNamespaces === true) settings.autoNamespaces = true;
  if (b?.HttpsPort !== undefined) settings.httpsPort = b.HttpsPort;
  if (b?.LogMaxBytes !== undefined) settings.logMaxBytes = b.LogMaxBytes;
  // Origins compare as browsers send them: lower-case scheme and host.
  if (b?.AllowedOrigins !== undefined) settings.allowedOrigins = b.AllowedOrigins.map((o) => o.toLowerCase());
  if (b?.AllowedHosts !== undefined) settings.allowedHosts = b.AllowedHosts.map((h) => h.toLowerCase());
  const requestTimeout = b?.HttpRequestTimeout === undefined ? null : parseDuration(b.HttpRequestTimeout);
  if (requestTimeout !== null) settings.httpRequestTimeoutMs = requestTimeout;
  if (b?.Tls !== undefined) settings.tls = buildTls(b.Tls, problems);
  if (b?.DeadLetterAlerts !== undefined) settings.deadLetterAlerts = buildAlerts(b.DeadLetterAlerts, queues, problems);
  return settings;
}

/** Builds the typed config from schema-valid data, enforcing uniqueness and forwarding rules. */
function buildConfig(raw: RawConfig, warnings: string[], p: Problems): PeeklockConfig {
  // Entity names are unique per namespace; namespace names are unique (case-insensitively, as host labels are).
  const nsNames = new NameSet('namespace');
  const namespaces = raw.UserConfig.Namespaces.map((ns, i) => {
    p.attempt(() => nsNames.add(ns.Name, `Namespaces[${i}]`, `UserConfig.Namespaces[${i}].Name`));
    return buildNamespace(ns, `UserConfig.Namespaces[${i}]`, warnings, p);
  });
  const first = namespaces[0]!;
  const allQueues = raw.UserConfig.Namespaces.flatMap((ns) => ns.Queues ?? []);
  const broker = buildBroker(raw.Broker, new Map(allQueues.map((q) => [q.Name.toLowerCase(), q.Name])), p);
  // The first namespace is the default one: its own keys, if it declares any, are the broker's (admin API too).
  if (first.policies) broker.policies = first.policies;
  return {
    broker,
    namespace: first.name,
    queues: first.queues,
    topics: first.topics,
    // Only when there is more than one, so a single-namespace config reads exactly as before.
    ...(namespaces.length > 1 ? { namespaces } : {}),
    loggingType: raw.UserConfig.Logging?.Type ?? 'Console',
    warnings,
  };
}

/** One `UserConfig.Namespaces[]` item: its entities (names unique within it, forwards resolved in it) and keys. */
function buildNamespace(ns: RawNamespace, nsPath: string, warnings: string[], p: Problems): NamespaceConfig {
  const rawQueues = ns.Queues ?? [];
  const rawTopics = ns.Topics ?? [];

  const entityNames = new NameSet('entity');
  const canonical = new Map<string, string>();
  rawQueues.forEach((q, i) => {
    p.attempt(() => entityNames.add(q.Name, `Queues[${i}]`, `${nsPath}.Queues[${i}].Name`));
    canonical.set(q.Name.toLowerCase(), q.Name);
  });
  rawTopics.forEach((t, i) => {
    p.attempt(() => entityNames.add(t.Name, `Topics[${i}]`, `${nsPath}.Topics[${i}].Name`));
    canonical.set(t.Name.toLowerCase(), t.Name);
  });

  /** Resolves ForwardTo / ForwardDeadLetteredMessagesTo to the declared entity name. */
  const resolveForwards = (s: EntitySettings, propsPath: string, self: string | null): void => {
    for (const key of ['forwardTo', 'forwardDeadLetteredMessagesTo'] as const) {
      const target = s[key];
      if (target === null) continue;
      const jsonKey = key === 'forwardTo' ? 'ForwardTo' : 'ForwardDeadLetteredMessagesTo';
      const found = p.attempt(() => {
        const f = canonical.get(target.toLowerCase());
        if (f === undefined) fail(`${propsPath}.${jsonKey}`, target, 'must name an existing queue or topic');
        if (self !== null && f.toLowerCase() === self.toLowerCase()) {
          fail(`${propsPath}.${jsonKey}`, target, 'must not name the entity itself');
        }
        return f;
      });
      s[key] = found ?? null;
    }
  };

  const queues: QueueConfig[] = rawQueues.map((q, i) => {
    const settings = entitySettings(q.Properties);
    resolveForwards(settings, `${nsPath}.Queues[${i}].Properties`, q.Name);
    const rules = authorizationRules(q.Properties?.AuthorizationRules, `${nsPath}.Queues[${i}].Properties.AuthorizationRules`, p);
    return { name: q.Name, settings, authorizationRules: rules };
  });

  const topics: TopicConfig[] = rawTopics.map((t, i) => {
    const topicPath = `${nsPath}.Topics[${i}]`;
    const topicSettings = entitySettings(t.Properties);
    const subNames = new NameSet('subscription');
    const subscriptions: SubscriptionConfig[] = t.Subscriptions.map((sub, j) => {
      const subPath = `${topicPath}.Subscriptions[${j}]`;
      p.attempt(() => subNames.add(sub.Name, `Subscriptions[${j}]`, `${subPath}.Name`));
      if (sub.Properties?.DuplicateDetectionHistoryTimeWindow !== undefined) {
        warnings.push(`${subPath}.Properties.DuplicateDetectionHistoryTimeWindow: not a subscription setting, ignored`);
      }
      const settings = entitySettings({
        ...sub.Properties,
        DuplicateDetectionHistoryTimeWindow: undefined,
        RequiresDuplicateDetection: undefined,
      });
      resolveForwards(settings, `${subPath}.Properties`, null);
      const ruleNames = new NameSet('rule');
      const rules = (sub.Rules ?? []).flatMap((r, k) => {
        p.attempt(() => ruleNames.add(r.Name, `Rules[${k}]`, `${subPath}.Rules[${k}].Name`));
        const rule = p.attempt(() => buildRule(r, `${subPath}.Rules[${k}]`, warnings));
        return rule === undefined ? [] : [rule];
      });
      return { name: sub.Name, settings, rules };
    });
    return {
      name: t.Name,
      defaultMessageTtlMs: topicSettings.defaultMessageTtlMs,
      requiresDuplicateDetection: topicSettings.requiresDuplicateDetection,
      duplicateDetectionWindowMs: topicSettings.duplicateDetectionWindowMs,
      maxSizeBytes: topicSettings.maxSizeBytes,
      subscriptions,
      authorizationRules: authorizationRules(t.Properties?.AuthorizationRules, `${topicPath}.Properties.AuthorizationRules`, p),
    };
  });

  const policies = ns.SharedAccessPolicies ? buildPolicies(ns.SharedAccessPolicies, `${nsPath}.SharedAccessPolicies`, p) : null;
  return { name: ns.Name, queues, topics, policies };
}

// ---- public API ---------------------------------------------------------------------------------

/**
 * Parses and validates config text (JSONC: comments and trailing commas allowed); `source` names it in errors.
 * Throws one ConfigError carrying every problem found; messages never repeat `source` (the caller prints it once).
 */
export function parseConfig(text: string, source: string, opts: LoadOptions = {}): PeeklockConfig {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const parseErrors: ParseError[] = [];
  const root = jsonc.parseTree(body, parseErrors, { allowTrailingComma: true, disallowComments: false });
  if (parseErrors.length > 0 || root === undefined) {
    // Past the first syntax error the parser's guesses are noise; one located error is what helps.
    const first = parseErrors[0];
    const offset = first?.offset ?? 0;
    const before = body.slice(0, offset);
    const line = before.split('\n').length;
    const column = offset - (before.lastIndexOf('\n') + 1) + 1;
    const what = first === undefined ? 'value expected' : describeParseError(first.error);
    throw new ConfigError(`invalid JSON at line ${line} column ${column}: ${what}`, source);
  }

  const data: unknown = jsonc.getNodeValue(root);
  const unknown: UnknownKey[] = [];
  const validate = configValidator();
  let problems: Located[] = [];
  if (!validate(data)) problems = explainSchemaErrors(validate.errors ?? [], data, root, unknown);
  unknown.sort((a, b) => a.offset - b.offset);
  if (opts.strict) problems.push(...unknown.map((u) => ({ offset: u.offset, text: `${u.path}: unknown key, refused by --strict${u.hint}` })));
  const warnings = unknown.map((u) => `${u.path}: unknown key, ignored${u.hint}`);
  if (problems.length > 0) {
    const list = problems.sort((a, b) => a.offset - b.offset).map((x) => x.text);
    throw new ConfigError(list, source, opts.strict ? [] : warnings);
  }
  const semantic = new Problems();
  const config = buildConfig(data as RawConfig, warnings, semantic);
  if (semantic.list.length > 0) throw new ConfigError(semantic.list, source, warnings);
  return config;
}

/**
 * Validates one namespace given as a Config.json `Namespaces[]` item (`{ Name, Queues?, Topics?,
 * SharedAccessPolicies? }`), as the embedded API and `PUT /api/namespaces/{name}` receive it; throws ConfigError.
 */
export function parseNamespace(item: Record<string, unknown>, source: string): NamespaceConfig {
  const config = parseConfig(JSON.stringify({ UserConfig: { Namespaces: [item] } }), source, { strict: true });
  const declared = (item.SharedAccessPolicies as unknown[] | undefined) !== undefined;
  return { name: config.namespace, queues: config.queues, topics: config.topics, policies: declared ? config.broker.policies : null };
}

/** Reads the config file at `path` (synchronously) and returns the validated config; throws ConfigError. */
export function loadConfig(path: string, opts: LoadOptions = {}): PeeklockConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'it is a directory' : (e.code ?? e.message);
    throw new ConfigError(`cannot read the config file (${why}); pass an existing file with --config`, path);
  }
  return parseConfig(text, path, opts);
}