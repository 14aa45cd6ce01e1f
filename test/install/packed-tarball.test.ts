// What `npm install -g peeklock` and `npx peeklock` give a user, tried on the package as it would be published:
// `npm pack` makes the tarball, which must carry the compiled dist/ (an install from a tarball runs no build and has
// no TypeScript), and a scratch prefix installs it with its dependencies from the registry. The installed
// `peeklock` prints its version and starts and stops a broker; `npx` with the tarball runs it too.
// The pack uses --ignore-scripts: `npm test` has just built dist/ (pretest), and a second build here would
// rewrite dist/ under the feet of other test files running in parallel.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-install-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** Runs npm (bounded in time); fails the test with npm's output if it fails. */
function npm(args: string[], cwd: string): string {
  const r = spawnSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], { cwd, encoding: 'utf8', timeout: 240_000 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
  return r.stdout;
}

describe('the packed package', () => {
  it('installs globally from its tarball and gives a working peeklock command; npx runs it too', { timeout: 420_000 }, async () => {
    const packed = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], ROOT)) as {
      filename: string;
      files: { path: string }[];
    }[];
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['bin/peeklock.js', 'dist/cli/main.js', 'dist/app/app.js', 'config/peeklock.json', 'package.json']));
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
    const tarball = path.join(scratch, packed[0]!.filename);

    const prefix = path.join(scratch, 'global');
    npm(['install', '--global', '--prefix', prefix, tarball], scratch);
    const installed = path.join(prefix, 'lib', 'node_modules', 'peeklock');
    expect(fs.existsSync(path.join(installed, 'node_modules', 'typescript'))).toBe(false);
    const bin = path.join(prefix, 'bin', 'peeklock');

    const version = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
    expect(version.stdout).toBe(`${VERSION}\n`);
    expect(version.status).toBe(0);

    // Starts on the shipped config (a free port, a scratch data dir), logs `listening`, stops on SIGTERM.
    const proc = spawn(bin, ['start', '--port', '0', '--data-dir', path.join(scratch, 'data')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line in 30 s: ${err}`)), 30_000);
      proc.stderr.on('data', (c: Buffer) => {
        err += c.toString();
        const line = err.split('\n').find((l) => l.includes('"listening"'));
        if (line) {
          clearTimeout(timer);
          resolve(JSON.parse(line) as Record<string, unknown>);
        }
      });
      proc.once('exit', (code) => reject(new Error(`exited with ${code}: ${err}`)));
    });
    expect(listening).toMatchObject({ msg: 'listening', host: '127.0.0.1', config: path.join(installed, 'config', 'peeklock.json') });
    const code = new Promise((r) => proc.once('exit', (c, s) => r(c ?? s)));
    proc.kill('SIGTERM');
    expect(await code).toBe(0);

    const npx = spawnSync('npx', ['--yes', '--prefer-offline', `--package=${tarball}`, '--', 'peeklock', '--version'], {
      cwd: scratch,
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(npx.stdout).toBe(`${VERSION}\n`);
    expect(npx.status).toBe(0);
  });
});
