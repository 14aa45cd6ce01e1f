// Runs the real CLI (`node bin/peeklock.js start`) as a child process on 127.0.0.1, port 0, for fault
// tests: it can be killed with SIGKILL and restarted on the same data directory.
//
// Every child started here (or handed to `trackChild`) is killed on every way out of the test run, so a failed or
// timed-out test leaves no broker behind: when the test that started it fails (a timeout is a failure: vitest then
// runs the test's onTestFailed hooks while the test's own code may still be waiting), after the test file
// (afterAll), and when the test process exits or is told to stop (SIGTERM, SIGINT). A test process killed with
// SIGKILL runs nothing; nothing in Node can reach its children then.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, onTestFailed } from 'vitest';

/** The CLI entry point. */
export const BIN = fileURLToPath(new URL('../../bin/peeklock.js', import.meta.url));

/** Child processes started by the tests of this process and still running. */
const live = new Set<ChildProcess>();

/** SIGKILLs every child still running; returns how many it killed. Synchronous, so an `exit` handler may call it. */
export function killChildren(): number {
  let n = 0;
  for (const proc of live) {
    if (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')) n++;
    live.delete(proc);
  }
  return n;
}

let hooked = false;

// Installs the process-wide ways out once per test process: exit, and the stop signals (after which the process
// goes on to stop as it would have: the handler is removed and the signal raised again).
function hookProcess(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => void killChildren());
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const onSignal = (): void => {
      killChildren();
      process.removeListener(signal, onSignal);
      // Alone, this listener kept Node from stopping; when others listen (vitest's own), they decide.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

// After the test file: whatever its tests left running. Registered when this module is first imported, which is
// during the file's collection for every test that imports it at its top.
try {
  afterAll(() => void killChildren());
} catch {
  // Imported outside a test file's collection (a plain script): the process hooks still apply.
}

/**
 * Registers a child process this test run started, so it is killed on every path out (see the head of this file).
 * Inside a running test, it is also killed as soon as that test fails or times out.
 */
export function trackChild<P extends ChildProcess>(proc: P): P {
  hookProcess();
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  try {
    onTestFailed(() => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    });
  } catch {
    // Not inside a test (beforeAll, a helper run at collection): afterAll and the process hooks cover it.
  }
  return proc;
}

/** A broker child process. */
export interface ChildBroker {
  proc: ChildProcess;
  port: number;
  /** Milliseconds from spawn to the `listening` log line. */
  startMs: number;
  /** Everything the child wrote to stdout and stderr so far (its log is on stderr). */
  output(): string;
}

/** Writes a config file with the given queues (and topics) into a fresh temp dir; returns its path and data dir. */
export function writeConfig(
  queues: unknown[],
  broker: Record<string, unknown> = {},
  topics: unknown[] = [],
): { config: string; dataDir: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-fault-'));
  const dataDir = path.join(dir, 'data');
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      UserConfig: { Namespaces: [{ Name: 'sbemulatorns', Queues: queues, Topics: topics }], Logging: { Type: 'Console' } },
      Broker: { Host: '127.0.0.1', Port: 0, DataDir: dataDir, LogLevel: 'info', ...broker },
    }),
  );
  return { config, dataDir, dir };
}

/** How to wrap the child: a command prefix (e.g. strace with fault injection) and extra environment. */
export interface ChildOptions {
  prefix?: string[];
  env?: Record<string, string>;
  /** Called with the process as soon as it is spawned (to kill one that may never listen). */
  onSpawn?: (proc: ChildProcess) => void;
}

/** Starts the CLI and resolves once it logs `listening` (rejects if it exits first or after 15 s). */
export function startChild(args: string[], opts: ChildOptions = {}): Promise<ChildBroker> {
  const t0 = performance.now();
  const argv = [...(opts.prefix ?? []), process.execPath, BIN, 'start', ...args];
  const proc = trackChild(spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } }));
  opts.onSpawn?.(proc);
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`broker did not start: ${out}`));
    }, 15_000);
    // The broker logs to stderr (JSON when it is not a terminal); stdout is watched too, for what a command prints.
    let done = false;
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      if (done) return;
      // Whole lines only: a chunk can end in the middle of one.
      for (const line of out.split('\n').slice(0, -1)) {
        if (!line.includes('"listening"')) continue;
        done = true;
        clearTimeout(timer);
        const port = (JSON.parse(line) as { port: number }).port;
        return resolve({ proc, port, startMs: performance.now() - t0, output: () => out });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code}: ${out}`));
    });
  });
}

/** Runs the CLI to completion (for start-up failures); resolves with exit code and output. */
export function runCli(args: string[], timeoutMs = 15_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = trackChild(spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Waits for a child to exit; resolves with its exit code (or signal name). */
export function exited(proc: ChildProcess): Promise<number | string | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode ?? proc.signalCode);
  return new Promise((r) => proc.once('exit', (code, signal) => r(code ?? signal)));
}
