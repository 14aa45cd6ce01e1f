// The `peeklock` command line (commander). `start` loads the config file, applies flag overrides, starts
// the broker and logs one `listening` line; SIGINT/SIGTERM stop it gracefully with exit code 0. Every start-up
// failure ends in a few words on stderr naming the cause and the fix, never a stack (unless --log-level debug):
// exit code 2 for a mistake in the flags or the config file, 1 for everything else (port taken, data directory
// locked or unusable, store from a newer version, disk full). `start --container` is how the image runs it, as a
// stand-in for the Service Bus emulator's container (src/cli/container.ts).

import { Command, InvalidArgumentError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPeeklock } from '../app/app.js';
import { addAdminCommands } from './admin.js';
import { addMessageCommands } from './messages.js';
import { addCertCommand } from './cert.js';
import { containerStart, ContainerEnvError, EMULATOR_CONFIG, EMULATOR_READY_LINE, logContainerStart, type ContainerStart } from './container.js';
import { ConfigError, loadConfig } from '../config/load.js';
import type { BrokerSettings, PeeklockConfig } from '../config/types.js';
import { createLogger, defaultLogFormat, LOG_FORMATS, type LogFormat, type Logger } from '../log/logger.js';

/** The shipped default config, next to the package (config/peeklock.json). */
export const DEFAULT_CONFIG = fileURLToPath(new URL('../../config/peeklock.json', import.meta.url));

/** This package's version, from its package.json (shipped in every install). */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parsePort(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 65535) throw new InvalidArgumentError('must be an integer from 0 to 65535');
  return n;
}

function parseTlsPort(v: string): number {
  if (v === '-1') return -1;
  try {
    return parsePort(v);
  } catch {
    throw new InvalidArgumentError('must be an integer from 0 to 65535, or -1 for no TLS listener');
  }
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
  tlsPort?: number;
  dataDir?: string;
  logLevel?: string;
  logFormat?: LogFormat;
  strict?: boolean;
  container?: boolean;
  /** True when --config was given (container mode then leaves the file alone). */
  configGiven?: boolean;
}

/** Applies command-line overrides to the file's `Broker` settings. */
export function applyFlags(config: PeeklockConfig, flags: StartFlags): PeeklockConfig {
  const broker: BrokerSettings = { ...config.broker };
  if (flags.host !== undefined) broker.host = flags.host;
  if (flags.port !== undefined) broker.port = flags.port;
  if (flags.httpPort !== undefined) broker.httpPort = flags.httpPort;
  if (flags.tlsPort !== undefined) broker.tlsPort = flags.tlsPort;
  if (flags.dataDir !== undefined) broker.dataDir = flags.dataDir;
  if (flags.logLevel !== undefined) broker.logLevel = flags.logLevel as BrokerSettings['logLevel'];
  return { ...config, broker };
}

function fail(lines: string[], code: number): never {
  process.stderr.write(lines.map((l, i) => (i === 0 ? `peeklock: ${l}\n` : `  ${l}\n`)).join(''));
  process.exit(code);
}

/** The lines for a config error: the file once, then each problem (and unknown key) on a line of its own. */
export function configErrorLines(err: ConfigError, file: string): string[] {
  const source = err.source ?? file;
  const all = [...err.problems, ...err.warnings.map((w) => `warning: ${w}`)];
  if (all.length === 1) return [`${source}: ${all[0]}`];
  const n = err.problems.length;
  return [`${source}: ${n} problem${n === 1 ? '' : 's'}`, ...all];
}

