// The admin subcommands of `peeklock` — entities, peek, purge, redrive — which talk to a running broker
// through its admin HTTP API. Human tables by default, `--json` for scripts; failures are one line on
// stderr with exit code 1 (usage errors exit 2, as commander's do).

import { Command, InvalidArgumentError, Option } from 'commander';
import { AdminError, adminFetch, adminJson, apiUrl, ndjsonLines, run, type AdminTarget } from './admin-client.js';
import type { EntityRow } from '../contract/admin-api.js';
import { addEntityCommands } from './entities-cli.js';
import { formatTable, oneLine } from './table.js';

/** The emulator's HTTP port and its default policy, which the admin commands use unless told otherwise. */
export const ADMIN_DEFAULTS = {
  url: 'http://127.0.0.1:5300',
  keyName: 'RootManageSharedAccessKey',
  key: 'SAS_KEY_VALUE',
} as const;

/** The reminder printed with every redrive. */
export const IDEMPOTENCY_NOTE = 'note: redriven messages are delivered again; make sure their consumer is idempotent.';

interface ConnFlags {
  url: string;
  keyName: string;
  key: string;
  json?: boolean;
}

interface MessageRow {
  sequenceNumber: number;
  messageId: string;
  state: string;
  deliveryCount: number;
  enqueuedTimeUtc: string;
  lockedUntilUtc: string | null;
  lockHolder: string | null;
  deadLetterReason: string | null;
  scheduledEnqueueTimeUtc: string | null;
  bodyPreview: string;
}

interface RedriveReply {
  from: string;
  to: string;
  moved: number;
  skipped: number;
  failed: number;
  dryRun: boolean;
  aborted: boolean;
}

function positiveInt(max: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < 1 || n > max) throw new InvalidArgumentError(`must be an integer from 1 to ${max}`);
    return n;
  };
}

function positiveRate(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number of messages per second above 0');
  return n;
}

function keyValue(v: string): string {
  if (v.indexOf('=') <= 0) throw new InvalidArgumentError('must be key=value with a non-empty key');
  return v;
}

/** Adds the connection options every admin command takes. */
function connection(cmd: Command): Command {
  return cmd
    .addOption(new Option('--url <url>', "the broker's HTTP address").env('PEEKLOCK_URL').default(ADMIN_DEFAULTS.url))
    .addOption(
      new Option('--key-name <name>', 'shared access policy name (needs Manage)')
        .env('PEEKLOCK_KEY_NAME')
        .default(ADMIN_DEFAULTS.keyName),
    )
    .addOption(new Option('--key <key>', 'shared access policy key').env('PEEKLOCK_KEY').default(ADMIN_DEFAULTS.key))
    .option('--json', 'print JSON instead of a table');
}

function target(f: ConnFlags): AdminTarget {
  return { url: f.url, keyName: f.keyName, key: f.key };
}

function out(line: string): void {
  process.stdout.write(line + '\n');
}

async function entities(f: ConnFlags): Promise<void> {
  const { entities: list } = await adminJson<{ entities: EntityRow[] }>(target(f), apiUrl(f.url, ['entities']));
  if (f.json) return out(JSON.stringify(list, null, 2));
  const rows = list.map((e) => [
    e.path,
    e.active,
    e.locked,
    e.scheduled,
    e.deferred,
    e.deadLettered + (e.deadLetterAlert ? ' !' : ''),
    e.bytes,
    e.consumers,
  ]);
  out(
    formatTable(['ENTITY', 'ACTIVE', 'LOCKED', 'SCHEDULED', 'DEFERRED', 'DEAD-LETTERED', 'BYTES', 'CONSUMERS'], rows),
  );
  if (list.some((e) => e.deadLetterAlert))
    out('! = dead-letter depth at or above its alert threshold (Broker.DeadLetterAlerts)');
}

interface PeekFlags extends ConnFlags {
  dlq?: boolean;
  scheduled?: boolean;
  deferred?: boolean;
  count: number;
}

async function peek(entity: string, f: PeekFlags): Promise<void> {
  const chosen = (['dlq', 'scheduled', 'deferred'] as const).filter((k) => f[k]);
  if (chosen.length > 1)
    throw new AdminError(`choose one of --dlq, --scheduled, --deferred (got ${chosen.map((c) => '--' + c).join(' ')})`);
  const view = { dlq: 'deadletter', scheduled: 'scheduled', deferred: 'deferred' }[chosen[0] ?? 'dlq'];
  const url = apiUrl(f.url, ['entities', entity, 'messages'], {
    view: chosen.length ? view : 'active',
    count: f.count,
  });
  const { messages } = await adminJson<{ messages: MessageRow[] }>(target(f), url);
  if (f.json) return out(JSON.stringify(messages, null, 2));
  if (!messages.length) return out('(no messages)');
  const rows = messages.map((m) => [
    m.sequenceNumber,
    m.state,
    m.deliveryCount,
    m.lockedUntilUtc ?? '',
    m.lockHolder ?? '',
    m.scheduledEnqueueTimeUtc ?? m.enqueuedTimeUtc,
    m.deadLetterReason ?? '',
    oneLine(m.bodyPreview, 40),
  ]);
  out(
    formatTable(['SEQ', 'STATE', 'DELIVERIES', 'LOCKED-UNTIL', 'LOCK-HOLDER', 'ENQUEUED/DUE', 'REASON', 'BODY'], rows),
  );
}

