// `peeklock entities create|update|delete|list` for queues, topics, subscriptions and rules, through the broker's
// management plane (the Atom API the SDKs' administration clients use), so the CLI and an application see the same
// entities with the same defaults. Options map to the entity properties (`--lock-duration PT30S` is LockDuration);
// a value out of Service Bus's range is refused before anything is sent, in one line naming the option and the range
// (exit 2); what the broker refuses is one line with exit 1.

import { Command, InvalidArgumentError, Option } from 'commander';
import { formatDuration, parseDuration } from '../config/duration.js';
import { AdminError, type AdminTarget } from './admin-client.js';
import { atomRequest, descriptionOf, elements, entry, esc, listAll, typedValue, type Description } from './atom-client.js';
import { formatTable } from './table.js';

/** The entity kinds the subcommands take. */
export const ENTITY_KINDS = ['queue', 'topic', 'subscription', 'rule'] as const;
type Kind = (typeof ENTITY_KINDS)[number];

/** Service Bus entity statuses. */
const STATUSES = ['Active', 'Disabled', 'SendDisabled', 'ReceiveDisabled'];

/** The options of create and update, as parsed. */
export interface EntityFlags {
  url: string;
  keyName: string;
  key: string;
  json?: boolean;
  lockDuration?: string;
  maxDeliveryCount?: string;
  defaultMessageTtl?: string;
  duplicateDetectionWindow?: string;
  autoDeleteOnIdle?: string;
  maxSizeMb?: string;
  requiresSession?: boolean;
  requiresDuplicateDetection?: boolean;
  deadLetteringOnExpiration?: boolean;
  forwardTo?: string;
  forwardDeadLettersTo?: string;
  status?: string;
  userMetadata?: string;
  sqlFilter?: string;
  correlation?: string[];
  param?: string[];
  sqlAction?: string;
  actionParam?: string[];
}

// Each option's property, the kinds it applies to, and its check. A duration check returns the normalised text.
const DURATION_RANGES: Record<string, { min: number; max: number; range: string }> = {
  lockDuration: { min: 5_000, max: 300_000, range: 'PT5S to PT5M' },
  defaultMessageTtl: { min: 1_000, max: Infinity, range: 'at least PT1S' },
  duplicateDetectionWindow: { min: 20_000, max: 7 * 86_400_000, range: 'PT20S to P7D' },
  autoDeleteOnIdle: { min: 300_000, max: Infinity, range: 'at least PT5M' },
};

function duration(name: keyof typeof DURATION_RANGES): (v: string) => string {
  return (v) => {
    const { min, max, range } = DURATION_RANGES[name]!;
    const ms = parseDuration(v);
    if (ms === null || ms < min || ms > max) throw new InvalidArgumentError(`must be an ISO 8601 duration, ${range}`);
    return formatDuration(ms);
  };
}

