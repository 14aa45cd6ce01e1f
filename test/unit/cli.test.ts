// The CLI as users run it: bad configs and flags print one line each and exit 2 (every problem at once, the file
// named once); the shipped config starts; --version, a bare `peeklock` and the log formats.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { BIN, exited, runCli, startChild } from '../helpers/child-broker.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function configWith(props: Record<string, unknown>): string {
  const file = path.join(dir, `c-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({
      UserConfig: { Namespaces: [{ Name: 'sbemulatorns', Queues: [{ Name: 'q', Properties: props }] }], Logging: { Type: 'Console' } },
    }),
  );
  return file;
}

describe('peeklock start', () => {
  it('refuses LockDuration PT6M with one line naming path, value and range, exit code 2', async () => {
    const file = configWith({ LockDuration: 'PT6M' });
    const r = await runCli(['start', '--config', file, '--port', '0', '--data-dir', path.join(dir, 'd1')]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('UserConfig.Namespaces[0].Queues[0].Properties.LockDuration');
    expect(lines[0]).toContain('PT6M');
    expect(lines[0]).toContain('PT5M');
    expect(fs.existsSync(path.join(dir, 'd1'))).toBe(false);
  });

  it('refuses MaxDeliveryCount 0 and a port out of range, exit code 2', async () => {
    const r1 = await runCli(['start', '--config', configWith({ MaxDeliveryCount: 0 }), '--port', '0']);
    expect(r1.code).toBe(2);
    expect(r1.stderr).toMatch(/MaxDeliveryCount = 0: .*1/);
    const r2 = await runCli(['start', '--config', configWith({}), '--port', '70000']);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toBe("peeklock: option '-p, --port <n>' argument '70000' is invalid. must be an integer from 0 to 65535\n");
    const r3 = await runCli(['start', '--log-format', 'xml']);
    expect(r3.code).toBe(2);
    expect(r3.stderr).toBe("peeklock: option '--log-format <format>' argument 'xml' is invalid. Allowed choices are json, pretty.\n");
  });

  it('refuses an unreadable config file and invalid JSON with one line, exit code 2', async () => {
    const r1 = await runCli(['start', '--config', path.join(dir, 'missing.json')]);
    expect(r1.code).toBe(2);
    expect(r1.stderr.trim().split('\n')).toHaveLength(1);
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{ "UserConfig": { ');
    const r2 = await runCli(['start', '--config', bad]);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/line \d+/);
  });

  it('starts on the shipped config with --port 0, logs listening, and exits 0 on SIGTERM', async () => {
    const data = path.join(dir, 'shipped');
    const b = await startChild(['--port', '0', '--data-dir', data]);
    expect(b.port).toBeGreaterThan(0);
    const line = b.output().split('\n').find((l) => l.includes('"listening"'))!;
    expect(JSON.parse(line)).toMatchObject({ msg: 'listening', host: '127.0.0.1', port: b.port });
    b.proc.kill('SIGTERM');
    expect(await exited(b.proc)).toBe(0);
  });

  it('accepts PT5M', async () => {
    const b = await startChild(['--config', configWith({ LockDuration: 'PT5M' }), '--port', '0', '--data-dir', path.join(dir, 'd5')]);
    b.proc.kill('SIGINT');
    expect(await exited(b.proc)).toBe(0);
  });
});

describe('peeklock config problems', () => {
  function rawConfig(doc: unknown): string {
    const file = path.join(dir, `r-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, JSON.stringify(doc));
    return file;
  }
  const ns = (queues: unknown[]) => ({ Namespaces: [{ Name: 'sbemulatorns', Queues: queues }], Logging: { Type: 'Console' } });

  it('reports every problem and unknown key at once, naming the file once, exit code 2', async () => {
    const file = rawConfig({
      UserConfig: ns([{ Name: 'q', Properties: { LockDurration: 'PT1M', MaxDeliveryCount: 0, LockDuration: 'PT6M' } }]),
      Broker: { Prot: 5673, Port: 70000 },
    });
    const r = await runCli(['start', '--config', file, '--data-dir', path.join(dir, 'never')]);
    expect(r.code).toBe(2);
    const QP = 'UserConfig.Namespaces[0].Queues[0].Properties';
    expect(r.stderr).toBe(
      [
        `peeklock: ${file}: 3 problems`,
        `  ${QP}.MaxDeliveryCount = 0: must be an integer from 1 to 2147483647`,
        `  ${QP}.LockDuration = "PT6M": must be a duration from PT5S to PT5M`,
        '  Broker.Port = 70000: must be an integer from 0 to 65535',
        `  warning: ${QP}.LockDurration: unknown key, ignored; did you mean LockDuration?`,
        '  warning: Broker.Prot: unknown key, ignored; did you mean Port?',
        '',
      ].join('\n'),
    );
    expect(fs.existsSync(path.join(dir, 'never'))).toBe(false);
  });

  it('warns about a typo with a suggestion and starts; --strict refuses it, exit code 2', async () => {
    const file = rawConfig({ UserConfig: ns([{ Name: 'q', Properties: { LockDurration: 'PT1M' } }]) });
    const b = await startChild(['--config', file, '--port', '0', '--data-dir', path.join(dir, 'typo')]);
    const warn = b
      .output()
      .split('\n')
      .filter((l) => l.includes('unknown key'))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(warn).toEqual([
      expect.objectContaining({ level: 40, msg: 'UserConfig.Namespaces[0].Queues[0].Properties.LockDurration: unknown key, ignored; did you mean LockDuration?' }),
    ]);
    b.proc.kill('SIGTERM');
    expect(await exited(b.proc)).toBe(0);

    const r = await runCli(['start', '--strict', '--config', file, '--port', '0', '--data-dir', path.join(dir, 'strict')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `peeklock: ${file}: UserConfig.Namespaces[0].Queues[0].Properties.LockDurration: unknown key, refused by --strict; did you mean LockDuration?\n`,
    );
  });
});

