// The CLI as users run it: bad configs and flags print one line and exit 2; the shipped config starts.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exited, runCli, startChild } from '../helpers/child-broker.js';

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
    expect(r2.stderr.trim().split('\n')).toHaveLength(1);
    expect(r2.stderr).toContain('65535');
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