/** The one line for a start-up failure: a user-facing error's own message, or the cause otherwise. */
export function startupFailureLine(err: unknown): string {
  if ((err as { userFacing?: unknown } | null)?.userFacing === true) return (err as Error).message;
  const text = err instanceof Error ? err.message : String(err);
  return `start-up failed: ${text.split('\n')[0]} (run with --log-level debug for details)`;
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

/** Container mode's reading of the environment, applied to the flags a user did not give. */
function containerFlags(flags: StartFlags): { flags: StartFlags; container?: ContainerStart } {
  if (!flags.container) return { flags };
  let container: ContainerStart;
  try {
    container = containerStart(process.env, DEFAULT_CONFIG);
  } catch (err) {
    if (err instanceof ContainerEnvError) fail([err.message], 2);
    throw err;
  }
  const out = { ...flags };
  if (!flags.configGiven) out.config = container.config;
  else container = { ...container, config: flags.config, configSource: '--config' };
  if (flags.httpPort === undefined && container.httpPort !== undefined) out.httpPort = container.httpPort;
  return { flags: out, container };
}

async function start(given: StartFlags): Promise<void> {
  const { flags, container } = containerFlags(given);
  let config: PeeklockConfig;
  try {
    config = applyFlags(loadConfig(flags.config, { strict: flags.strict }), flags);
  } catch (err) {
    if (err instanceof ConfigError) fail(configErrorLines(err, flags.config), 2);
    throw err;
  }
  const level = config.broker.logLevel;
  const log = createLogger(level, undefined, flags.logFormat ?? defaultLogFormat());
  installProcessHandlers(log);
  for (const w of config.warnings) log.warn(w);
  if (container) logContainerStart(log, container, config.broker.dataDir);
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
    // The stack is for whoever asked for it; everyone else gets the cause and the fix.
    if (level === 'debug' || level === 'trace') log.error({ err }, 'start-up failed');
    fail([startupFailureLine(err)], 1);
  }
  const counts = running.broker.messageCounts().map(({ path, ...c }) => ({ entity: path, ...c }));
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
  // SIGHUP re-reads the TLS certificate (a renewed Broker.Tls.CertFile) without dropping connections.
  process.on('SIGHUP', () => running.reloadTls());
  // Only now: the line is written synchronously, and whoever waits for it may signal us the moment it appears.
  log.info(
    {
      host: running.host,
      port: running.port,
      httpPort: running.httpPort,
      ...(running.tlsPort !== null ? { tlsPort: running.tlsPort } : {}),
      ...(running.httpsPort !== null ? { httpsPort: running.httpsPort } : {}),
      dataDir: path.resolve(config.broker.dataDir),
      config: path.resolve(flags.config),
      entities: counts.length,
    },
    'listening',
  );
  // What the emulator's users wait for (Testcontainers' Service Bus modules, compose health checks).
  if (container) log.info(EMULATOR_READY_LINE);
}

/** Runs the CLI with `argv` (process.argv form). */
export async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name('peeklock')
    .description("A durable, self-hosted broker that speaks Azure Service Bus's dialect of AMQP 1.0")
    .version(VERSION, '-v, --version', 'print the version and exit')
    .exitOverride((err) => {
      if (err.exitCode === 0) process.exit(0);
      process.exit(2);
    })
    // A flag mistake reads like every other refusal: one line, starting with the program's name.
    .configureOutput({ writeErr: (s) => process.stderr.write(`peeklock: ${s.trim().split('\n')[0]!.replace(/^error: /, '')}\n`) });
  program
    .command('start')
    .description('start the broker')
    .option('-c, --config <file>', 'config file (the emulator Config.json format, JSONC)', DEFAULT_CONFIG)
    .option('--host <host>', 'address to bind (overrides Broker.Host)')
    .option('-p, --port <n>', 'AMQP port, 0 for any free port (overrides Broker.Port)', parsePort)
    .option(
      '--http-port <n>',
      'HTTP port for health, metrics, admin API and explorer; 0 for any free port (overrides Broker.HttpPort; default 5300 + AMQP port - 5672)',
      parsePort,
    )
    .option(
      '--tls-port <n>',
      'amqps port (AMQP over TLS 1.2+); 0 for any free port, -1 for none (overrides Broker.TlsPort; default 5671 + AMQP port - 5672, none with --port 0)',
      parseTlsPort,
    )
    .option('-d, --data-dir <dir>', 'data directory, one broker each (overrides Broker.DataDir)')
    .option('-l, --log-level <level>', 'log level (overrides Broker.LogLevel)', parseLevel)
    .addOption(
      new Option('--log-format <format>', 'log lines as JSON or for people (default: pretty on a terminal, else json)').choices(
        LOG_FORMATS,
      ),
    )
    .option('--strict', 'refuse unknown config keys instead of warning about them')
    .option(
      '--container',
      `run as the Service Bus emulator's container does (the image's entry point): ${EMULATOR_CONFIG} when mounted, EMULATOR_HTTP_PORT, its ready line`,
    )
    .action((flags: StartFlags, cmd: Command) => start({ ...flags, configGiven: cmd.getOptionValueSource('config') !== 'default' }));
  addAdminCommands(program);
  addMessageCommands(program);
  addCertCommand(program, DEFAULT_CONFIG, (file) => {
    try {
      return loadConfig(file);
    } catch (err) {
      if (err instanceof ConfigError) fail(configErrorLines(err, file), 2);
      throw err;
    }
  });
  // A bare `peeklock` is someone finding out what it does: the whole help, not one usage line.
  if (argv.length <= 2) {
    process.stdout.write(program.helpInformation());
    return;
  }
  await program.parseAsync(argv);
}
