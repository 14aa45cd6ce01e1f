// Drives cutfs (test/powercut/cutfs.py), the power-loss file system of docs/durability.md ("Power loss"): mounts it
// over a backing directory, cuts the power (every write and name change not covered by an fsync is rewound, as the
// mode says) and unmounts. Needs root, /dev/fuse and Debian's python3-fusepy; `cutfsUnavailable` says why not.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { exited, startChild, writeConfig, type ChildBroker } from './child-broker.js';

/** The file system's script. */
export const CUTFS = fileURLToPath(new URL('../powercut/cutfs.py', import.meta.url));
/** Debian's Python, where python3-fusepy installs (not a pyenv shim). */
const PYTHON = '/usr/bin/python3';

/** What a cut can keep of the unsynced writes (cutfs.py's docstring). */
export type CutMode = 'all' | 'prefix' | 'pages' | 'torn';
/** Every mode. */
export const CUT_MODES: readonly CutMode[] = ['all', 'prefix', 'pages', 'torn'];

/** What one cut kept and lost, as cutfs reports it. */
export interface CutFigures {
  mode: CutMode;
  seed: number;
  files: number;
  writes: number;
  writesKept: number;
  pages: number;
  pagesKept: number;
  tornPages: number;
  namesForgotten: number;
  conflicts: number;
  /** For an armed cut: the mutating call it landed before (its number since the mount, and its name). */
  atOp?: number;
  op?: string;
}

/** What cutfs reports between cuts. */
export interface CutStats {
  dirtyFiles: number;
  pendingNames: number;
  down: boolean;
  /** Mutating calls (writes, truncates, fsyncs, name operations) since the mount. */
  ops: number;
  /** The figures of the armed cut, once it happened. */
  lastCut: CutFigures | null;
}

/** Why cutfs cannot run here (not root, no /dev/fuse, no fusepy), or null if it can. */
export function cutfsUnavailable(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (mounting FUSE needs it)';
  if (!fs.existsSync('/dev/fuse')) return 'no /dev/fuse';
  const py = spawnSync(PYTHON, ['-c', 'import fusepy'], { encoding: 'utf8' });
  if (py.status !== 0) return 'no python3-fusepy (apt-get install python3-fusepy)';
  return null;
}

/** A kind of call a cut is armed to land before: a FUSE operation on a file whose path ends so. */
export interface CutOn {
  op: 'write' | 'fsync' | 'unlink' | 'rename';
  suffix: string;
}

/** A mounted cutfs. */
export interface CutMount {
  readonly backing: string;
  readonly mountpoint: string;
  /** Cuts the power: the file system refuses every later operation and rewinds its backing directory. */
  cut(mode: CutMode, seed: number): Promise<CutFigures>;
  /**
   * Arms a cut just before the `n`th mutating call from now (a write, an fsync, a name operation): inside a commit.
   * With `on`, just before the `n`th call `on.op` (a FUSE operation: write, fsync, unlink) on a path ending in `on.suffix`.
   */
  arm(mode: CutMode, seed: number, n: number, on?: CutOn): Promise<void>;
  /** Counters, whether the power is off, and an armed cut's figures. */
  stats(): Promise<CutStats>;
  /** Unmounts and waits for the file system's process to end. */
  unmount(): Promise<void>;
}

/** Mounts cutfs over `backing` at `mountpoint` (both must exist); resolves once the kernel initialised it. */
export async function mountCutfs(backing: string, mountpoint: string): Promise<CutMount> {
  const control = path.join(path.dirname(mountpoint), `${path.basename(mountpoint)}.ctl`);
  const proc = spawn(PYTHON, [CUTFS, backing, mountpoint, control], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const ok = await waitFor(() => out.includes('mounted\n') && fs.existsSync(control), 10_000, proc);
  if (!ok) {
    proc.kill('SIGKILL');
    throw new Error(`cutfs did not mount at ${mountpoint}: ${out}`);
  }
  return {
    backing,
    mountpoint,
    cut: async (mode, seed) => {
      const reply = JSON.parse(await ask(control, `cut ${mode} ${seed}`)) as CutFigures & { error?: string };
      if (reply.error) throw new Error(`cutfs cut failed: ${reply.error}`);
      return reply;
    },
    arm: async (mode, seed, n, on) => {
      const reply = JSON.parse(await ask(control, `arm ${mode} ${seed} ${n}${on ? ` ${on.op} ${on.suffix}` : ''}`)) as { error?: string };
      if (reply.error) throw new Error(`cutfs arm failed: ${reply.error}`);
    },
    stats: async () => JSON.parse(await ask(control, 'stats')) as CutStats,
    unmount: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        if (spawnSync('umount', [mountpoint]).status !== 0) spawnSync('umount', ['-l', mountpoint]);
        if (!(await waitFor(() => proc.exitCode !== null || proc.signalCode !== null, 10_000))) proc.kill('SIGKILL');
      }
      await waitFor(() => proc.exitCode !== null || proc.signalCode !== null, 5_000);
      fs.rmSync(control, { force: true });
    },
  };
}

// One request line, one reply line, with a deadline.
function ask(socketPath: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(socketPath);
    let buf = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`cutfs did not answer "${line}" within 30 s`));
    }, 30_000);
    s.on('connect', () => s.write(line + '\n'));
    s.on('data', (c: Buffer) => {
      buf += c.toString();
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      s.end();
      resolve(buf.slice(0, nl));
    });
    s.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