interface PurgeFlags extends ConnFlags {
  dlq?: boolean;
  yes?: boolean;
}

async function purge(entity: string, f: PurgeFlags): Promise<void> {
  const what = f.dlq ? `the dead-letter queue of '${entity}'` : `every message of '${entity}'`;
  if (!f.yes) throw new AdminError(`purge deletes ${what} for good; add --yes to confirm`);
  const r = await adminJson<{ entity: string; purged: number }>(
    target(f),
    apiUrl(f.url, ['entities', entity, 'purge']),
    {
      method: 'POST',
      body: { view: f.dlq ? 'deadletter' : 'active' },
    },
  );
  out(f.json ? JSON.stringify(r) : `purged ${r.purged} message(s) from ${r.entity}`);
}

interface RedriveFlags extends ConnFlags {
  to?: string;
  reason?: string;
  where?: string;
  rate?: number;
  max?: number;
  dryRun?: boolean;
}

const BROKEN =
  'the connection to the broker broke before the redrive finished; each move is atomic, so run `peeklock entities` to see where it got to';

/** The reply's NDJSON lines; a connection that breaks mid-stream becomes one AdminError. */
async function* readStream(res: Response): AsyncGenerator<Record<string, unknown>> {
  try {
    yield* ndjsonLines(res);
  } catch (err) {
    if (err instanceof AdminError) throw err;
    throw new AdminError(BROKEN);
  }
}

async function redrive(queue: string, f: RedriveFlags): Promise<void> {
  process.stderr.write(IDEMPOTENCY_NOTE + '\n');
  const body = { to: f.to, reason: f.reason, where: f.where, rate: f.rate, max: f.max, dryRun: f.dryRun };
  const res = await adminFetch(target(f), apiUrl(f.url, ['entities', queue, 'redrive']), {
    method: 'POST',
    body,
    stream: true,
  });
  const tty = process.stderr.isTTY === true;
  let result: RedriveReply | undefined;
  let lastLine = 0;
  let progressShown = false;
  for await (const line of readStream(res)) {
    if (line.error) {
      const e = line.error as { code?: string; message?: string };
      throw new AdminError(`${e.code ?? 'error'}: ${e.message ?? 'the redrive failed'}`);
    }
    if (line.result) result = line.result as RedriveReply;
    const p = line.progress as { moved: number; skipped: number; failed: number } | undefined;
    if (p && (tty || Date.now() - lastLine >= 1000)) {
      lastLine = Date.now();
      progressShown = true;
      const text = `redriving: moved ${p.moved}, skipped ${p.skipped}, failed ${p.failed}`;
      process.stderr.write(tty ? `\r${text}` : `${text}\n`);
    }
  }
  if (tty && progressShown) process.stderr.write('\n');
  if (!result) throw new AdminError(BROKEN);
  if (f.json) return out(JSON.stringify(result));
  const route = `${result.from} -> ${result.to}`;
  if (result.dryRun)
    return out(`dry run (${route}): would move ${result.moved}, skip ${result.skipped}; nothing was moved`);
  out(
    `${route}: moved ${result.moved}, skipped ${result.skipped}, failed ${result.failed}${result.aborted ? ' (stopped early: the broker is shutting down)' : ''}`,
  );
  if (result.failed > 0) process.exitCode = 1;
}

/** Adds `entities`, `peek`, `purge` and `redrive` to the program. */
export function addAdminCommands(program: Command): void {
  const entitiesCmd = connection(program.command('entities').description('list queues with their message counts; create, update, delete and list entities')).action(
    (f: ConnFlags) => run(() => entities(f)),
  );
  // `entities create … --url U`: the subcommand's own --url, not the bare listing's (options belong to the
  // command they follow, at every level).
  program.enablePositionalOptions();
  entitiesCmd.enablePositionalOptions();
  addEntityCommands(entitiesCmd, connection);
  connection(
    program
      .command('peek <entity>')
      .description('show messages without locking them: active (default), --dlq, --scheduled or --deferred')
      .option('--dlq', 'the dead-letter queue')
      .option('--scheduled', 'scheduled messages')
      .option('--deferred', 'deferred messages')
      .option('--count <n>', 'how many (1 to 1000)', positiveInt(1000), 20),
  ).action((entity: string, f: PeekFlags) => run(() => peek(entity, f)));
  connection(
    program
      .command('purge <entity>')
      .description('delete every message of a queue, or of its dead-letter queue with --dlq')
      .option('--dlq', 'purge the dead-letter queue')
      .option('--yes', 'confirm the purge'),
  ).action((entity: string, f: PurgeFlags) => run(() => purge(entity, f)));
  connection(
    program
      .command('redrive <queue>')
      .description('move dead-lettered messages back to their queue (or --to another); consumers must be idempotent')
      .option('--to <entity>', 'target entity (default: the queue itself)')
      .option('--reason <reason>', 'only messages with this DeadLetterReason')
      .option('--where <key=value>', 'only messages whose application property key equals value', keyValue)
      .option('--rate <n>', 'at most n messages per second', positiveRate)
      .option('--max <n>', 'move at most n messages', positiveInt(Number.MAX_SAFE_INTEGER))
      .option('--dry-run', 'report what would move, move nothing'),
  ).action((queue: string, f: RedriveFlags) => run(() => redrive(queue, f)));
}
