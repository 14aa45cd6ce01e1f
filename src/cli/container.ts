// `peeklock start --container`: what the image (the repository's Dockerfile) adds to a plain start so that it
// stands in for Microsoft's Service Bus emulator container. The emulator reads its entities from
// /ServiceBus_Emulator/ConfigFiles/Config.json (Microsoft's compose template and the Testcontainers modules mount
// the file there), takes its settings from ACCEPT_EULA, SQL_SERVER, MSSQL_SA_PASSWORD, SQL_WAIT_INTERVAL and
// EMULATOR_HTTP_PORT, and says `Emulator Service is Successfully Up!` once it serves (what those modules wait for).
// Here only EMULATOR_HTTP_PORT means something; the SQL Server and EULA settings are named once as ignored.
// Whether messages outlive the container depends on what is mounted at the data directory, which
// /proc/self/mountinfo tells.

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger.js';

/** Where the emulator's image reads its Config.json (and where its users mount theirs). */
export const EMULATOR_CONFIG = '/ServiceBus_Emulator/ConfigFiles/Config.json';

/** The image's data directory (its `VOLUME`; the entry point passes it as --data-dir). */
export const CONTAINER_DATA_DIR = '/data';

/** The emulator's ready line, logged once the broker serves (Testcontainers' Service Bus modules wait for it). */
export const EMULATOR_READY_LINE = 'Emulator Service is Successfully Up!';

/**
 * Variables Microsoft's emulator (or its compose template, which passes them on) reads that have no meaning for
 * peeklock: there is no EULA to accept and no SQL Server to wait for; CONFIG_PATH, SQL_PASSWORD and
 * EMULATOR_AMQP_PORT are the template's host-side names (the file to mount, the password, the published port).
 */
export const IGNORED_EMULATOR_ENV = [
  'ACCEPT_EULA',
  'SQL_SERVER',
  'MSSQL_SA_PASSWORD',
  'SQL_WAIT_INTERVAL',
  'SQL_PASSWORD',
  'CONFIG_PATH',
  'EMULATOR_AMQP_PORT',
] as const;

/** What container mode makes of the environment: the config file, the HTTP port, the names it ignores. */
export interface ContainerStart {
  /** The config file: the mounted emulator Config.json if present, else the shipped one. */
  config: string;
  /** Where the config came from, for the log. */
  configSource: 'emulator mount' | 'shipped default' | '--config';
  /** EMULATOR_HTTP_PORT, when set. */
  httpPort?: number;
  /** The emulator variables set here that peeklock ignores (names only: MSSQL_SA_PASSWORD is a secret). */
  ignored: string[];
}

/** Thrown for an EMULATOR_HTTP_PORT that is not a port number (reported like a flag mistake). */
export class ContainerEnvError extends Error {}

/** Reads the container's environment the way the emulator's image does; `exists` is injectable for tests. */
export function containerStart(
  env: NodeJS.ProcessEnv,
  shippedConfig: string,
  exists: (file: string) => boolean = (f) => fs.existsSync(f),
): ContainerStart {
  const mounted = exists(EMULATOR_CONFIG);
  const start: ContainerStart = {
    config: mounted ? EMULATOR_CONFIG : shippedConfig,
    configSource: mounted ? 'emulator mount' : 'shipped default',
    ignored: IGNORED_EMULATOR_ENV.filter((name) => env[name] !== undefined),
  };
  const port = env.EMULATOR_HTTP_PORT;
  if (port !== undefined && port !== '') {
    const n = Number(port);
    if (!/^\d+$/.test(port) || n < 1 || n > 65535) {
      throw new ContainerEnvError(`EMULATOR_HTTP_PORT: ${JSON.stringify(port)} is not a port; use an integer from 1 to 65535`);
    }
    start.httpPort = n;
  }
  return start;
}

/** What is mounted at the data directory, and so how long its messages live. */
export type DataDirMount =
  | { kind: 'none' } // the container's own writable layer: gone with the container
  | { kind: 'anonymous'; source: string } // a volume the runtime made for the image's VOLUME: not reused by a new container
  | { kind: 'mounted'; source: string }; // a named volume or a bind mount: outlives the container

// Docker and Podman keep volumes in <root>/volumes/<name>/_data and name an anonymous one with 64 hex digits.
const ANONYMOUS_VOLUME = /\/volumes\/[0-9a-f]{64}\/_data$/;

/** mountinfo escapes space, tab, newline and backslash in paths as octal (`\040`). */
function unescapeMountPath(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Classifies `dir` from the text of /proc/self/mountinfo (proc(5): field 4 is the mount's root, field 5 its mount point). */
export function dataDirMount(dir: string, mountinfo: string): DataDirMount {
  let found: DataDirMount = { kind: 'none' };
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 5 || unescapeMountPath(fields[4]!) !== dir) continue;
    // A later line for the same mount point is mounted over the earlier one: the last one is what is seen.
    const source = unescapeMountPath(fields[3]!);
    found = ANONYMOUS_VOLUME.test(source) ? { kind: 'anonymous', source } : { kind: 'mounted', source };
  }
  return found;
}

/** The log line (level and text) that says whether messages in `dir` outlive the container. */
export function dataDirLine(dir: string, mount: DataDirMount): { level: 'info' | 'warn'; msg: string } {
  const fix = `mount a named volume or a host directory there (docker run -v peeklock-data:${dir}) to keep them`;
  switch (mount.kind) {
    case 'none':
      return { level: 'warn', msg: `data dir ${dir} is not a mounted volume: messages are lost when the container is removed; ${fix}` };
    case 'anonymous':
      return {
        level: 'warn',
        msg: `data dir ${dir} is an anonymous volume: messages survive a restart of this container, not a new container; ${fix}`,
      };
    case 'mounted':
      return { level: 'info', msg: `data dir ${dir} is a mounted volume: messages outlive the container` };
  }
}

/** Reads this process's mounts and classifies the data directory (resolved through symlinks); none if unreadable. */
export function probeDataDir(dataDir: string): { dir: string; mount: DataDirMount } {
  let dir = path.resolve(dataDir);
  try {
    dir = fs.realpathSync(dir);
  } catch {
    // Not created yet: the broker makes it; its path as given is what a mount would name.
  }
  try {
    return { dir, mount: dataDirMount(dir, fs.readFileSync('/proc/self/mountinfo', 'utf8')) };
  } catch {
    return { dir, mount: { kind: 'none' } };
  }
}

/** Logs what container mode found: the ignored emulator variables (one line, if any) and the data dir's line. */
export function logContainerStart(log: Logger, start: ContainerStart, dataDir: string): void {
  if (start.ignored.length > 0) {
    log.info(
      { ignored: start.ignored },
      `ignoring emulator settings that mean nothing here (no SQL Server, no EULA): ${start.ignored.join(', ')}`,
    );
  }
  const { dir, mount } = probeDataDir(dataDir);
  const line = dataDirLine(dir, mount);
  log[line.level]({ dataDir: dir, mount: mount.kind, config: start.config, configSource: start.configSource }, line.msg);
}