async function waitFor(cond: () => boolean, ms: number, proc?: ChildProcess): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) {
    if (proc && (proc.exitCode !== null || proc.signalCode !== null)) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return cond();
}

/** A child broker whose data directory is on cutfs, for one test file (its afterAll cleans up whatever is left). */
export interface PowerCutRig {
  /** The broker's config file and the data directory's path on the mount and in the backing directory. */
  readonly config: string;
  readonly dataDir: string;
  readonly backingDataDir: string;
  /** The running broker (throws if none). */
  readonly broker: ChildBroker;
  /** Mounts cutfs and starts the broker. */
  start(): Promise<ChildBroker>;
  /** SIGKILLs the broker and cuts the power at the same instant; resolves once the broker is gone. */
  cut(mode: CutMode, seed: number): Promise<CutFigures>;
  /**
   * Cuts the power just before the broker's `n`th mutating file-system call from now (so inside a commit, between
   * its writes and its sync, as often as between commits), or after `deadlineMs` if it makes fewer; SIGKILLs the
   * broker as soon as the cut happened and resolves once it is gone.
   */
  cutAt(mode: CutMode, seed: number, n: number, deadlineMs: number, on?: CutOn): Promise<CutFigures>;
  /** The mount (throws if unmounted). */
  readonly mount: CutMount;
  /** Unmounts: the backing directory then holds what a restart after the cut finds. */
  unmount(): Promise<void>;
  /** Remounts and restarts the broker on what is left, without help (no flag, no repair). */
  restart(): Promise<ChildBroker>;
  /**
   * Mounts, arms a cut just before the `n`th mutating call from now and starts the broker: the power goes off during
   * its start (or, if the start and `after` make fewer calls, once they are done); SIGKILLs it. `after` runs on the
   * broker if it got to listen first (e.g. a request that writes a file).
   */
  startCut(mode: CutMode, seed: number, n: number, after?: (b: ChildBroker) => Promise<void>): Promise<CutFigures>;
  /** While unmounted: empties the backing directory, for a workload that begins each round from nothing. */
  wipe(): void;
}

/** Sets up a {@link PowerCutRig} for a broker with the given queues (and `Broker` settings and topics). */
export function powerCutRig(queues: unknown[], opts: { broker?: Record<string, unknown>; topics?: unknown[] } = {}): PowerCutRig {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-powercut-'));
  const backing = path.join(root, 'backing');
  const mnt = path.join(root, 'mnt');
  const { config, dir } = writeConfig(queues, opts.broker, opts.topics);
  const dataDir = path.join(mnt, 'data');
  fs.mkdirSync(backing);
  fs.mkdirSync(mnt);
  let mount: CutMount | undefined;
  let broker: ChildBroker | undefined;
  afterAll(async () => {
    if (broker && broker.proc.exitCode === null && broker.proc.signalCode === null) broker.proc.kill('SIGKILL');
    if (broker) await exited(broker.proc);
    await mount?.unmount();
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const startBroker = async (): Promise<ChildBroker> => (broker = await startChild(['--config', config, '--data-dir', dataDir]));
  return {
    config,
    dataDir,
    backingDataDir: path.join(backing, 'data'),
    get broker(): ChildBroker {
      if (!broker) throw new Error('the broker is not running');
      return broker;
    },
    start: async () => {
      mount = await mountCutfs(backing, mnt);
      return startBroker();
    },
    cut: async (mode, seed) => {
      broker!.proc.kill('SIGKILL');
      const figures = await mount!.cut(mode, seed);
      await exited(broker!.proc);
      return figures;
    },
    cutAt: async (mode, seed, n, deadlineMs, on) => {
      await mount!.arm(mode, seed, n, on);
      const end = Date.now() + deadlineMs;
      let stats = await mount!.stats();
      while (!stats.down && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 10));
        stats = await mount!.stats();
      }
      // The broker may have made fewer calls (idle); then the cut lands now. It may also fire in between.
      const figures = stats.lastCut ?? (await mount!.cut(mode, seed).catch(async () => (await mount!.stats()).lastCut!));
      broker!.proc.kill('SIGKILL');
      await exited(broker!.proc);
      return figures;
    },
    get mount(): CutMount {
      if (!mount) throw new Error('cutfs is not mounted');
      return mount;
    },
    unmount: async () => {
      await mount?.unmount();
      mount = undefined;
    },
    restart: async () => {
      mount ??= await mountCutfs(backing, mnt);
      return startBroker();
    },
    startCut: async (mode, seed, n, after) => {
      mount ??= await mountCutfs(backing, mnt);
      const m = mount;
      await m.arm(mode, seed, n);
      let proc: ChildProcess | undefined;
      const started = startChild(['--config', config, '--data-dir', dataDir], { onSpawn: (p) => (proc = p) })
        .then((b) => after?.(b))
        .catch(() => undefined);
      const down = (async (): Promise<void> => {
        while (!(await m.stats()).down) await new Promise((r) => setTimeout(r, 10));
      })();
      await Promise.race([started, down]);
      const figures = (await m.stats()).lastCut ?? (await m.cut(mode, seed).catch(async () => (await m.stats()).lastCut!));
      proc!.kill('SIGKILL');
      await exited(proc!);
      await Promise.all([started, down]);
      broker = undefined;
      return figures;
    },
    wipe: () => {
      if (mount) throw new Error('wipe needs the file system unmounted');
      for (const name of fs.readdirSync(backing)) fs.rmSync(path.join(backing, name), { recursive: true, force: true });
    },
  };
}
