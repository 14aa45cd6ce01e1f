// `start --container` (src/cli/container.ts): the emulator's Config.json path and environment, the data dir's mount
// read from /proc/self/mountinfo text, and, through the real CLI on this host, the ignored-variables line, the ready
// line after `listening` (and never without --container) and a bad EMULATOR_HTTP_PORT refused with one line.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  containerStart,
  dataDirLine,
  dataDirMount,
  EMULATOR_CONFIG,
  EMULATOR_READY_LINE,
} from '../../src/cli/container.js';
import { BIN, exited, startChild, writeConfig } from '../helpers/child-broker.js';

const SHIPPED = '/opt/peeklock/config/peeklock.json';
const HEX = 'a'.repeat(64);

describe('containerStart', () => {
  it('reads the mounted emulator Config.json when it is there, else the shipped config', () => {
    expect(containerStart({}, SHIPPED, (f) => f === EMULATOR_CONFIG)).toEqual({
      config: EMULATOR_CONFIG,
      configSource: 'emulator mount',
      ignored: [],
    });
    expect(containerStart({}, SHIPPED, () => false)).toMatchObject({ config: SHIPPED, configSource: 'shipped default' });
  });

  it('names (never echoes) the emulator variables that mean nothing here, and takes EMULATOR_HTTP_PORT', () => {
    const env = { ACCEPT_EULA: 'Y', SQL_SERVER: 'sqlserver', MSSQL_SA_PASSWORD: 'S3cret!pw', SQL_WAIT_INTERVAL: '15', EMULATOR_HTTP_PORT: '5301', HOME: '/x' };
    const start = containerStart(env, SHIPPED, () => false);
    expect(start.ignored).toEqual(['ACCEPT_EULA', 'SQL_SERVER', 'MSSQL_SA_PASSWORD', 'SQL_WAIT_INTERVAL']);
    expect(start.httpPort).toBe(5301);
    expect(JSON.stringify(start)).not.toContain('S3cret');
  });

  it('refuses an EMULATOR_HTTP_PORT that is not a port', () => {
    for (const bad of ['0', '65536', 'http', '53.1']) {
      expect(() => containerStart({ EMULATOR_HTTP_PORT: bad }, SHIPPED, () => false)).toThrow(/EMULATOR_HTTP_PORT: .* is not a port; use an integer from 1 to 65535/);
    }
  });
});

describe('dataDirMount', () => {
  const line = (root: string, at: string): string => `1234 1200 253:0 ${root} ${at} rw,relatime - ext4 /dev/vda rw`;
  const base = [line('/', '/'), '1300 1234 0:5 / /proc rw - proc proc rw'].join('\n');

  it('tells no mount, an anonymous volume and a named volume or bind mount apart', () => {
    expect(dataDirMount('/data', base)).toEqual({ kind: 'none' });
    const anon = `/var/lib/containers/storage/volumes/${HEX}/_data`;
    expect(dataDirMount('/data', `${base}\n${line(anon, '/data')}`)).toEqual({ kind: 'anonymous', source: anon });
    const named = '/var/lib/docker/volumes/peeklock-data/_data';
    expect(dataDirMount('/data', `${base}\n${line(named, '/data')}`)).toEqual({ kind: 'mounted', source: named });
    expect(dataDirMount('/data', `${base}\n${line('/home/me/pk', '/data')}`)).toMatchObject({ kind: 'mounted' });
    // A mount below the data dir is not the data dir.
    expect(dataDirMount('/data', `${base}\n${line('/x', '/data/tls')}`)).toEqual({ kind: 'none' });
  });

  it('takes the last mount on the same point (mounted over the earlier one) and unescapes octal paths', () => {
    const stacked = `${base}\n${line(`/volumes/${HEX}/_data`, '/data')}\n${line('/srv/keep', '/data')}`;
    expect(dataDirMount('/data', stacked)).toMatchObject({ kind: 'mounted', source: '/srv/keep' });
    expect(dataDirMount('/my data', `${base}\n${line('/v', '/my\\040data')}`)).toMatchObject({ kind: 'mounted' });
  });

  it('says in one line whether messages outlive the container', () => {
    expect(dataDirLine('/data', { kind: 'none' })).toEqual({
      level: 'warn',
      msg: 'data dir /data is not a mounted volume: messages are lost when the container is removed; mount a named volume or a host directory there (docker run -v peeklock-data:/data) to keep them',
    });
    expect(dataDirLine('/data', { kind: 'anonymous', source: 's' }).msg).toContain('anonymous volume: messages survive a restart of this container, not a new container');
    expect(dataDirLine('/data', { kind: 'mounted', source: 's' })).toEqual({ level: 'info', msg: 'data dir /data is a mounted volume: messages outlive the container' });
  });
});

describe('peeklock start --container on this host', () => {
  const made: string[] = [];
  afterAll(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it('logs the ignored variables once, the data dir line, then the ready line after listening; none of it without --container', async () => {
    const { config, dir } = writeConfig([{ Name: 'q' }]);
    made.push(dir);
    const env = { ACCEPT_EULA: 'Y', MSSQL_SA_PASSWORD: 'S3cret!pw', SQL_WAIT_INTERVAL: '15' };
    const b = await startChild(['--container', '--config', config, '--http-port', '0'], { env });
    // The ready line follows `listening` in the same synchronous write sequence; give the pipe a moment.
    for (let i = 0; i < 50 && !b.output().includes(EMULATOR_READY_LINE); i++) await new Promise((r) => setTimeout(r, 20));
    b.proc.kill('SIGTERM');
    expect(await exited(b.proc)).toBe(0);
    const lines = b.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; [k: string]: unknown });
    const msgs = lines.map((l) => l.msg);
    expect(msgs.filter((m) => m.startsWith('ignoring emulator settings'))).toEqual([
      'ignoring emulator settings that mean nothing here (no SQL Server, no EULA): ACCEPT_EULA, MSSQL_SA_PASSWORD, SQL_WAIT_INTERVAL',
    ]);
    expect(msgs.filter((m) => m === EMULATOR_READY_LINE)).toHaveLength(1);
    expect(msgs.indexOf(EMULATOR_READY_LINE)).toBeGreaterThan(msgs.indexOf('listening'));
    // --config wins over the emulator's path; a temp dir on this host is not a mount point.
    expect(lines.find((l) => l.configSource !== undefined)).toMatchObject({ configSource: '--config', config, mount: 'none', level: 40 });
    expect(b.output()).not.toContain('S3cret');

    const plain = await startChild(['--config', config, '--http-port', '0'], { env });
    plain.proc.kill('SIGTERM');
    expect(await exited(plain.proc)).toBe(0);
    expect(plain.output()).not.toContain(EMULATOR_READY_LINE);
    expect(plain.output()).not.toContain('ignoring emulator settings');
  });

  it('refuses a bad EMULATOR_HTTP_PORT with one line and exit code 2', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-container-'));
    made.push(dataDir);
    const r = spawnSync(process.execPath, [BIN, 'start', '--container', '--port', '0', '--data-dir', dataDir], {
      env: { ...process.env, EMULATOR_HTTP_PORT: 'http' },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('peeklock: EMULATOR_HTTP_PORT: "http" is not a port; use an integer from 1 to 65535\n');
  });
});
