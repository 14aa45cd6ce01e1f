// The local certificate authority: a server certificate that chains to the CA and names the loopback and
// configured hosts, keys readable by the owner only, and the same CA across restarts.

import { afterEach, describe, expect, it } from 'vitest';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { ensureLocalCa, serverNames } from '../../src/tls/ca.js';

const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-ca-'));
  dirs.push(d);
  return path.join(d, 'tls');
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function leaf(pem: string): crypto.X509Certificate {
  return new crypto.X509Certificate(pem);
}

describe('local certificate authority', () => {
  it('issues a server certificate signed by the CA for loopback and configured names', () => {
    const ca = ensureLocalCa(tmp(), ['broker.test']);
    const caCert = leaf(ca.caCert);
    const server = leaf(fs.readFileSync(ca.serverCertPath, 'utf8'));
    expect(caCert.ca).toBe(true);
    expect(server.ca).toBe(false);
    expect(server.verify(caCert.publicKey)).toBe(true);
    expect(server.checkIssued(caCert)).toBe(true);
    expect(server.checkHost('localhost')).toBe('localhost');
    expect(server.checkHost('broker.test')).toBe('broker.test');
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(server.checkIP('::1')).toBe('::1');
    expect(server.checkHost('other.test')).toBeUndefined();
    expect(ca.created).toEqual({ ca: true, server: true });
  });

  it('writes private keys readable by the owner only', () => {
    const ca = ensureLocalCa(tmp(), []);
    expect(fs.statSync(path.join(ca.dir, 'ca.key')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(ca.serverKeyPath).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(ca.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('reuses the CA and the server certificate across restarts', () => {
    const dir = tmp();
    const first = ensureLocalCa(dir, ['broker.test']);
    const again = ensureLocalCa(dir, ['BROKER.test']);
    expect(again.created).toEqual({ ca: false, server: false });
    expect(again.caCert).toBe(first.caCert);
    expect(again.serverCert).toBe(first.serverCert);
  });

  it('re-issues the server certificate, under the same CA, when the names change', () => {
    const dir = tmp();
    const first = ensureLocalCa(dir, ['a.test']);
    const next = ensureLocalCa(dir, ['a.test', 'b.test']);
    expect(next.created).toEqual({ ca: false, server: true });
    expect(next.caCert).toBe(first.caCert);
    const server = leaf(fs.readFileSync(next.serverCertPath, 'utf8'));
    expect(server.checkHost('b.test')).toBe('b.test');
    expect(server.verify(leaf(first.caCert).publicKey)).toBe(true);
  });

  it('re-issues a server certificate that is about to expire', () => {
    const dir = tmp();
    const start = new Date();
    const first = ensureLocalCa(dir, [], start);
    const later = ensureLocalCa(dir, [], new Date(start.getTime() + 380 * 24 * 3600 * 1000));
    expect(later.created.server).toBe(true);
    expect(later.caCert).toBe(first.caCert);
    expect(later.serverCert).not.toBe(first.serverCert);
  });

  it('serves a TLS handshake that a client trusting only the CA accepts', async () => {
    const ca = ensureLocalCa(tmp(), []);
    const server = tls.createServer({ cert: ca.serverCert, key: ca.serverKey, minVersion: 'TLSv1.2' }, (s) => s.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      for (const servername of ['localhost', undefined]) {
        const text = await new Promise<string>((resolve, reject) => {
          const s = tls.connect({ host: '127.0.0.1', port, ca: ca.caCert, servername }, () => undefined);
          let out = '';
          s.on('data', (d) => (out += d));
          s.on('end', () => resolve(out));
          s.on('error', reject);
        });
        expect(text).toBe('ok');
      }
    } finally {
      server.close();
    }
  });

  it('normalises names: lowercase, no duplicates, no wildcard bind addresses', () => {
    expect(serverNames(['Broker.Test', '0.0.0.0', '::', 'localhost', '[::1]'])).toEqual(['localhost', '127.0.0.1', '::1', 'broker.test']);
  });
});