describe('peeklock --version, help and log formats', () => {
  it('prints the package version for --version and -v', async () => {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const r = await runCli([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${pkg.version}\n`);
    }
  });

  it('prints the whole help for a bare peeklock, listing every command', async () => {
    const r = await runCli([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: peeklock \[options\] \[command\]/);
    for (const cmd of ['start', 'entities', 'peek', 'purge', 'redrive']) expect(r.stdout).toMatch(new RegExp(`^  ${cmd} `, 'm'));
    const start = await runCli(['start', '--help']);
    for (const flag of ['--log-format', '--strict', '--http-port', '--data-dir']) expect(start.stdout).toContain(flag);
  });

  it('logs JSON when stderr is not a terminal, and human-readable lines with --log-format pretty', async () => {
    const json = await startChild(['--port', '0', '--data-dir', path.join(dir, 'json')]);
    json.proc.kill('SIGTERM');
    await exited(json.proc);
    expect(json.output().split('\n').filter(Boolean).every((l) => l.startsWith('{'))).toBe(true);

    const pretty = await prettyRun(['--log-format', 'pretty']);
    expect(pretty).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] WARN: UserConfig\.Namespaces\[0\]\.Queues\[0\]\.Properties\.LockDurration: unknown key, ignored; did you mean LockDuration\?$/m);
    expect(pretty).not.toContain('{"level"');
    // --log-format json wins over a terminal.
    expect(await prettyRun(['--log-format', 'json'], true)).toMatch(/^\{"level":40,/m);
  });

  it.skipIf(!fs.existsSync('/usr/bin/script'))('logs human-readable lines when stderr is a terminal', async () => {
    const out = await prettyRun([], true);
    expect(out).toMatch(/WARN.*LockDurration: unknown key, ignored; did you mean LockDuration\?/);
    expect(out).not.toContain('{"level"');
  });
});

/**
 * Runs a start that logs one warning (a typo) and then fails (a file for a data dir), so it exits by itself;
 * under `script` (a pseudo-terminal) when `tty`. Returns what it wrote, colours stripped.
 */
async function prettyRun(flags: string[], tty = false): Promise<string> {
  const file = path.join(dir, `typo-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({
      UserConfig: { Namespaces: [{ Name: 'sbemulatorns', Queues: [{ Name: 'q', Properties: { LockDurration: 'PT1M' } }] }], Logging: { Type: 'Console' } },
    }),
  );
  const blocker = path.join(dir, 'blocker');
  fs.writeFileSync(blocker, '');
  const args = ['start', ...flags, '--config', file, '--port', '0', '--data-dir', blocker];
  if (!tty) {
    const r = await runCli(args);
    expect(r.code).toBe(1);
    return r.stderr;
  }
  const cmd = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  const r = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8', timeout: 15_000 });
  expect(r.status).toBe(1);
  // eslint-disable-next-line no-control-regex
  return r.stdout.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r/g, '');
}
