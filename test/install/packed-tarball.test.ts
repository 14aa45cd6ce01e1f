// What `npm install -g peeklock` and `npx peeklock` give a user, tried on the package as it would be published:
// `npm pack` makes the tarball, which must carry the compiled dist/ (an install from a tarball runs no build and has
// no TypeScript), and a scratch prefix installs it with its dependencies from the registry. The installed
// `peeklock` prints its version and starts and stops a broker; `npx` with the tarball runs it too.
// The pack uses --ignore-scripts: `npm test` has just built dist/ (pretest), and a second build here would
// rewrite dist/ under the feet of other test files running in parallel.
// The package is also a library (its main export is the embedded API): a scratch project installs the tarball next to
// the SDK and drives a broker it started with startBroker().

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { trackChild } from '../helpers/child-broker.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-install-'));
// Two global installs of the package and its dependencies: removing them can outlast the default hook timeout on a loaded machine.
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }), 120_000);

/** Runs npm (bounded in time); fails the test with npm's output if it fails. */
function npm(args: string[], cwd: string): string {
  const r = spawnSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], { cwd, encoding: 'utf8', timeout: 240_000 });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
  return r.stdout;
}

let packedOnce: { tarball: string; files: string[] } | null = null;

/** Packs the package once for every test here. */
function pack(): { tarball: string; files: string[] } {
  if (packedOnce) return packedOnce;
  const packed = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], ROOT)) as {
    filename: string;
    files: { path: string }[];
  }[];
  packedOnce = { tarball: path.join(scratch, packed[0]!.filename), files: packed[0]!.files.map((f) => f.path) };
  return packedOnce;
}

let projectOnce: string | null = null;

/** A scratch ESM project with the tarball, the SDK and vitest installed (the versions this repository uses). */
function scratchProject(): string {
  if (projectOnce) return projectOnce;
  const { tarball } = pack();
  const project = path.join(scratch, 'project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'uses-peeklock', private: true, type: 'module' }));
  const version = (pkg: string): string =>
    (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  npm(['install', tarball, `@azure/service-bus@${version('@azure/service-bus')}`, `vitest@${version('vitest')}`], project);
  return (projectOnce = project);
}

describe('the packed package', () => {
  it('installs globally from its tarball and gives a working peeklock command; npx runs it too', { timeout: 420_000 }, async () => {
    const { tarball, files } = pack();
    expect(files).toEqual(expect.arrayContaining(['bin/peeklock.js', 'dist/cli/main.js', 'dist/app/app.js', 'config/peeklock.json', 'package.json']));
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
    // The explorer as the build made it (vite: src/explorer → dist/explorer): the page, its script and stylesheet.
    expect(files).toContain('dist/explorer/index.html');
    expect(files.filter((f) => /^dist\/explorer\/assets\/[^/]+\.(js|css)$/.test(f)).map((f) => path.extname(f)).sort()).toEqual(['.css', '.js']);

    const prefix = path.join(scratch, 'global');
    npm(['install', '--global', '--prefix', prefix, tarball], scratch);
    const installed = path.join(prefix, 'lib', 'node_modules', 'peeklock');
    expect(fs.existsSync(path.join(installed, 'node_modules', 'typescript'))).toBe(false);
    const bin = path.join(prefix, 'bin', 'peeklock');

    const version = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
    expect(version.stdout).toBe(`${VERSION}\n`);
    expect(version.status).toBe(0);

    // Starts on the shipped config (a free port, a scratch data dir), logs `listening`, stops on SIGTERM.
    const proc = trackChild(spawn(bin, ['start', '--port', '0', '--http-port', '0', '--data-dir', path.join(scratch, 'data')], { stdio: ['ignore', 'pipe', 'pipe'] }));
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
    // The installed broker serves the explorer page and the script it names (checked once the broker is stopped).
    const served = await (async () => {
      const page = await fetch(`http://127.0.0.1:${listening.httpPort as number}/`);
      const script = /<script type="module" crossorigin src="([^"]+)">/.exec(await page.text())?.[1] ?? '/no-script-in-the-page';
      const js = await fetch(`http://127.0.0.1:${listening.httpPort as number}${script}`);
      return [page.status, js.status, js.headers.get('content-type')];
    })().catch((e: Error) => [e.message]);
    const code = new Promise((r) => proc.once('exit', (c, s) => r(c ?? s)));
    proc.kill('SIGTERM');
    expect(await code).toBe(0);
    expect(served).toEqual([200, 200, 'text/javascript; charset=utf-8']);

    const npx = spawnSync('npx', ['--yes', '--prefer-offline', `--package=${tarball}`, '--', 'peeklock', '--version'], {
      cwd: scratch,
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(npx.stdout).toBe(`${VERSION}\n`);
    expect(npx.status).toBe(0);
  });

  it('is a library too: a project that installs the tarball starts a broker with startBroker() and uses it from the SDK', { timeout: 420_000 }, () => {
    const { files } = pack();
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/vitest.js', 'dist/vitest.d.ts']));
    const project = scratchProject();
    fs.writeFileSync(
      path.join(project, 'main.mjs'),
      `import fs from 'node:fs';
import { ServiceBusClient } from '@azure/service-bus';
import { startBroker } from 'peeklock';
const broker = await startBroker({ clock: 'manual', config: { UserConfig: { Namespaces: [{ Name: 'ns', Queues: [{ Name: 'orders' }] }] } } });
const client = new ServiceBusClient(broker.connectionString);
await client.createSender('orders').sendMessages({ body: 'from a scratch project' });
const receiver = client.createReceiver('orders');
const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
await broker.advance(60_001);
const lost = await receiver.completeMessage(m).then(() => 'completed', (e) => e.code);
await client.close();
await broker.stop();
console.log(JSON.stringify({ body: m.body, lost, dataDirLeft: fs.existsSync(broker.dataDir), exports: Object.keys(await import('peeklock')).sort(), vitest: typeof (await import('peeklock/vitest')).default }));
`,
    );
    const run = spawnSync(process.execPath, ['main.mjs'], { cwd: project, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({
      body: 'from a scratch project',
      lost: 'MessageLockLost',
      dataDirLeft: false,
      exports: ['ConfigError', 'remoteBroker', 'startBroker'],
      vitest: 'function',
    });
    expect(run.status).toBe(0);
  });

  it('runs the README vitest recipe: peeklock/vitest as globalSetup, the address through inject, the clock over HTTP', { timeout: 420_000 }, () => {
    const project = scratchProject();
    const recipe = path.join(project, 'recipe');
    fs.cpSync(path.join(ROOT, 'test', 'readme', 'recipe'), recipe, { recursive: true });
    const run = spawnSync(path.join(project, 'node_modules', '.bin', 'vitest'), ['run', '--config', 'vitest.config.ts'], {
      cwd: recipe,
      encoding: 'utf8',
      timeout: 120_000,
      // The child is a vitest run of its own: none of this run's settings may leak into it.
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'PEEKLOCK_CONFIG' && k !== 'NODE_OPTIONS')),
    });
    expect(`${run.stdout}${run.stderr}`).toMatch(/1 passed/);
    expect(run.status).toBe(0);
  });
});
