// Start-up as a new user meets it, through the real CLI: every failure is one line on stderr naming the cause and
// the flag or action that fixes it, exit code 1, within a few seconds and without a stack; and two brokers that
// differ only in --port and --data-dir run side by side, each on the HTTP port the documented rule gives.
// The read-only and full-disk cases mount a small tmpfs and need root; they are skipped otherwise, with the reason.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { open } from 'lmdb';
import { afterAll, describe, expect, it } from 'vitest';
import { exited, runCli, startChild, writeConfig, type ChildBroker } from '../helpers/child-broker.js';
import { SCHEMA_VERSION } from '../../src/store/lmdb/keys.js';

const { config, dir } = writeConfig([{ Name: 'q' }]);
const mounts: string[] = [];
const brokers: ChildBroker[] = [];
afterAll(async () => {
  for (const b of brokers) if (b.proc.exitCode === null && b.proc.signalCode === null) b.proc.kill('SIGKILL');
  await Promise.all(brokers.map((b) => exited(b.proc)));
  for (const m of mounts) if (spawnSync('umount', [m]).status !== 0) spawnSync('umount', ['-l', m]);
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Mounts a tmpfs of `kb` KiB (read-only with `ro`); returns its path, or null when this user cannot mount. */
function tmpfs(kb: number, ro = false): string | null {
  const mnt = fs.mkdtempSync(path.join(dir, 'mnt-'));
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${kb}k${ro ? ',ro' : ''}`, 'tmpfs', mnt]);
  if (r.status !== 0) return null;
  mounts.push(mnt);
  return mnt;
}
const canMount = process.getuid?.() === 0 && tmpfs(64) !== null;
const skipReason = canMount ? '' : ' [skipped: needs root to mount a tmpfs]';

/** A TCP server holding a port on 127.0.0.1 (any free one, or `port`). */
async function holdPort(port = 0): Promise<net.Server> {
  const s = net.createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, '127.0.0.1', resolve);
  });
  return s;
}
const portOf = (s: net.Server): number => (s.address() as net.AddressInfo).port;
const close = (s: net.Server): Promise<void> => new Promise((r) => s.close(() => r()));

/** Runs `peeklock start` expecting a refusal: exit 1, exactly `line` on stderr, within 10 s. */
async function refused(args: string[], line: string): Promise<void> {
  const t0 = performance.now();
  const r = await runCli(['start', '--config', config, ...args], 10_000);
  expect(r.stderr).toBe(`peeklock: ${line}\n`);
  expect(r.code).toBe(1);
  expect(performance.now() - t0).toBeLessThan(10_000);
}

describe('start-up failures: one line, cause and fix, exit code 1', () => {
  it('names a taken AMQP port and --port', async () => {
    const s = await holdPort();
    const port = portOf(s);
    await refused(
      ['--port', String(port), '--data-dir', path.join(dir, 'amqp')],
      `the AMQP port ${port} on 127.0.0.1 is already in use by another program; stop it, or choose another port with --port (or Broker.Port)`,
    );
    await close(s);
  });

  it('names a taken HTTP port and --http-port', async () => {
    const s = await holdPort();
    const port = portOf(s);
    await refused(
      ['--port', '0', '--http-port', String(port), '--data-dir', path.join(dir, 'http')],
      `the HTTP port ${port} on 127.0.0.1 is already in use by another program; stop it, or choose another port with --http-port (or Broker.HttpPort)`,
    );
    await close(s);
  });

  it('names a data directory that a file stands in the way of', async () => {
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, 'keep me');
    await refused(
      ['--data-dir', file],
      `cannot use ${file} as the data directory: a file is in the way (EEXIST); remove the file, or choose another with --data-dir (or Broker.DataDir)`,
    );
    const under = path.join(file, 'data');
    await refused(
      ['--data-dir', under],
      `cannot use ${under} as the data directory: a file is in the way (ENOTDIR); remove the file, or choose another with --data-dir (or Broker.DataDir)`,
    );
    expect(fs.readFileSync(file, 'utf8')).toBe('keep me');
  });

  it('names a store written by a newer peeklock, and leaves it alone', async () => {
    const data = path.join(dir, 'newer');
    const env = open({ path: data, maxDbs: 32, overlappingSync: false });
    await env.openDB('meta', {}).put('schema', 7);
    await env.close();
    await refused(
      ['--data-dir', data],
      `the data directory ${data} holds a store written by a newer peeklock (schema version 7; this build reads version ${SCHEMA_VERSION}); run that newer peeklock, or choose another --data-dir (or Broker.DataDir)`,
    );
    const again = open({ path: data, maxDbs: 32, overlappingSync: false });
    expect(again.openDB('meta', {}).get('schema')).toBe(7);
    await again.close();
  });

  it('prints the stack too with --log-level debug', async () => {
    const file = path.join(dir, 'another-file');
    fs.writeFileSync(file, '');
    const r = await runCli(['start', '--config', config, '--data-dir', file, '--log-level', 'debug'], 10_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('"stack":"DataDirError');
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/^peeklock: cannot use .* a file is in the way/);
  });

  it.skipIf(!canMount)(`names a read-only data directory${skipReason}`, async () => {
    const ro = tmpfs(1024, true)!;
    const data = path.join(ro, 'data');
    await refused(
      ['--data-dir', data],
      `cannot write to the data directory ${data} (EROFS); make it writable by this user, or choose another with --data-dir (or Broker.DataDir)`,
    );
  });

  it.skipIf(!canMount)(`names a full disk as such, not as an I/O error, and is not killed by it${skipReason}`, async () => {
    const mnt = tmpfs(2048)!;
    const ballast = fs.openSync(path.join(mnt, 'ballast'), 'w');
    const chunk = Buffer.alloc(64 * 1024, 1);
    try {
      for (let i = 0; i < 64; i++) fs.writeSync(ballast, chunk);
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      fs.closeSync(ballast);
    }
    const data = path.join(mnt, 'data');
    await refused(
      ['--data-dir', data],
      `cannot create the message store: the disk holding the data directory ${data} is full (0 bytes free); free some space, or move the store with --data-dir (or Broker.DataDir)`,
    );
  });
});

describe('brokers side by side', () => {
  /**
   * A free port P whose partners by the rules, HTTP 5300 + (P - 5672) and amqps 5671 + (P - 5672), are free too
   * (checked by binding all three).
   */
  async function freePair(avoid: number[]): Promise<{ amqp: number; http: number; tls: number }> {
    for (let i = 0; i < 50; i++) {
      const s = await holdPort();
      const amqp = portOf(s);
      const http = 5300 + (amqp - 5672);
      const tls = 5671 + (amqp - 5672);
      const taken = [amqp, http, tls].some((p) => avoid.includes(p)) || http < 1024 || tls < 1024;
      const h = taken ? null : await holdPort(http).catch(() => null);
      const t = h ? await holdPort(tls).catch(() => null) : null;
      await close(s);
      if (h) await close(h);
      if (t) {
        await close(t);
        return { amqp, http, tls };
      }
    }
    throw new Error('no free port pair in 50 tries');
  }

  it('start when they differ only in --port and --data-dir, each on HTTP port 5300 + (port - 5672)', async () => {
    const a = await freePair([]);
    const b = await freePair([a.amqp, a.http, a.tls]);
    const started: ChildBroker[] = [];
    for (const [name, pair] of [['left', a], ['right', b]] as const) {
      const child = await startChild(['--config', config, '--port', String(pair.amqp), '--data-dir', path.join(dir, name)]);
      brokers.push(child);
      started.push(child);
      const line = JSON.parse(child.output().split('\n').find((l) => l.includes('"listening"'))!) as { port: number; httpPort: number };
      expect(line).toMatchObject({ port: pair.amqp, httpPort: pair.http });
      const health = await fetch(`http://127.0.0.1:${pair.http}/health`);
      expect(health.status).toBe(200);
    }
    for (const child of started) {
      child.proc.kill('SIGTERM');
      expect(await exited(child.proc)).toBe(0);
    }
  });
});
