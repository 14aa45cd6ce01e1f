// The brokers the bench drives, each its own process so /proc gives its CPU time and RSS apart from the
// generator's: peeklock (temp data dir, fsync on, config generated per run), the null broker, and RabbitMQ
// through rabbitmq.sh. Also the /proc sampler.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Target } from './generator.js';
import { brokerCommand } from './pin.js';
import { monotonicUs, noteWindow, profileArgs } from './profile.js';

const BIN = fileURLToPath(new URL('../../bin/peeklock.js', import.meta.url));
const NULL_BROKER = fileURLToPath(new URL('./null-broker.js', import.meta.url));
// The script lives beside this file's source; tsc does not copy it into dist/.
const RABBIT_SH = fileURLToPath(new URL('../../src/bench/rabbitmq.sh', import.meta.url));

/** A queue in the generated emulator config. */
export interface QueueSpec {
  name: string;
  lock?: string;
  session?: boolean;
}

/** A topic in the generated emulator config, with its subscriptions' names. */
export interface TopicSpec {
  name: string;
  subs: string[];
}

/** The queues every default run uses: `bench` (PT1M) and `expiry` (PT5S). */
export const DEFAULT_QUEUES: QueueSpec[] = [{ name: 'bench', lock: 'PT1M' }, { name: 'expiry', lock: 'PT5S' }];

/** CPU time (user + system) and RSS of one process, from /proc/<pid>/stat and status. */
export class ProcSampler {
  private timer: NodeJS.Timeout | undefined;
  private cpu0 = 0;
  private maxRss = 0;
  private from = 0;
  constructor(
    readonly pid: number | undefined,
    /** The run's label in a `--profile` summary (unlabelled runs are not summarised). */
    readonly label?: string,
  ) {}

  /** CPU seconds used so far, or NaN without a pid. */
  cpuSeconds(): number {
    if (!this.pid) return NaN;
    try {
      const stat = fs.readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (USER_HZ = 100).
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      return NaN;
    }
  }

  /** A field of /proc/<pid>/status in MB (VmRSS, VmHWM; RssAnon = heap and buffers, RssFile = mapped files), or NaN. */
  statusMB(field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
    if (!this.pid) return NaN;
    try {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      return m ? Math.round(Number(m[1]) / 1024) : NaN;
    } catch {
      return NaN;
    }
  }

  /** Starts a measurement: CPU from now, RSS sampled every 100 ms. */
  start(): void {
    this.cpu0 = this.cpuSeconds();
    this.maxRss = this.statusMB('VmRSS');
    this.from = monotonicUs();
    this.timer = setInterval(() => (this.maxRss = Math.max(this.maxRss, this.statusMB('VmRSS'))), 100);
  }

  // Per message is what compares brokers whose runs took different times (issue 37, item 5): user + system CPU of
  // the whole process (every thread: /proc/<pid>/stat counts them all) over the run, divided by the messages moved.
  /**
   * Ends the measurement: broker CPU seconds used, its largest RSS (MB) seen and, when the run moved `messages`,
   * the CPU per message in µs (at /proc's 10 ms tick, so exact to 10 ms ÷ messages).
   */
  stop(messages?: number): { cpuS: number; maxRssMB: number; cpuUsPerMsg?: number } {
    clearInterval(this.timer);
    if (this.label && this.from) noteWindow(this.pid, this.label, this.from, monotonicUs());
    this.from = 0;
    this.maxRss = Math.max(this.maxRss, this.statusMB('VmRSS'));
    const cpu = this.cpuSeconds() - this.cpu0;
    const out = { cpuS: Math.round(cpu * 100) / 100, maxRssMB: this.maxRss };
    return messages ? { ...out, cpuUsPerMsg: Math.round((cpu / messages) * 1e8) / 100 } : out;
  }
}

