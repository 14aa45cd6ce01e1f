// `peeklock cert` and the amqps listener as users run them: the command creates the local CA before the first
// start and prints how to trust it (or, with --pem, the CA certificate itself); `start` then serves a certificate that CA signed, on the port in the
// `listening` line, without making a new CA; a bad --tls-port is one line and exit code 2.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { exited, runCli, startChild, writeConfig } from '../helpers/child-broker.js';

const cfg = writeConfig([{ Name: 'q' }]);
const dataDir = path.join(cfg.dir, 'data');
afterAll(() => fs.rmSync(cfg.dir, { recursive: true, force: true }));

describe('peeklock cert', () => {
  it('creates the CA on first use and prints how to trust it in each client', async () => {
    const r = await runCli(['cert', '--config', cfg.config, '--data-dir', dataDir]);
    expect(r.code).toBe(0);
    const ca = path.join(dataDir, 'tls', 'ca.crt');
    expect(r.stdout).toContain(`local certificate authority: ${ca} (created now)`);
    expect(r.stdout).toContain(`export NODE_EXTRA_CA_CERTS=${ca}`);
    expect(r.stdout).toContain(`export REQUESTS_CA_BUNDLE=${ca}`);
    expect(r.stdout).toContain(`keytool -importcert -noprompt -alias peeklock-ca -file ${ca}`);
    expect(r.stdout).not.toMatch(/PRIVATE KEY/);
    const again = await runCli(['cert', '--config', cfg.config, '--data-dir', dataDir, '--path']);
    expect(again.stdout).toBe(`${ca}\n`);
  });

  it('--pem prints the CA certificate itself (for `docker exec … peeklock cert --container --pem > ca.crt`), nothing private', async () => {
    const r = await runCli(['cert', '--config', cfg.config, '--data-dir', dataDir, '--pem']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toBe(fs.readFileSync(path.join(dataDir, 'tls', 'ca.crt'), 'utf8'));
    expect(r.stdout).toMatch(/^-----BEGIN CERTIFICATE-----\r?\n[\s\S]+\r?\n-----END CERTIFICATE-----\r?\n$/);
    expect(r.stdout.match(/BEGIN CERTIFICATE/g)).toHaveLength(1);
    expect(r.stdout).not.toMatch(/PRIVATE KEY/);
  });

  it('start serves a certificate signed by that CA on the tlsPort of its listening line', async () => {
    const ca = fs.readFileSync(path.join(dataDir, 'tls', 'ca.crt'), 'utf8');
    const child = await startChild(['--config', cfg.config, '--data-dir', dataDir, '--tls-port', '0']);
    try {
      const line = JSON.parse(child.output().split('\n').find((l) => l.includes('"listening"'))!) as { tlsPort: number };
      expect(line.tlsPort).toBeGreaterThan(0);
      const protocol = await new Promise<string | null>((resolve, reject) => {
        const s = tls.connect({ port: line.tlsPort, host: '127.0.0.1', servername: 'localhost', ca }, () => {
          resolve(s.getProtocol());
          s.destroy();
        });
        s.on('error', reject);
      });
      expect(protocol).toMatch(/^TLSv1\.[23]$/);
      expect(child.output()).not.toMatch(/PRIVATE KEY/);
    } finally {
      child.proc.kill('SIGTERM');
      await exited(child.proc);
    }
    expect(fs.readFileSync(path.join(dataDir, 'tls', 'ca.crt'), 'utf8')).toBe(ca);
  });

  it('refuses --tls-port -2 with one line, exit code 2', async () => {
    const r = await runCli(['start', '--config', cfg.config, '--tls-port', '-2']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringContaining('-1 for no TLS listener')]);
  });
});
