// `peeklock messages send|resubmit|delete|dead-letter`: the explorer's message actions from a terminal,
// through the same admin HTTP routes (and `history`, one message's delivery attempts: history.ts). A selection is explicit sequence numbers (--seq) or a filter
// (--reason, --subject, --older-than, --where, or --all for the whole view); --dry-run prints the count
// without acting, and delete needs --yes, as purge does.

import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { AdminError, adminJson, apiUrl, run, type AdminTarget } from './admin-client.js';
import { ADMIN_DEFAULTS } from './admin.js';
import { printHistory } from './history.js';

/** Application property types `--property name:type=value` accepts (the server checks each value). */
const PROPERTY_TYPES = ['string', 'int', 'long', 'double', 'boolean', 'timestamp'];

interface ConnFlags {
  url: string;
  keyName: string;
  key: string;
  json?: boolean;
}

interface SendFlags extends ConnFlags {
  body?: string;
  bodyFile?: string;
  contentType?: string;
  subject?: string;
  correlationId?: string;
  messageId?: string;
  sessionId?: string;
  ttl?: number;
  schedule?: string;
  property: Record<string, unknown>;
}

interface SelectFlags extends ConnFlags {
  dlq?: boolean;
  scheduled?: boolean;
  deferred?: boolean;
  seq?: number[];
  reason?: string;
  subject?: string;
  olderThan?: number;
  where?: string;
  all?: boolean;
  dryRun?: boolean;
  yes?: boolean;
  to?: string;
  keep?: boolean;
  deadLetterReason?: string;
  description?: string;
}

interface ActionReply {
  entity: string;
  to?: string;
  count: number;
  skipped: number;
  dryRun: boolean;
}

function connection(cmd: Command): Command {
  return cmd
    .addOption(new Option('--url <url>', "the broker's HTTP address").env('PEEKLOCK_URL').default(ADMIN_DEFAULTS.url))
    .addOption(
      new Option('--key-name <name>', 'shared access policy name (needs Manage)').env('PEEKLOCK_KEY_NAME').default(ADMIN_DEFAULTS.keyName),
    )
    .addOption(new Option('--key <key>', 'shared access policy key').env('PEEKLOCK_KEY').default(ADMIN_DEFAULTS.key))
    .option('--json', 'print the JSON reply');
}

function target(f: ConnFlags): AdminTarget {
  return { url: f.url, keyName: f.keyName, key: f.key };
}

// `name=value` is a string; `name:type=value` names the AMQP type.
function property(v: string, acc: Record<string, unknown>): Record<string, unknown> {
  const eq = v.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('must be name=value or name:type=value');
  const [name, type] = v.slice(0, eq).split(':') as [string, string | undefined];
  const value = v.slice(eq + 1);
  if (type === undefined) return { ...acc, [name]: value };
  if (!PROPERTY_TYPES.includes(type)) throw new InvalidArgumentError(`type '${type}' must be one of ${PROPERTY_TYPES.join(', ')}`);
  return { ...acc, [name]: { type, value: type === 'boolean' ? value === 'true' : value } };
}

function seqList(v: string, acc: number[] = []): number[] {
  const nums = v.split(',').map((s) => s.trim());
  if (nums.some((s) => !/^\d+$/.test(s) || Number(s) < 1)) throw new InvalidArgumentError('must be sequence numbers (1 or more), comma-separated');
  return [...acc, ...nums.map(Number)];
}

function seconds(v: string): number {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('must be a whole number of seconds');
  return Number(v);
}

