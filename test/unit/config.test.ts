import { describe, it, expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { ConfigError, effectiveHttpPort, loadConfig, parseConfig } from '../../src/config/load.js';
import { formatDuration, parseDuration } from '../../src/config/duration.js';
import type { PeeklockConfig } from '../../src/config/types.js';

const SHIPPED = fileURLToPath(new URL('../../config/peeklock.json', import.meta.url));

/** A config with the given queues/topics (and optional Broker) in the emulator format. */
function cfg(ns: { Queues?: unknown[]; Topics?: unknown[] }, broker?: unknown): string {
  const doc: Record<string, unknown> = {
    UserConfig: { Namespaces: [{ Name: 'sbemulatorns', ...ns }], Logging: { Type: 'File' } },
  };
  if (broker !== undefined) doc.Broker = broker;
  return JSON.stringify(doc, null, 2);
}

/** Config with one queue named q0, whose Properties are `props`. */
function queueCfg(props: Record<string, unknown>): string {
  return cfg({ Queues: [{ Name: 'q0', Properties: props }] });
}

/** Returns the ConfigError message thrown by parseConfig, failing if nothing is thrown. */
function errorOf(text: string): string {
  try {
    parseConfig(text, 'test.json');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error('expected a ConfigError');
}

/** Returns the problems of the ConfigError parseConfig throws, failing if nothing is thrown. */
function problemsOf(text: string, opts?: Parameters<typeof parseConfig>[2]): string[] {
  try {
    parseConfig(text, 't', opts);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

const QP = 'UserConfig.Namespaces[0].Queues[0].Properties';

// Modelled on the Azure Service Bus emulator's checked-in Config.json.
const EMULATOR_SAMPLE = `{
  "UserConfig": {
    "Namespaces": [
      {
        "Name": "sbemulatorns",
        "Queues": [
          {
            "Name": "queue.1",
            "Properties": {
              "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H",
              "DuplicateDetectionHistoryTimeWindow": "PT20S", "ForwardDeadLetteredMessagesTo": "", "ForwardTo": "",
              "LockDuration": "PT1M", "MaxDeliveryCount": 3, "RequiresDuplicateDetection": false, "RequiresSession": false
            }
          }
        ],
        "Topics": [
          {
            "Name": "topic.1",
            "Properties": { "DefaultMessageTimeToLive": "PT1H", "DuplicateDetectionHistoryTimeWindow": "PT20S", "RequiresDuplicateDetection": false },
            "Subscriptions": [
              {
                "Name": "subscription.1",
                "Properties": { "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H", "LockDuration": "PT1M",
                  "MaxDeliveryCount": 3, "ForwardDeadLetteredMessagesTo": "", "ForwardTo": "", "RequiresSession": false },
                "Rules": [
                  {
                    "Name": "app-prop-filter-1",
                    "Properties": {
                      "FilterType": "Correlation",
                      "CorrelationFilter": {
                        "ContentType": "application/text", "CorrelationId": "id1",
                        "Label": "subject1", // subject of the message
                        "MessageId": "msgid1", "ReplyTo": "someQueue", "ReplyToSessionId": "sessionId",
                        "SessionId": "session1", "To": "xyz"
                        // any of these may be left out
                      }
                    }
                  }
                ]
              },
              {
                "Name": "subscription.2",
                "Properties": { "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H", "LockDuration": "PT1M",
                  "MaxDeliveryCount": 3, "ForwardDeadLetteredMessagesTo": "", "ForwardTo": "", "RequiresSession": false },
                "Rules": [
                  {
                    "Name": "user-prop-filter-1",
                    "Properties": {
                      "FilterType": "Correlation",
                      "CorrelationFilter": {
                        "Properties": { "prop3": "value3" }
                      }
                    }
                  }
                ]
              },
              {
                "Name": "subscription.3",
                "Properties": { "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H", "LockDuration": "PT1M",
                  "MaxDeliveryCount": 3, "ForwardDeadLetteredMessagesTo": "", "ForwardTo": "", "RequiresSession": false }
              },
              {
                "Name": "subscription.4",
                "Properties": { "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H", "LockDuration": "PT1M",
                  "MaxDeliveryCount": 3, "ForwardDeadLetteredMessagesTo": "", "ForwardTo": "", "RequiresSession": false },
                "Rules": [
                  {
                    "Name": "sql-filter-1",
                    "Properties": {
                      "FilterType": "Sql",
                      "SqlFilter": { "SqlExpression": "newsum > 10" },
                      "Action": { "SqlExpression": "SET newsum = 20" }
                    }
                  }
                ]
              }
            ]
          }
        ]
      }
    ],
    "Logging": { "Type": "File" }
  }
}`;

const DEFAULT_BROKER_SETTINGS = {
  host: '127.0.0.1',
  port: 5672,
  dataDir: './data',
  logLevel: 'info' as const,
  maxMessageSizeBytes: 262_144,
  limits: { maxConnections: 5_000, maxLinksPerConnection: 1_000, maxFrameSizeBytes: 262_144, maxBufferedTransferBytes: 33_554_432, maxPendingSendBytes: 67_108_864, authTimeoutMs: 20_000 },
  policies: [{ name: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE', rights: ['Manage' as const, 'Send' as const, 'Listen' as const] }],
};

/** Azure defaults for a queue or subscription with no Properties. */
const DEFAULT_SETTINGS = {
  lockDurationMs: 60_000,
  maxDeliveryCount: 10,
  defaultMessageTtlMs: null,
  deadLetteringOnMessageExpiration: false,
  requiresDuplicateDetection: false,
  duplicateDetectionWindowMs: 600_000,
  requiresSession: false,
  forwardTo: null,
  forwardDeadLetteredMessagesTo: null,
  maxSizeBytes: 1024 * 1024 * 1024,
};

const EMULATOR_SUB_SETTINGS = { ...DEFAULT_SETTINGS, maxDeliveryCount: 3, defaultMessageTtlMs: 3_600_000 };

describe('parseDuration / formatDuration', () => {
  it('parses the emulator forms', () => {
    expect(parseDuration('PT1M')).toBe(60_000);
    expect(parseDuration('PT5S')).toBe(5_000);
    expect(parseDuration('PT1H')).toBe(3_600_000);
    expect(parseDuration('P1D')).toBe(86_400_000);
    expect(parseDuration('P1DT2H3M4S')).toBe(86_400_000 + 7_200_000 + 180_000 + 4_000);
    expect(parseDuration('P1Y')).toBe(365 * 86_400_000);
    expect(parseDuration('P1M')).toBe(30 * 86_400_000);
    expect(parseDuration('PT0.5S')).toBe(500);
    expect(parseDuration('P1W')).toBe(7 * 86_400_000);
  });
  it('rejects malformed durations', () => {
    for (const bad of ['', 'P', 'PT', 'P1DT', '1M', 'PT1.5M', 'pt1m', 'PT-1S', 'P1W1D', ' PT1M']) {
      expect(parseDuration(bad), bad).toBeNull();
    }
  });
  it('formats milliseconds', () => {
    expect(formatDuration(300_000)).toBe('PT5M');
    expect(formatDuration(60_000)).toBe('PT1M');
    expect(formatDuration(5_000)).toBe('PT5S');
    expect(formatDuration(90_000)).toBe('PT1M30S');
    expect(formatDuration(0)).toBe('PT0S');
    expect(formatDuration(500)).toBe('PT0.5S');
    expect(formatDuration(7 * 86_400_000)).toBe('P7D');
    expect(formatDuration(86_400_000 + 3_600_000)).toBe('P1DT1H');
  });
});

describe('parseConfig: valid files', () => {
  it('loads the shipped config/peeklock.json', () => {
    const c = loadConfig(SHIPPED);
    expect(c.namespace).toBe('sbemulatorns');
    expect(c.warnings).toEqual([]);
    expect(c.topics).toEqual([]);
    expect(c.loggingType).toBe('Console');
    expect(c.queues.map((q) => q.name)).toEqual(['orders', 'jobs']);
    expect(c.queues[0]!.settings).toMatchObject({ lockDurationMs: 60_000, maxDeliveryCount: 10, defaultMessageTtlMs: null });
    expect(c.queues[1]!.settings).toMatchObject({
      lockDurationMs: 30_000,
      maxDeliveryCount: 5,
      deadLetteringOnMessageExpiration: true,
      defaultMessageTtlMs: 3_600_000,
    });
    expect(c.broker).toEqual(DEFAULT_BROKER_SETTINGS);
  });

  it('loads the emulator sample config unchanged', () => {
    const c = parseConfig(EMULATOR_SAMPLE, 'Config.json');
    const expected: PeeklockConfig = {
      broker: DEFAULT_BROKER_SETTINGS,
      namespace: 'sbemulatorns',
      queues: [{ name: 'queue.1', settings: { ...EMULATOR_SUB_SETTINGS, duplicateDetectionWindowMs: 20_000 }, authorizationRules: [] }],
      topics: [
        {
          name: 'topic.1',
          authorizationRules: [],
          defaultMessageTtlMs: 3_600_000,
          requiresDuplicateDetection: false,
          duplicateDetectionWindowMs: 20_000,
          maxSizeBytes: 1024 * 1024 * 1024,
          subscriptions: [
            {
              name: 'subscription.1',
              settings: EMULATOR_SUB_SETTINGS,
              rules: [
                {
                  name: 'app-prop-filter-1',
                  filter: {
                    type: 'correlation', contentType: 'application/text', correlationId: 'id1', label: 'subject1',
                    messageId: 'msgid1', replyTo: 'someQueue', replyToSessionId: 'sessionId', sessionId: 'session1',
                    to: 'xyz', properties: {},
                  },
                  action: null,
                },
              ],
            },
            {
              name: 'subscription.2',
              settings: EMULATOR_SUB_SETTINGS,
              rules: [{ name: 'user-prop-filter-1', filter: { type: 'correlation', properties: { prop3: 'value3' } }, action: null }],
            },
            { name: 'subscription.3', settings: EMULATOR_SUB_SETTINGS, rules: [] },
            {
              name: 'subscription.4',
              settings: EMULATOR_SUB_SETTINGS,
              rules: [
                { name: 'sql-filter-1', filter: { type: 'sql', expression: 'newsum > 10' }, action: 'SET newsum = 20' },
              ],
            },
          ],
        },
      ],
      loggingType: 'File',
      warnings: [],
    };
    expect(c).toEqual(expected);
  });

  it('applies Azure defaults when Properties are absent and Topics is missing', () => {
    const c = parseConfig(cfg({ Queues: [{ Name: 'q0' }] }), 'test.json');
    expect(c.topics).toEqual([]);
    expect(c.queues[0]!.settings).toEqual(DEFAULT_SETTINGS);
    expect(parseConfig(cfg({}), 'test.json').queues).toEqual([]);
  });

  it('accepts LockDuration PT5M and PT5S', () => {
    expect(parseConfig(queueCfg({ LockDuration: 'PT5M' }), 't').queues[0]!.settings.lockDurationMs).toBe(300_000);
    expect(parseConfig(queueCfg({ LockDuration: 'PT5S' }), 't').queues[0]!.settings.lockDurationMs).toBe(5_000);
  });

  it('accepts MaxDeliveryCount 100 and TTL P1D (cloud ranges, not the emulator caps)', () => {
    const c = parseConfig(queueCfg({ MaxDeliveryCount: 100, DefaultMessageTimeToLive: 'P1D' }), 't');
    expect(c.queues[0]!.settings.maxDeliveryCount).toBe(100);
    expect(c.queues[0]!.settings.defaultMessageTtlMs).toBe(86_400_000);
  });

  it('resolves ForwardTo case-insensitively to the declared name', () => {
    const c = parseConfig(
      cfg({ Queues: [{ Name: 'a', Properties: { ForwardTo: 'ORDERS', ForwardDeadLetteredMessagesTo: '' } }, { Name: 'Orders' }] }),
      't',
    );
    expect(c.queues[0]!.settings.forwardTo).toBe('Orders');
    expect(c.queues[0]!.settings.forwardDeadLetteredMessagesTo).toBeNull();
  });

  it('reads Broker settings and policies', () => {
    const c = parseConfig(
      cfg({}, {
        Host: '0.0.0.0',
        Port: 0,
        DataDir: '/var/lib/peeklock',
        LogLevel: 'debug',
        MaxMessageSizeBytes: 1_048_576,
        SharedAccessPolicies: [{ Name: 'sender', Key: 'k1', Rights: ['Send'] }],
      }),
      't',
    );
    expect(c.broker).toEqual({
      host: '0.0.0.0',
      port: 0,
      dataDir: '/var/lib/peeklock',
      logLevel: 'debug',
      maxMessageSizeBytes: 1_048_576,
      limits: DEFAULT_BROKER_SETTINGS.limits,
      policies: [{ name: 'sender', key: 'k1', rights: ['Send'] }],
    });
  });

  it('reads the connection limits (frame guard) and refuses values out of range', () => {
    const c = parseConfig(
      cfg({}, { MaxConnections: 10, MaxLinksPerConnection: 4, MaxFrameSizeBytes: 65_536, MaxBufferedTransferBytes: 1_048_576, MaxPendingSendBytes: 2_097_152, AuthTimeout: 'PT5S' }),
      't',
    );
    expect(c.broker.limits).toEqual({ maxConnections: 10, maxLinksPerConnection: 4, maxFrameSizeBytes: 65_536, maxBufferedTransferBytes: 1_048_576, maxPendingSendBytes: 2_097_152, authTimeoutMs: 5_000 });
    expect(errorOf(cfg({}, { MaxConnections: 0 }))).toBe('Broker.MaxConnections = 0: must be an integer from 1 to 1000000');
    expect(errorOf(cfg({}, { MaxFrameSizeBytes: 512 }))).toBe('Broker.MaxFrameSizeBytes = 512: must be an integer from 4096 to 16777216');
    expect(errorOf(cfg({}, { MaxPendingSendBytes: 1024 }))).toBe('Broker.MaxPendingSendBytes = 1024: must be an integer from 65536 to 2147483647');
    expect(errorOf(cfg({}, { AuthTimeout: 'PT0S' }))).toMatch(/^Broker\.AuthTimeout = "PT0S": must be a duration from /);
  });
});

describe('parseConfig: transactions', () => {
  it('reads Broker.EnableCrossEntityTransactions (off unless set) and refuses a non-boolean', () => {
    expect(parseConfig(cfg({}, {}), 't').broker.enableCrossEntityTransactions).toBeUndefined();
    expect(parseConfig(cfg({}, { EnableCrossEntityTransactions: true }), 't').broker.enableCrossEntityTransactions).toBe(true);
    expect(errorOf(cfg({}, { EnableCrossEntityTransactions: 'yes' }))).toBe('Broker.EnableCrossEntityTransactions = "yes": must be true or false');
  });
});

describe('parseConfig: warnings', () => {
  it('reports an unknown key as a warning with the closest allowed name, not an error', () => {
    const c = parseConfig(queueCfg({ LockDuraton: 'PT2M', LockDuration: 'PT2M' }), 't');
    expect(c.warnings).toEqual([`${QP}.LockDuraton: unknown key, ignored; did you mean LockDuration?`]);
    expect(c.queues[0]!.settings.lockDurationMs).toBe(120_000);
  });

  it('suggests names for typos in every section, and nothing for a key unlike any allowed one', () => {
    const c = parseConfig(cfg({ Queues: [{ Name: 'q0', Properties: { LockDurration: 'PT2M', Colour: 'red' } }] }, { Prot: 5673, logLevel: 'debug' }), 't');
    expect(c.warnings).toEqual([
      `${QP}.LockDurration: unknown key, ignored; did you mean LockDuration?`,
      `${QP}.Colour: unknown key, ignored`,
      'Broker.Prot: unknown key, ignored; did you mean Port?',
      'Broker.logLevel: unknown key, ignored; did you mean LogLevel?',
    ]);
    expect(c.broker.port).toBe(5672);
  });

  it('refuses unknown keys with --strict, all of them at once', () => {
    const text = cfg({ Queues: [{ Name: 'q0', Properties: { LockDurration: 'PT2M' } }] }, { Prot: 5673 });
    expect(problemsOf(text, { strict: true })).toEqual([
      `${QP}.LockDurration: unknown key, refused by --strict; did you mean LockDuration?`,
      'Broker.Prot: unknown key, refused by --strict; did you mean Port?',
    ]);
  });

  it('accepts and ignores DuplicateDetectionHistoryTimeWindow on a subscription', () => {
    const text = cfg({
      Topics: [{ Name: 't', Subscriptions: [{ Name: 's', Properties: { DuplicateDetectionHistoryTimeWindow: 'PT20S' } }] }],
    });
    const c = parseConfig(text, 't');
    expect(c.warnings).toEqual([
      'UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Properties.DuplicateDetectionHistoryTimeWindow: not a subscription setting, ignored',
    ]);
    expect(c.topics[0]!.subscriptions[0]!.settings.duplicateDetectionWindowMs).toBe(600_000);
  });
});

describe('parseConfig: errors', () => {
  it('reports every problem at once, in file order, each on its own line', () => {
    const text = cfg(
      { Queues: [{ Name: 'q0', Properties: { LockDuration: 'PT6M', MaxDeliveryCount: 0 } }, { Name: 'q1', Properties: { Bogus: 1 } }] },
      { Port: 70000, LogLevel: 'loud' },
    );
    expect(problemsOf(text)).toEqual([
      `${QP}.LockDuration = "PT6M": must be a duration from PT5S to PT5M`,
      `${QP}.MaxDeliveryCount = 0: must be an integer from 1 to 2147483647`,
      expect.stringMatching(/^Broker\.Port = 70000: must be an integer from 0 to 65535/),
      expect.stringMatching(/^Broker\.LogLevel = "loud": must be one of /),
    ]);
  });

  it('reports every duplicate and dangling forward at once once the shapes are right', () => {
    const text = cfg({
      Queues: [
        { Name: 'a', Properties: { ForwardTo: 'nowhere' } },
        { Name: 'A' },
        { Name: 'b', Properties: { ForwardTo: 'b' } },
      ],
    });
    expect(problemsOf(text)).toEqual([
      'UserConfig.Namespaces[0].Queues[1].Name = "A": duplicate entity name (also Queues[0])',
      'UserConfig.Namespaces[0].Queues[0].Properties.ForwardTo = "nowhere": must name an existing queue or topic',
      'UserConfig.Namespaces[0].Queues[2].Properties.ForwardTo = "b": must not name the entity itself',
    ]);
  });

  it('refuses LockDuration PT6M with a one-line message naming path, value and range', () => {
    const text = cfg({ Queues: [{ Name: 'q0' }, { Name: 'q1', Properties: { LockDuration: 'PT6M' } }] });
    expect(errorOf(text)).toBe(
      'UserConfig.Namespaces[0].Queues[1].Properties.LockDuration = "PT6M": must be a duration from PT5S to PT5M',
    );
  });

  it('refuses malformed and too-short durations', () => {
    expect(errorOf(queueCfg({ LockDuration: 'PT4S' }))).toBe(
      `${QP}.LockDuration = "PT4S": must be a duration from PT5S to PT5M`,
    );
    expect(errorOf(queueCfg({ LockDuration: '5 minutes' }))).toBe(
      `${QP}.LockDuration = "5 minutes": must be a duration from PT5S to PT5M`,
    );
    expect(errorOf(queueCfg({ DefaultMessageTimeToLive: 'PT0S' }))).toBe(
      `${QP}.DefaultMessageTimeToLive = "PT0S": must be a duration from PT1S to P10675199D`,
    );
    expect(errorOf(queueCfg({ DuplicateDetectionHistoryTimeWindow: 'P8D' }))).toBe(
      `${QP}.DuplicateDetectionHistoryTimeWindow = "P8D": must be a duration from PT5S to P7D`,
    );
  });

  it('refuses MaxDeliveryCount 0, 2.5 and "10"', () => {
    const rule = 'must be an integer from 1 to 2147483647';
    expect(errorOf(queueCfg({ MaxDeliveryCount: 0 }))).toBe(`${QP}.MaxDeliveryCount = 0: ${rule}`);
    expect(errorOf(queueCfg({ MaxDeliveryCount: 2.5 }))).toBe(`${QP}.MaxDeliveryCount = 2.5: ${rule}`);
    expect(errorOf(queueCfg({ MaxDeliveryCount: '10' }))).toBe(`${QP}.MaxDeliveryCount = "10": ${rule}`);
  });

  it('reports invalid JSON with line and column, and the file as the source (named once, by the caller)', () => {
    const text = '{\n  "UserConfig": {\n    "Namespaces": []\n    "Logging": {}\n  }\n}';
    expect(errorOf(text)).toBe('invalid JSON at line 4 column 5: comma expected');
    expect(errorOf('')).toBe('invalid JSON at line 1 column 1: value expected');
    expect(() => parseConfig('', 'test.json')).toThrow(expect.objectContaining({ source: 'test.json' }));
  });

  it('allows comments and trailing commas', () => {
    const text = '// header\n{ "UserConfig": { /* c */ "Namespaces": [ { "Name": "ns", }, ], }, }';
    expect(parseConfig(text, 't').namespace).toBe('ns');
  });

  it('reports a missing Name as required', () => {
    const text = cfg({ Queues: [{ Name: 'a' }, { Name: 'b' }, { Properties: {} }] });
    expect(errorOf(text)).toBe('UserConfig.Namespaces[0].Queues[2].Name: required');
    expect(errorOf('{}')).toBe('UserConfig: required');
  });

  it('refuses a bad entity name', () => {
    expect(errorOf(cfg({ Queues: [{ Name: '-bad' }] }))).toBe(
      'UserConfig.Namespaces[0].Queues[0].Name = "-bad": must be a name of letters, digits, ".", "-", "_" or "/", starting and ending with a letter or digit',
    );
  });

  it('reads several namespaces, each with its own entities and optional keys; the first is the default', () => {
    const two = JSON.stringify({
      UserConfig: {
        Namespaces: [
          { Name: 'a', Queues: [{ Name: 'orders' }] },
          { Name: 'b', Queues: [{ Name: 'orders', Properties: { ForwardTo: 'audit' } }, { Name: 'audit' }], SharedAccessPolicies: [{ Name: 'k', Key: 'v', Rights: ['Send'] }] },
        ],
      },
    });
    const c = parseConfig(two, 'test');
    expect([c.namespace, c.queues.map((q) => q.name)]).toEqual(['a', ['orders']]);
    expect(parseConfig(JSON.stringify({ UserConfig: { Namespaces: [{ Name: 'a' }] } }), 'test').namespaces).toBeUndefined();
    expect(c.namespaces?.map((n) => [n.name, n.queues.map((q) => q.name), n.policies])).toEqual([
      ['a', ['orders'], null],
      ['b', ['orders', 'audit'], [{ name: 'k', key: 'v', rights: ['Send'] }]],
    ]);
  });

  it('refuses a duplicate or malformed namespace name, and a forward to another namespace', () => {
    const text = (namespaces: unknown[]): string => JSON.stringify({ UserConfig: { Namespaces: namespaces } });
    expect(errorOf(text([{ Name: 'a' }, { Name: 'A' }]))).toBe('UserConfig.Namespaces[1].Name = "A": duplicate namespace name (also Namespaces[0])');
    expect(errorOf(text([{ Name: 'a.b' }]))).toBe(
      'UserConfig.Namespaces[0].Name = "a.b": must be a namespace name of 1 to 50 letters, digits, "-" or "_", starting with a letter or digit',
    );
    expect(errorOf(text([{ Name: 'a', Queues: [{ Name: 'audit' }] }, { Name: 'b', Queues: [{ Name: 'q', Properties: { ForwardTo: 'audit' } }] }]))).toBe(
      'UserConfig.Namespaces[1].Queues[0].Properties.ForwardTo = "audit": must name an existing queue or topic',
    );
  });

  it('refuses duplicate entity, subscription, rule and policy names', () => {
    expect(errorOf(cfg({ Queues: [{ Name: 'orders' }], Topics: [{ Name: 'Orders', Subscriptions: [{ Name: 's' }] }] }))).toBe(
      'UserConfig.Namespaces[0].Topics[0].Name = "Orders": duplicate entity name (also Queues[0])',
    );
    expect(errorOf(cfg({ Queues: [{ Name: 'a' }, { Name: 'A' }] }))).toBe(
      'UserConfig.Namespaces[0].Queues[1].Name = "A": duplicate entity name (also Queues[0])',
    );
    expect(errorOf(cfg({ Topics: [{ Name: 't', Subscriptions: [{ Name: 's' }, { Name: 'S' }] }] }))).toBe(
      'UserConfig.Namespaces[0].Topics[0].Subscriptions[1].Name = "S": duplicate subscription name (also Subscriptions[0])',
    );
    const rule = { Name: 'r', Properties: { FilterType: 'Sql', SqlFilter: { SqlExpression: '1=1' } } };
    expect(errorOf(cfg({ Topics: [{ Name: 't', Subscriptions: [{ Name: 's', Rules: [rule, rule] }] }] }))).toBe(
      'UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Rules[1].Name = "r": duplicate rule name (also Rules[0])',
    );
    const policy = { Name: 'p', Key: 'k', Rights: ['Send'] };
    expect(errorOf(cfg({}, { SharedAccessPolicies: [policy, policy] }))).toBe(
      'Broker.SharedAccessPolicies[1].Name = "p": duplicate policy name (also SharedAccessPolicies[0])',
    );
  });

  it('refuses ForwardTo an unknown entity or the queue itself', () => {
    expect(errorOf(queueCfg({ ForwardTo: 'nowhere' }))).toBe(
      `${QP}.ForwardTo = "nowhere": must name an existing queue or topic`,
    );
    expect(errorOf(queueCfg({ ForwardDeadLetteredMessagesTo: 'Q0' }))).toBe(
      `${QP}.ForwardDeadLetteredMessagesTo = "Q0": must not name the entity itself`,
    );
  });

  it('refuses incomplete rules', () => {
    const withRule = (Properties: unknown): string =>
      cfg({ Topics: [{ Name: 't', Subscriptions: [{ Name: 's', Rules: [{ Name: 'r', Properties }] }] }] });
    const rp = 'UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Rules[0].Properties';
    expect(errorOf(withRule({ FilterType: 'Sql' }))).toBe(`${rp}.SqlFilter.SqlExpression: required when FilterType is "Sql"`);
    expect(errorOf(withRule({ FilterType: 'Correlation' }))).toBe(
      `${rp}.CorrelationFilter: required when FilterType is "Correlation"`,
    );
    expect(errorOf(withRule({ FilterType: 'Correlation', CorrelationFilter: {} }))).toBe(
      `${rp}.CorrelationFilter = {}: must set at least one of ContentType, CorrelationId, Label, MessageId, ReplyTo, ReplyToSessionId, SessionId, To, Properties`,
    );
    expect(errorOf(withRule({ FilterType: 'Regex' }))).toBe(`${rp}.FilterType = "Regex": must be one of "Correlation", "Sql"`);
  });

  it('refuses Broker.Port out of range and an empty policy right list', () => {
    expect(errorOf(cfg({}, { Port: 70000 }))).toBe('Broker.Port = 70000: must be an integer from 0 to 65535');
    expect(errorOf(cfg({}, { SharedAccessPolicies: [{ Name: 'p', Key: 'k', Rights: [] }] }))).toBe(
      'Broker.SharedAccessPolicies[0].Rights = []: must be a non-empty array of rights, each one of "Manage", "Send", "Listen"',
    );
  });

  it('reports an unreadable file', () => {
    expect(() => loadConfig('/nonexistent/peeklock.json')).toThrow(
      expect.objectContaining({
        source: '/nonexistent/peeklock.json',
        message: 'cannot read the config file (no such file); pass an existing file with --config',
      }),
    );
  });

  it('keeps every error message on one line', () => {
    const texts = [
      '{\n  "UserConfig": {\n    "Namespaces": [\n',
      queueCfg({ LockDuration: 'PT6M' }),
      queueCfg({ MaxDeliveryCount: 'line1\nline2' }),
      cfg({ Queues: [{ Properties: {} }] }),
      cfg({ Queues: [{ Name: 'q', Properties: { ForwardTo: 'x' } }] }),
      cfg({}, { Port: -1 }),
      cfg({ Queues: [{ Name: 'a' }, { Name: 'a' }] }),
    ];
    for (const text of texts) {
      const message = errorOf(text);
      expect(message).not.toMatch(/[\r\n]/);
      expect(message.length).toBeGreaterThan(10);
    }
  });
});

describe('the HTTP port rule', () => {
  it('moves the HTTP port with the AMQP port unless it is set: 5300 + (port - 5672)', () => {
    expect(effectiveHttpPort({ port: 5672 })).toBe(5300);
    expect(effectiveHttpPort({ port: 5673 })).toBe(5301);
    expect(effectiveHttpPort({ port: 6000 })).toBe(5628);
    expect(effectiveHttpPort({ port: 5673, httpPort: 8080 })).toBe(8080);
    expect(effectiveHttpPort({ port: 5673, httpPort: 0 })).toBe(0);
  });

  it('gives any free port (0) for AMQP port 0 and where the rule leaves 1024..65535', () => {
    expect(effectiveHttpPort({ port: 0 })).toBe(0);
    expect(effectiveHttpPort({ port: 1000 })).toBe(0);
    expect(effectiveHttpPort({ port: 4000 })).toBe(3628);
    expect(effectiveHttpPort({ port: 65535 })).toBe(65163);
    expect(effectiveHttpPort({ port: 5000 })).toBe(4628);
  });
});

describe('parseConfig: entity SAS rules (Properties.AuthorizationRules)', () => {
  const KEY = 'b3JkZXJzLXNlbmQta2V5LWZvci10ZXN0cy0wMDAwMDA=';
  it('reads a queue\'s and a topic\'s rules: KeyName, Rights, and the keys when given', () => {
    const c = parseConfig(
      cfg({
        Queues: [{ Name: 'orders', Properties: { AuthorizationRules: [{ KeyName: 'orders-send', PrimaryKey: KEY, Rights: ['Send'] }] } }],
        Topics: [{ Name: 't', Properties: { AuthorizationRules: [{ KeyName: 'listen', Rights: ['Listen'] }] }, Subscriptions: [{ Name: 's' }] }],
      }),
      'test.json',
    );
    expect(c.warnings).toEqual([]);
    expect(c.queues[0]!.authorizationRules).toEqual([{ keyName: 'orders-send', primaryKey: KEY, secondaryKey: null, rights: ['Send'] }]);
    expect(c.topics[0]!.authorizationRules).toEqual([{ keyName: 'listen', primaryKey: null, secondaryKey: null, rights: ['Listen'] }]);
    expect(parseConfig(cfg({ Queues: [{ Name: 'plain' }] }), 'test.json').queues[0]!.authorizationRules).toEqual([]);
  });

  it('refuses a rule without KeyName or Rights, an unknown right, a duplicate key name and more than 12 rules, one line each', () => {
    const rules = (r: unknown[]): string => queueCfg({ AuthorizationRules: r });
    expect(errorOf(rules([{ Rights: ['Send'] }]))).toBe(`${QP}.AuthorizationRules[0].KeyName: required`);
    expect(errorOf(rules([{ KeyName: 'k', Rights: ['Write'] }]))).toBe(`${QP}.AuthorizationRules[0].Rights[0] = "Write": must be one of "Manage", "Send", "Listen"`);
    expect(errorOf(rules([{ KeyName: 'k', Rights: [] }]))).toMatch(/AuthorizationRules\[0\]\.Rights = \[\]: must be a non-empty array of rights/);
    expect(errorOf(rules([{ KeyName: 'k', Rights: ['Send'] }, { KeyName: 'K', Rights: ['Listen'] }]))).toBe(
      `${QP}.AuthorizationRules[1].KeyName = "K": duplicate rule key name (also AuthorizationRules[0])`,
    );
    expect(errorOf(rules(Array.from({ length: 13 }, (_, i) => ({ KeyName: `k${i}`, Rights: ['Send'] }))))).toMatch(
      /AuthorizationRules = \[.*: must be an array of at most 12 authorization rules$/,
    );
  });
});