function integer(min: number, max: number): (v: string) => string {
  return (v) => {
    if (!/^\d{1,10}$/.test(v) || Number(v) < min || Number(v) > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return String(Number(v));
  };
}

function collect(check: (v: string) => string): (v: string, prev: string[] | undefined) => string[] {
  return (v, prev) => [...(prev ?? []), check(v)];
}

function keyValue(v: string): string {
  if (v.indexOf('=') <= 0) throw new InvalidArgumentError('must be key=value with a non-empty key');
  return v;
}

function metadata(v: string): string {
  if (v.length > 1024) throw new InvalidArgumentError('must be at most 1024 characters');
  return v;
}

/** Which options apply to which kind (the flag name as the user types it). */
const APPLIES: Record<string, { flag: string; kinds: Kind[] }> = {
  lockDuration: { flag: '--lock-duration', kinds: ['queue', 'subscription'] },
  maxDeliveryCount: { flag: '--max-delivery-count', kinds: ['queue', 'subscription'] },
  defaultMessageTtl: { flag: '--default-message-ttl', kinds: ['queue', 'topic', 'subscription'] },
  duplicateDetectionWindow: { flag: '--duplicate-detection-window', kinds: ['queue', 'topic'] },
  autoDeleteOnIdle: { flag: '--auto-delete-on-idle', kinds: ['queue', 'topic', 'subscription'] },
  maxSizeMb: { flag: '--max-size-mb', kinds: ['queue', 'topic'] },
  requiresSession: { flag: '--requires-session', kinds: ['queue', 'subscription'] },
  requiresDuplicateDetection: { flag: '--requires-duplicate-detection', kinds: ['queue', 'topic'] },
  deadLetteringOnExpiration: { flag: '--dead-lettering-on-expiration', kinds: ['queue', 'subscription'] },
  forwardTo: { flag: '--forward-to', kinds: ['queue', 'subscription'] },
  forwardDeadLettersTo: { flag: '--forward-dead-letters-to', kinds: ['queue', 'subscription'] },
  status: { flag: '--status', kinds: ['queue', 'topic', 'subscription'] },
  userMetadata: { flag: '--user-metadata', kinds: ['queue', 'topic', 'subscription'] },
  sqlFilter: { flag: '--sql-filter', kinds: ['rule', 'subscription'] },
  correlation: { flag: '--correlation', kinds: ['rule', 'subscription'] },
  param: { flag: '--param', kinds: ['rule', 'subscription'] },
  sqlAction: { flag: '--sql-action', kinds: ['rule', 'subscription'] },
  actionParam: { flag: '--action-param', kinds: ['rule', 'subscription'] },
};

/** Adds the entity options to a create or update command. */
function entityOptions(cmd: Command): Command {
  return cmd
    .option('--lock-duration <iso>', 'LockDuration, PT5S to PT5M (queue, subscription)', duration('lockDuration'))
    .option('--max-delivery-count <n>', 'MaxDeliveryCount, 1 to 2147483647 (queue, subscription)', integer(1, 2147483647))
    .option('--default-message-ttl <iso>', 'DefaultMessageTimeToLive, at least PT1S', duration('defaultMessageTtl'))
    .option('--duplicate-detection-window <iso>', 'DuplicateDetectionHistoryTimeWindow, PT20S to P7D (queue, topic)', duration('duplicateDetectionWindow'))
    .option('--auto-delete-on-idle <iso>', 'AutoDeleteOnIdle, at least PT5M', duration('autoDeleteOnIdle'))
    .option('--max-size-mb <n>', 'MaxSizeInMegabytes, 1 to 81920 (queue, topic)', integer(1, 81920))
    .option('--requires-session', 'RequiresSession (create only; queue, subscription)')
    .option('--requires-duplicate-detection', 'RequiresDuplicateDetection (create only; queue, topic)')
    .option('--dead-lettering-on-expiration', 'DeadLetteringOnMessageExpiration on (queue, subscription)')
    .option('--no-dead-lettering-on-expiration', 'DeadLetteringOnMessageExpiration off')
    .option('--forward-to <entity>', 'ForwardTo: a queue or topic (queue, subscription)')
    .option('--forward-dead-letters-to <entity>', 'ForwardDeadLetteredMessagesTo: a queue or topic')
    .addOption(new Option('--status <status>', 'Status').choices(STATUSES))
    .option('--user-metadata <text>', 'UserMetadata, at most 1024 characters', metadata)
    .option('--sql-filter <expr>', "a SQL filter (rule; a subscription's default rule)")
    .option('--correlation <key=value>', 'a correlation filter field: correlation-id, message-id, to, reply-to, subject, session-id, reply-to-session-id, content-type, or an application property (repeatable)', collect(keyValue))
    .option('--param <@name=value>', 'a SQL filter parameter; numbers, true/false, else text (repeatable)', collect(keyValue))
    .option('--sql-action <expr>', 'a SQL rule action (SET/REMOVE)')
    .option('--action-param <@name=value>', 'a SQL action parameter (repeatable)', collect(keyValue));
}

const CORRELATION_FIELDS: Record<string, string> = {
  'correlation-id': 'CorrelationId',
  'message-id': 'MessageId',
  to: 'To',
  'reply-to': 'ReplyTo',
  subject: 'Label',
  label: 'Label',
  'session-id': 'SessionId',
  'reply-to-session-id': 'ReplyToSessionId',
  'content-type': 'ContentType',
};

// `42` and `1.5` are numbers, `true`/`false` booleans, `'text'` or anything else text.
function plainValue(text: string): string | number | boolean {
  if (/^-?\d{1,15}(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  const quoted = /^'(.*)'$/s.exec(text);
  return quoted ? quoted[1]! : text;
}

function pairs(list: string[], tag: string): string {
  const items = list.map((kv) => {
    const i = kv.indexOf('=');
    return `<KeyValueOfstringanyType><Key>${esc(kv.slice(0, i))}</Key>${typedValue(plainValue(kv.slice(i + 1)))}</KeyValueOfstringanyType>`;
  });
  return items.length ? `<${tag}>${items.join('')}</${tag}>` : '';
}

/** The `<Filter>` and `<Action>` of a rule from the flags; undefined when no filter flag was given. */
function ruleBody(f: EntityFlags): string | undefined {
  if (f.sqlFilter !== undefined && f.correlation?.length) {
    throw new UsageError('give either --sql-filter or --correlation, not both');
  }
  let filter: string;
  if (f.sqlFilter !== undefined) {
    filter = `<Filter i:type="SqlFilter"><SqlExpression>${esc(f.sqlFilter)}</SqlExpression>${pairs(f.param ?? [], 'Parameters')}</Filter>`;
  } else if (f.correlation?.length) {
    const fields: string[] = [];
    const props: string[] = [];
    for (const kv of f.correlation) {
      const i = kv.indexOf('=');
      const field = CORRELATION_FIELDS[kv.slice(0, i).toLowerCase()];
      if (field) fields.push(`<${field}>${esc(kv.slice(i + 1))}</${field}>`);
      else props.push(kv);
    }
    filter = `<Filter i:type="CorrelationFilter">${fields.join('')}${pairs(props, 'Properties')}</Filter>`;
  } else {
    if (f.sqlAction !== undefined || f.param?.length) throw new UsageError('--sql-action and --param need --sql-filter or --correlation');
    return undefined;
  }
  const action =
    f.sqlAction === undefined
      ? '<Action i:type="EmptyRuleAction"/>'
      : `<Action i:type="SqlRuleAction"><SqlExpression>${esc(f.sqlAction)}</SqlExpression>${pairs(f.actionParam ?? [], 'Parameters')}</Action>`;
  return filter + action;
}

/** A usage mistake: one line, exit 2. */
class UsageError extends Error {}

const b = (v: boolean | undefined): string | undefined => (v === undefined ? undefined : String(v));

function description(kind: Kind, f: EntityFlags, name: string): string {
  for (const [key, { flag, kinds }] of Object.entries(APPLIES)) {
    const v = f[key as keyof EntityFlags];
    if (v !== undefined && !(Array.isArray(v) && v.length === 0) && !kinds.includes(kind)) throw new UsageError(`${flag} does not apply to a ${kind}`);
  }
  switch (kind) {
    case 'queue':
      return entry(
        'QueueDescription',
        elements([
          ['LockDuration', f.lockDuration],
          ['MaxSizeInMegabytes', f.maxSizeMb],
          ['RequiresDuplicateDetection', b(f.requiresDuplicateDetection)],
          ['RequiresSession', b(f.requiresSession)],
          ['DefaultMessageTimeToLive', f.defaultMessageTtl],
          ['DeadLetteringOnMessageExpiration', b(f.deadLetteringOnExpiration)],
          ['DuplicateDetectionHistoryTimeWindow', f.duplicateDetectionWindow],
          ['MaxDeliveryCount', f.maxDeliveryCount],
          ['Status', f.status],
          ['ForwardTo', f.forwardTo],
          ['UserMetadata', f.userMetadata],
          ['AutoDeleteOnIdle', f.autoDeleteOnIdle],
          ['ForwardDeadLetteredMessagesTo', f.forwardDeadLettersTo],
        ]),
      );
    case 'topic':
      return entry(
        'TopicDescription',
        elements([
          ['DefaultMessageTimeToLive', f.defaultMessageTtl],
          ['MaxSizeInMegabytes', f.maxSizeMb],
          ['RequiresDuplicateDetection', b(f.requiresDuplicateDetection)],
          ['DuplicateDetectionHistoryTimeWindow', f.duplicateDetectionWindow],
          ['Status', f.status],
          ['UserMetadata', f.userMetadata],
          ['AutoDeleteOnIdle', f.autoDeleteOnIdle],
        ]),
      );
    case 'subscription': {
      const rule = ruleBody(f);
      return entry(
        'SubscriptionDescription',
        elements([
          ['LockDuration', f.lockDuration],
          ['RequiresSession', b(f.requiresSession)],
          ['DefaultMessageTimeToLive', f.defaultMessageTtl],
          ['DeadLetteringOnMessageExpiration', b(f.deadLetteringOnExpiration)],
        ]) +
          (rule ? `<DefaultRuleDescription>${rule}<Name>$Default</Name></DefaultRuleDescription>` : '') +
          elements([
            ['MaxDeliveryCount', f.maxDeliveryCount],
            ['Status', f.status],
            ['ForwardTo', f.forwardTo],
            ['UserMetadata', f.userMetadata],
            ['ForwardDeadLetteredMessagesTo', f.forwardDeadLettersTo],
            ['AutoDeleteOnIdle', f.autoDeleteOnIdle],
          ]),
      );
    }
    case 'rule': {
      const rule = ruleBody(f);
      if (rule === undefined) throw new UsageError('a rule needs --sql-filter <expr> or --correlation <key=value>');
      return entry('RuleDescription', `${rule}<Name>${esc(name)}</Name>`);
    }
  }
}

/** The Atom path of an entity from its kind and names (queue/topic: 1 name, subscription: 2, rule: 3). */
export function entityPath(kind: Kind, names: string[]): string {
  const need = { queue: 1, topic: 1, subscription: 2, rule: 3 }[kind];
  const usage = { queue: '<queue>', topic: '<topic>', subscription: '<topic> <subscription>', rule: '<topic> <subscription> <rule>' }[kind];
  if (names.length !== need) throw new UsageError(`a ${kind} is named by ${usage}; got ${names.length} name(s)`);
  if (kind === 'subscription') return `${names[0]}/Subscriptions/${names[1]}`;
  if (kind === 'rule') return `${names[0]}/Subscriptions/${names[1]}/Rules/${names[2]}`;
  return names[0]!;
}

function kindOf(v: string): Kind {
  const k = v.toLowerCase().replace(/s$/, '') as Kind;
  if (!ENTITY_KINDS.includes(k)) throw new UsageError(`unknown entity kind '${v}'; expected one of ${ENTITY_KINDS.join(', ')}`);
  return k;
}

function target(f: EntityFlags): AdminTarget {
  return { url: f.url, keyName: f.keyName, key: f.key };
}

function out(line: string): void {
  process.stdout.write(line + '\n');
}

async function createOrUpdate(verb: 'create' | 'update', kindText: string, names: string[], f: EntityFlags): Promise<void> {
  const kind = kindOf(kindText);
  const path = entityPath(kind, names);
  const body = description(kind, f, names[names.length - 1]!);
  const doc = await atomRequest(target(f), 'PUT', path, { body, update: verb === 'update' });
  const d = descriptionOf(doc) ?? {};
  if (f.json) return out(JSON.stringify(d, null, 2));
  out(`${verb === 'create' ? 'created' : 'updated'} ${kind} '${path}'`);
}

async function remove(kindText: string, names: string[], f: EntityFlags): Promise<void> {
  const kind = kindOf(kindText);
  const path = entityPath(kind, names);
  await atomRequest(target(f), 'DELETE', path);
  out(f.json ? JSON.stringify({ deleted: path }) : `deleted ${kind} '${path}'`);
}

const text = (d: Description, k: string): string => {
  const v = d[k];
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return String((v as Record<string, unknown>)['#text'] ?? '');
  return String(v);
};
const count = (d: Description, k: string): string => text((d['CountDetails'] ?? {}) as Description, k);
// Service Bus answers ForwardTo as the entity's absolute URI (sb://<namespace host>/<name>); the table names the entity.
const forwardName = (d: Description): string => text(d, 'ForwardTo').replace(/^sb:\/\/[^/]*\//i, '');

function ruleText(d: Description): string {
  const f = (d['Filter'] ?? {}) as Description;
  const sql = text(f, 'SqlExpression');
  if (sql) return sql;
  return Object.entries(f)
    .filter(([k]) => !k.startsWith('@_') && k !== 'Properties')
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');
}

async function list(kindText: string, names: string[], f: EntityFlags): Promise<void> {
  const kind = kindOf(kindText);
  const parent = { queue: 0, topic: 0, subscription: 1, rule: 2 }[kind];
  if (names.length !== parent) throw new UsageError(`list ${kind}s takes ${['no name', '<topic>', '<topic> <subscription>'][parent]}`);
  const path = { queue: '$Resources/Queues', topic: '$Resources/Topics', subscription: `${names[0]}/Subscriptions`, rule: `${names[0]}/Subscriptions/${names[1]}/Rules` }[kind];
  const rows = await listAll(target(f), path);
  if (f.json) return out(JSON.stringify(rows.map((r) => ({ name: r.name, ...r.d })), null, 2));
  if (!rows.length) return out(`(no ${kind}s)`);
  if (kind === 'queue' || kind === 'subscription') {
    const table = rows.map(({ name, d }) => [name, text(d, 'LockDuration'), text(d, 'MaxDeliveryCount'), text(d, 'RequiresSession'), text(d, 'Status'), count(d, 'ActiveMessageCount'), count(d, 'DeadLetterMessageCount'), forwardName(d)]);
    return out(formatTable(['NAME', 'LOCK', 'MAX-DELIVERY', 'SESSIONS', 'STATUS', 'ACTIVE', 'DEAD-LETTERED', 'FORWARD-TO'], table));
  }
  if (kind === 'topic') {
    return out(formatTable(['NAME', 'SUBSCRIPTIONS', 'TTL', 'STATUS'], rows.map(({ name, d }) => [name, text(d, 'SubscriptionCount'), text(d, 'DefaultMessageTimeToLive'), text(d, 'Status')])));
  }
  const table = rows.map(({ name, d }) => [name, ruleText(d), text((d['Action'] ?? {}) as Description, 'SqlExpression')]);
  out(formatTable(['NAME', 'FILTER', 'ACTION'], table));
}

/** Runs a subcommand: a usage mistake is one line with exit 2, a refusal by the broker one line with exit 1. */
async function run(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`peeklock: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (!(err instanceof AdminError)) throw err;
    process.stderr.write(`peeklock: ${err.message}\n`);
    process.exitCode = 1;
  }
}

/** Adds create, update, delete and list under `entities`; `connection` adds --url, --key-name, --key and --json. */
export function addEntityCommands(entities: Command, connection: (cmd: Command) => Command): void {
  const kinds = ENTITY_KINDS.join('|');
  entityOptions(connection(entities.command('create').argument('<kind>', kinds).argument('<names...>', 'the entity, and its topic and subscription for a subscription or rule')))
    .description('create a queue, topic, subscription or rule (unset properties get the Service Bus defaults)')
    .action((kind: string, names: string[], f: EntityFlags) => run(() => createOrUpdate('create', kind, names, f)));
  entityOptions(connection(entities.command('update').argument('<kind>', kinds).argument('<names...>')))
    .description('change properties of an entity (those not given keep their values); a rule gets the filter and action given')
    .action((kind: string, names: string[], f: EntityFlags) => run(() => createOrUpdate('update', kind, names, f)));
  connection(entities.command('delete').argument('<kind>', kinds).argument('<names...>'))
    .description('delete an entity with its messages (a topic with its subscriptions)')
    .action((kind: string, names: string[], f: EntityFlags) => run(() => remove(kind, names, f)));
  connection(entities.command('list').argument('<kind>', `${kinds} (plural too)`).argument('[names...]', 'the topic (subscriptions), or topic and subscription (rules)'))
    .description('list queues, topics, a topic\'s subscriptions or a subscription\'s rules with their main properties')
    .action((kind: string, names: string[], f: EntityFlags) => run(() => list(kind, names, f)));
}
