// The benchmark's broker CPU reader (ProcSampler in src/bench/peers.ts) on a child it started: a child that spins
// shows CPU time no larger than the wall time it spun, divided per message as asked; an idle one shows next to none.
// Bounds only, never a speed: the figures depend on how busy the machine is.

import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { ProcSampler } from '../../src/bench/peers.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** A child that spins for `spinMs` of wall time when told (a line on stdin), says "done", then idles until killed. */
async function child(): Promise<{ pid: number; spin: (ms: number) => Promise<void> }> {
  const code = `process.stdin.on('data', (d) => { const end = Date.now() + Number(d); while (Date.now() < end); process.stdout.write('done\\n'); }); process.stdout.write('ready\\n');`;
  const c = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(c);
  const line = (): Promise<void> => new Promise((resolve, reject) => {
    c.stdout!.once('data', () => resolve());
    c.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
  await line();
  return { pid: c.pid!, spin: (ms) => (c.stdin!.write(`${ms}\n`), line()) };
}

describe('broker CPU per message', () => {
  it('counts the CPU a busy child used, per message moved, and almost none for an idle one', async () => {
    const c = await child();
    const s = new ProcSampler(c.pid);
    s.start();
    const t0 = performance.now();
    await c.spin(400);
    const wallS = (performance.now() - t0) / 1000;
    const busy = s.stop(1000);
    // At least part of the spin ran on a CPU (the machine may be shared), never more than the wall time it took
    // (one thread spins; /proc counts in 10 ms ticks).
    expect(busy.cpuS).toBeGreaterThanOrEqual(0.05);
    expect(busy.cpuS).toBeLessThanOrEqual(wallS + 0.02);
    expect(busy.cpuUsPerMsg).toBeGreaterThanOrEqual(50);
    expect(busy.cpuUsPerMsg! / 1e6).toBeCloseTo(busy.cpuS / 1000, 4);
    const idle = new ProcSampler(c.pid);
    idle.start();
    await new Promise((r) => setTimeout(r, 300));
    const rest = idle.stop(1000);
    expect(rest.cpuS).toBeLessThanOrEqual(0.03);
    expect(rest.cpuUsPerMsg).toBeLessThanOrEqual(30);
  });

  it('gives no per-message figure without a message count, and NaN without a process', () => {
    const none = new ProcSampler(undefined);
    none.start();
    expect(none.stop(10).cpuS).toBeNaN();
    const s = new ProcSampler(process.pid);
    s.start();
    expect(s.stop()).not.toHaveProperty('cpuUsPerMsg');
  });
});
