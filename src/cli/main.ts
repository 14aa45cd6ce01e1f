// The `peeklock` command line (commander). `start` loads the config file, applies flag overrides, starts
// the broker and logs one `listening` line; SIGINT/SIGTERM stop it gracefully with exit code 0. A bad
// config or flag prints one line and exits with code 2.

import { Command, InvalidArgumentError } from 'commander';
import { fileURLToPath } from 'node:url';
import { startPeeklock } from '../app/app.js';
import { addAdminCommands } from './admin.js';
import { ConfigError, loadConfig } from '../config/load.js';
import type { BrokerSettings, PeeklockConfig } from '../config/types.js';
import { createLogger, type Logger } from '../log/logger.js';

/** The shipped default config, next to the package (config/peeklock.json). */
export const DEFAULT_CONFIG = fileURLToPath(new URL('../../config/peeklock.json', import.meta.url));

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parsePort(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 65535) throw new InvalidArgumentError('must be an integer from 0 to 65535');
  return n;
}

function parseLevel(v: string): string {
  if (!LEVELS.includes(v)) throw new InvalidArgumentError(`must be one of ${LEVELS.join(', ')}`);
  return v;
}

interface StartFlags {
  config: string;
  host?: string;
  port?: number;
  httpPort?: number;
  dataDir?: string;
  logLevel?: string;
}

/** Applies command-line overrides to the file's `Broker` settings. */
export function applyFlags(config: PeeklockConfig, flags: StartFlags): PeeklockConfig {
  const broker: BrokerSettings = { ...config.broker };
  if (flags.host !== undefined) broker.host = flags.host;
  if (flags.port !== undefined) broker.port = flags.port;
  if (flags.httpPort !== undefined) broker.httpPort = flags.httpPort;
  if (flags.dataDir !== undefined) broker.dataDir = flags.dataDir;
  if (flags.logLevel !== undefined) broker.logLevel = flags.logLevel as BrokerSettings['logLevel'];
  return { ...config, broker };
}

function fail(line: string): never {
  process.stderr.write(`peeklock: ${line}\n`);
  process.exit(2);
}

// lmdb-js can raise a second, unhandled rejection for a commit that already failed on its own promise
// (docs/durability.md, "Disk full and disk errors"); that one is logged and survived. Anything else unexpected is
// fatal.
function installProcessHandlers(log: Logger): void {
  process.on('unhandledRejection', (reason) => {
    const text = String((reason as Error)?.message ?? reason);
    if (/commit failed|write error|no space|MDB_/i.test(text)) {
      log.error({ err: reason }, 'store commit failure (survived)');
      return;
    }
    log.fatal({ err: reason }, 'unhandled rejection');
    process.exit(1);
  });
}

async function start(flags: StartFlags): Promise<void> {
  let config: PeeklockConfig;
  try {
    config = applyFlags(loadConfig(flags.config), flags);
  } catch (err) {
    if (err instanceof ConfigError) fail(`${err.source ?? flags.config}: ${err.message}`);
    throw err;
  }
  const log = createLogger(config.broker.logLevel);
  installProcessHandlers(log);
  for (const w of config.warnings) log.warn({ config: flags.config }, w);
  let running;
  try {
    running = await startPeeklock({
      config,
      log,
      onFatal: (err) => {
        log.fatal({ err }, 'the message store failed for good; exiting so a supervisor can restart the broker');
        process.exit(1);
      },
    });
  } catch (err) {
    log.fatal({ err }, 'start-up failed');
    process.exitCode = 1;
    return;
  }
  const counts = running.broker.entities.all().map((q) => ({ entity: q.path, ...q.counts() }));
  log.info({ host: running.host, port: running.port, httpPort: running.httpPort, dataDir: config.broker.dataDir, entities: counts.length }, 'listening');
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    running.close().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

/** Runs the CLI with `argv` (process.argv form). */
export async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name('peeklock')
    .description("A durable, self-hosted broker that speaks Azure Service Bus's dialect of AMQP 1.0")
    .exitOverride((err) => {
      if (err.exitCode === 0) process.exit(0);
      process.exit(2);
    })
    .configureOutput({ writeErr: (s) => process.stderr.write(s.trim().split('\n')[0] + '\n') });
  program
    .command('start')
    .description('start the broker')
    .option('-c, --config <file>', 'config file (the emulator Config.json format, JSONC)', DEFAULT_CONFIG)
    .option('--host <host>', 'address to bind (overrides Broker.Host)')
    .option('-p, --port <n>', 'AMQP port, 0 for any free port (overrides Broker.Port)', parsePort)
    .option('--http-port <n>', 'HTTP port for health, metrics, admin API and explorer; 0 for any free port (overrides Broker.HttpPort)', parsePort)
    .option('-d, --data-dir <dir>', 'data directory (overrides Broker.DataDir)')
    .option('-l, --log-level <level>', 'log level (overrides Broker.LogLevel)', parseLevel)
    .action((flags: StartFlags) => start(flags));
  addAdminCommands(program);
  await program.parseAsync(argv);
}