async function send(entity: string, f: SendFlags): Promise<void> {
  if ((f.body === undefined) === (f.bodyFile === undefined)) throw new AdminError('give the body with --body <text> or --body-file <path> (one of them)');
  let body = f.body;
  let bodyEncoding = 'text';
  if (f.bodyFile !== undefined) {
    try {
      body = readFileSync(f.bodyFile).toString('base64');
    } catch (err) {
      throw new AdminError(`--body-file ${f.bodyFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    bodyEncoding = 'base64';
  }
  const request = {
    body,
    bodyEncoding,
    contentType: f.contentType,
    subject: f.subject,
    correlationId: f.correlationId,
    messageId: f.messageId,
    sessionId: f.sessionId,
    timeToLiveSeconds: f.ttl,
    scheduledEnqueueTimeUtc: f.schedule,
    applicationProperties: Object.keys(f.property).length ? f.property : undefined,
  };
  const r = await adminJson<{ entity: string; messageId: string; sequenceNumber: number }>(target(f), apiUrl(f.url, ['entities', entity, 'send']), {
    method: 'POST',
    body: request,
  });
  process.stdout.write(f.json ? JSON.stringify(r) + '\n' : `sent message ${r.messageId} to ${r.entity} (sequence number ${r.sequenceNumber})\n`);
}

async function act(action: 'resubmit' | 'delete' | 'dead-letter', entity: string, f: SelectFlags): Promise<void> {
  const views = (['dlq', 'scheduled', 'deferred'] as const).filter((k) => f[k]);
  if (views.length > 1) throw new AdminError(`choose one of --dlq, --scheduled, --deferred (got ${views.map((v) => '--' + v).join(' ')})`);
  const view = views.length ? { dlq: 'deadletter', scheduled: 'scheduled', deferred: 'deferred' }[views[0]!] : 'active';
  const filter: Record<string, unknown> = {};
  if (f.reason !== undefined) filter.reason = f.reason;
  if (f.subject !== undefined) filter.subject = f.subject;
  if (f.olderThan !== undefined) filter.olderThanSeconds = f.olderThan;
  if (f.where !== undefined) filter.property = f.where;
  const filtered = Object.keys(filter).length > 0 || f.all === true;
  if (f.seq?.length && filtered) throw new AdminError('choose --seq or a filter (--reason, --subject, --older-than, --where, --all), not both');
  if (!f.seq?.length && !filtered)
    throw new AdminError('choose the messages: --seq <n,...>, a filter (--reason, --subject, --older-than, --where), or --all');
  if (action === 'delete' && !f.yes && !f.dryRun) throw new AdminError('delete removes the messages for good; add --yes to confirm (or --dry-run to count them)');
  const body: Record<string, unknown> = { view, dryRun: f.dryRun === true };
  if (f.seq?.length) body.sequenceNumbers = f.seq;
  else body.filter = filter;
  if (f.to !== undefined) body.to = f.to;
  if (f.keep) body.keepOriginal = true;
  if (f.deadLetterReason !== undefined) body.deadLetterReason = f.deadLetterReason;
  if (f.description !== undefined) body.deadLetterErrorDescription = f.description;
  const r = await adminJson<ActionReply>(target(f), apiUrl(f.url, ['entities', entity, action]), { method: 'POST', body });
  if (f.json) return void process.stdout.write(JSON.stringify(r) + '\n');
  const verb = { resubmit: 'resubmitted', delete: 'deleted', 'dead-letter': 'dead-lettered' }[action];
  const where = `${r.entity}${r.to ? ` -> ${r.to}` : ''}`;
  process.stdout.write(
    r.dryRun
      ? `dry run (${where}): ${r.count} message(s) would be ${verb}; nothing changed\n`
      : `${where}: ${verb} ${r.count} message(s)${r.skipped ? `, skipped ${r.skipped} (gone or locked by a receiver)` : ''}\n`,
  );
}

function selection(cmd: Command): Command {
  return connection(
    cmd
      .option('--dlq', 'messages in the dead-letter queue')
      .option('--scheduled', 'scheduled messages')
      .option('--deferred', 'deferred messages')
      .option('--seq <n,...>', 'these sequence numbers (repeatable)', seqList)
      .option('--reason <reason>', 'only messages with this DeadLetterReason')
      .option('--subject <subject>', 'only messages with this subject (label)')
      .option('--older-than <seconds>', 'only messages enqueued longer ago than this', seconds)
      .option('--where <key=value>', 'only messages whose application property key equals value')
      .option('--all', 'every message of the view (active unless --dlq, --scheduled or --deferred)')
      .option('--dry-run', 'print how many messages would be affected, change nothing'),
  );
}

/** Adds `messages send|resubmit|delete|dead-letter|history` to the program. */
export function addMessageCommands(program: Command): void {
  const messages = program.command('messages').description('send, resubmit, delete or dead-letter messages through the admin API');
  connection(
    messages
      .command('send <entity>')
      .description('send one message to a queue or topic')
      .option('--body <text>', 'the body as text (UTF-8)')
      .option('--body-file <path>', 'the body from a file, byte for byte')
      .option('--content-type <type>', 'content type, e.g. application/json')
      .option('--subject <subject>', 'subject (label)')
      .option('--correlation-id <id>', 'correlation id')
      .option('--message-id <id>', 'message id (default: a new one)')
      .option('--session-id <id>', 'session id (needed by session-enabled entities)')
      .option('--ttl <seconds>', 'time to live', seconds)
      .option('--schedule <iso-time>', 'scheduled enqueue time, e.g. 2030-01-01T00:00:00Z')
      .option('-p, --property <name[:type]=value>', `application property (repeatable; type: ${PROPERTY_TYPES.join(', ')})`, property, {}),
  ).action((entity: string, f: SendFlags) => run(() => send(entity, f)));
  selection(
    messages
      .command('resubmit <entity>')
      .description("send copies of messages again: to their queue, or a subscription's to its topic (or --to); the originals are removed")
      .option('--to <entity>', 'target queue or topic')
      .option('--keep', 'keep the originals where they are'),
  ).action((entity: string, f: SelectFlags) => run(() => act('resubmit', entity, f)));
  selection(messages.command('delete <entity>').description('delete messages for good').option('--yes', 'confirm the delete')).action(
    (entity: string, f: SelectFlags) => run(() => act('delete', entity, f)),
  );
  selection(
    messages
      .command('dead-letter <entity>')
      .description('move messages to the dead-letter queue')
      .option('--dead-letter-reason <reason>', 'the DeadLetterReason to set (default ManuallyDeadLettered)')
      .option('--description <text>', 'the DeadLetterErrorDescription to set'),
  ).action((entity: string, f: SelectFlags) => run(() => act('dead-letter', entity, f)));
  connection(
    messages
      .command('history <entity> <seq>')
      .description('show one message\'s delivery attempts, their overlaps and the pattern they form')
      .option('--dlq', 'the message is in the dead-letter queue'),
  ).action((entity: string, seq: string, f: ConnFlags & { dlq?: boolean }) =>
    run(() => {
      if (!/^\d+$/.test(seq) || Number(seq) < 1) throw new AdminError(`SEQ ${JSON.stringify(seq)}: must be a sequence number (1 or more)`);
      return printHistory(target(f), entity, Number(seq), f.dlq === true, f.json === true);
    }),
  );
}