/** Waits for a line of a child's stdout that `match` accepts; rejects if it exits first or after `ms`. */
function waitForLine<T>(proc: ChildProcess, match: (line: string) => T | undefined, ms = 60_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('timed out waiting for the broker to listen')), ms);
    const onData = (c: Buffer): void => {
      out += c.toString();
      const lines = out.split('\n');
      out = lines.pop() ?? '';
      for (const line of lines) {
        const v = match(line);
        if (v !== undefined) {
          clearTimeout(timer);
          proc.stdout!.off('data', onData);
          proc.stderr?.off('data', onData);
          // Keep draining so a chatty child never blocks on a full pipe.
          proc.stdout!.resume();
          proc.stderr?.resume();
          return resolve(v);
        }
      }
    };
    // peeklock logs (the `listening` line) to stderr; the null broker prints its port on stdout.
    proc.stdout!.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code} before listening`));
    });
  });
}

/** Sends SIGTERM and waits for the exit (SIGKILL after `ms`); returns the seconds it took. */
async function terminate(proc: ChildProcess, ms = 30_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<number> {
  if (proc.exitCode !== null || proc.signalCode !== null) return 0;
  const t0 = performance.now();
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill(signal);
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms);
  await exited;
  clearTimeout(timer);
  return (performance.now() - t0) / 1000;
}

// Interrupted runs (Ctrl-C, SIGTERM) still stop peeklock and remove its data dir: a deep queue's is many GB.
const interrupted = new Set<() => void>();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    for (const cleanUp of interrupted) cleanUp();
    process.exit(130);
  });
}

/** Writes an emulator-format config with these entities, a data dir under `dir`, and an ephemeral port. */
export function writeConfig(dir: string, queues: QueueSpec[], topics: TopicSpec[] = []): string {
  const props = (q: { lock?: string; session?: boolean }): Record<string, unknown> => ({
    LockDuration: q.lock ?? 'PT1M',
    MaxDeliveryCount: 100,
    // A deep queue (10,000,000 × 1 KiB) is far past the default 1024 MB quota: the largest Service Bus allows.
    MaxSizeInMegabytes: 81_920,
    ...(q.session ? { RequiresSession: true } : {}),
  });
  const config = path.join(dir, 'config.json');
  const body = {
    UserConfig: {
      Namespaces: [
        {
          Name: 'sbemulatorns',
          Queues: queues.map((q) => ({ Name: q.name, Properties: props(q) })),
          Topics: topics.map((t) => ({ Name: t.name, Properties: {}, Subscriptions: t.subs.map((s) => ({ Name: s, Properties: props({}) })) })),
        },
      ],
      Logging: { Type: 'Console' },
    },
    Broker: { Host: '127.0.0.1', Port: 0, DataDir: path.join(dir, 'data'), LogLevel: 'warn' },
  };
  fs.writeFileSync(config, JSON.stringify(body));
  return config;
}

/** peeklock as a child, plus a restart on the same data dir that reports the time to its `listening` line. */
export interface PeeklockTarget extends Target {
  /** SIGTERM, start again on the same data dir; seconds to exit and from spawn to `listening`. */
  /** Stops it (SIGTERM: a clean stop; SIGKILL: kill -9, leaving the log to replay) and starts it on the same data dir. */
  restart(signal?: 'SIGTERM' | 'SIGKILL'): Promise<{ stopS: number; listeningS: number }>;
  /** The broker's data directory (removed by stop()). */
  dataDir: string;
}

/** How the benchmark's clients reach peeklock: plain AMQP, amqps, or AMQP over WebSockets on the HTTP port. */
export type PeeklockTransport = 'tcp' | 'tls' | 'ws';

/** Starts peeklock with a fresh temp data dir and a generated config holding `queues` and `topics`. */
export async function startPeeklock(queues: QueueSpec[] = DEFAULT_QUEUES, topics: TopicSpec[] = [], transport: PeeklockTransport = 'tcp'): Promise<PeeklockTarget> {
  const overTls = transport === 'tls';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-bench-'));
  let proc!: ChildProcess;
  const cleanUp = (): void => {
    proc?.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  interrupted.add(cleanUp);
  const config = writeConfig(dir, queues, topics);
  // Over TLS the clients dial the amqps port and trust the broker's local CA (created in its data dir).
  const tlsArgs = overTls ? ['--tls-port', '0'] : [];
  // A restart on a deep backlog reads its rows before listening (about 10 s per million on a loaded 2-vCPU
  // machine), so it gets far longer than a fresh start.
  let httpPort = 0;
  const launch = async (ms = 60_000): Promise<number> => {
    // PEEKLOCK_BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the broker under the benchmark's load.
    const nodeArgs = [...profileArgs(), ...(process.env.PEEKLOCK_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)];
    const [cmd, args] = brokerCommand(process.execPath, [...nodeArgs, BIN, 'start', '--config', config, '--log-level', 'info', ...tlsArgs]);
    proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    return waitForLine(proc, (line) => {
      if (!line.includes('"listening"')) return undefined;
      const l = JSON.parse(line) as { port: number; tlsPort?: number; httpPort: number };
      httpPort = l.httpPort;
      return overTls ? l.tlsPort : transport === 'ws' ? l.httpPort : l.port;
    }, ms);
  };
  const target: PeeklockTarget = {
    name: overTls ? 'peeklock over TLS' : transport === 'ws' ? 'peeklock over WebSockets' : 'peeklock',
    host: '127.0.0.1',
    port: await launch(),
    // SASL PLAIN with the default policy, as Service Bus accepts from non-SDK AMQP clients.
    username: 'RootManageSharedAccessKey',
    password: 'SAS_KEY_VALUE',
    pid: proc.pid,
    address: (q) => q,
    durableTerminus: false,
    rcvSettleMode: 1,
    dataDir: path.join(dir, 'data'),
    ...(httpPort ? { commitProbe: { metricsUrl: `http://127.0.0.1:${httpPort}/metrics`, dataDir: path.join(dir, 'data') } } : {}),
    ...(transport === 'ws' ? { webSocket: true } : {}),
    ...(overTls ? { tlsCa: fs.readFileSync(path.join(dir, 'data', 'tls', 'ca.crt'), 'utf8') } : {}),
    restart: async (signal = 'SIGTERM') => {
      const stopS = await terminate(proc, 30_000, signal);
      const t0 = performance.now();
      target.port = await launch(900_000);
      target.pid = proc.pid;
      return { stopS, listeningS: (performance.now() - t0) / 1000 };
    },
    stop: async () => {
      await terminate(proc);
      fs.rmSync(dir, { recursive: true, force: true });
      interrupted.delete(cleanUp);
    },
  };
  return target;
}

