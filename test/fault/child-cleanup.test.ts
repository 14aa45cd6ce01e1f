// A broker child started through test/helpers/child-broker.ts is killed on every path out of the test that started
// it: here a test fails, or hangs until vitest's timeout ends it, in a vitest run of its own
// (test/fixtures/child-leak.fixture.ts), and the child's pid must be gone once that run has ended.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VITEST = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const CONFIG = path.join(ROOT, 'test', 'fixtures', 'child-leak.vitest.config.ts');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Runs the fixture in a vitest of its own; resolves with its exit code and the pid of the broker it started.
function runFixture(mode: 'fail' | 'timeout'): Promise<{ code: number | null; pid: number; out: string }> {
  const pidFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-leak-')), 'pid');
  const proc = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG], {
    cwd: ROOT,
    env: { ...process.env, CHILD_LEAK_MODE: mode, CHILD_LEAK_PID_FILE: pidFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), 45_000);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, pid: fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : 0, out });
    });
  });
}

async function noLeftover(mode: 'fail' | 'timeout'): Promise<void> {
  const run = await runFixture(mode);
  expect(run.code, run.out).not.toBe(0); // the fixture's test did fail
  expect(run.pid, run.out).toBeGreaterThan(0); // and had started its broker
  // Give a dying child a moment to be reaped, then check; a leftover is killed here so it does not outlive this test.
  const deadline = Date.now() + 2_000;
  while (alive(run.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const leftover = alive(run.pid);
  if (leftover) process.kill(run.pid, 'SIGKILL');
  expect(leftover, `broker ${run.pid} still running after a ${mode}`).toBe(false);
}

describe('child brokers are killed on every path', () => {
  it('when the test that started one fails', () => noLeftover('fail'), 60_000);
  it('when the test that started one times out', () => noLeftover('timeout'), 60_000);
});