/** Starts the null broker (dist/bench/null-broker.js) as a child on a free port. */
export async function startNullBroker(): Promise<Target> {
  const [cmd, args] = brokerCommand(process.execPath, [...profileArgs(), NULL_BROKER, '--port', '0']);
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await waitForLine(proc, (line) => (line.startsWith('{"port"') ? (JSON.parse(line) as { port: number }).port : undefined), 10_000);
  return {
    name: 'null',
    host: '127.0.0.1',
    port,
    pid: proc.pid,
    address: (q) => q,
    durableTerminus: false,
    rcvSettleMode: 1,
    stop: async () => void (await terminate(proc)),
  };
}

/**
 * Starts RabbitMQ through rabbitmq.sh (installs it with apt if missing, own epmd, loopback, temp dirs). Returns
 * null with one printed line when that fails, so the rest of the bench goes on without the peer.
 */
export function startRabbitMQ(say: (line: string) => void): Target | null {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-bench-rabbitmq-'));
  // Under taskset every process the script starts (epmd, beam.smp) inherits the brokers' CPUs.
  const [cmd, args] = brokerCommand('bash', [RABBIT_SH, 'start', dir]);
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 600_000, stdio: ['ignore', 'pipe', 'pipe'] });
  const last = (r.stdout ?? '').trim().split('\n').pop() ?? '';
  const m = /^port=(\d+) pid=(\d+)/.exec(last);
  if (r.status !== 0 || !m) {
    const why = ((r.stderr ?? '').trim().split('\n').pop() || r.error?.message) ?? `exit ${r.status}`;
    say(`rabbitmq: skipped (${why}; details in ${dir})`);
    spawnSync('bash', [RABBIT_SH, 'stop', dir], { stdio: 'ignore', timeout: 60_000 });
    return null;
  }
  return {
    name: 'rabbitmq',
    host: '127.0.0.1',
    port: Number(m[1]),
    username: 'guest',
    password: 'guest',
    pid: Number(m[2]),
    // Durable classic queues, declared on attach; /amq/queue/MISSING would silently accept and drop the message.
    address: (q) => `/queue/${q}`,
    durableTerminus: true,
    // RabbitMQ refuses rcv-settle-mode second; the receive run waits for its close reply instead.
    rcvSettleMode: 0,
    stop: async () => {
      spawnSync('bash', [RABBIT_SH, 'stop', dir], { stdio: 'ignore', timeout: 120_000 });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An already running broker given by --host/--port; its queue is named by --address. */
export function externalTarget(o: { host: string; port?: number; address: string; username?: string; password?: string }): Target {
  return {
    name: `${o.host}:${o.port ?? 5672}`,
    host: o.host,
    port: o.port ?? 5672,
    username: o.username,
    password: o.password,
    address: () => o.address,
    durableTerminus: o.address.startsWith('/queue/'),
    rcvSettleMode: 1,
    stop: async () => undefined,
  };
}
