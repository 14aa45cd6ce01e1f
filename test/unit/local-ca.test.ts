// The local certificate authority: a server certificate that chains to the CA and names the loopback and
// configured hosts, keys readable by the owner only, and the same CA across restarts.

import { afterEach, describe, expect, it } from 'vitest';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import forge from 'node-forge';
import { CA_FILES, ensureLocalCa, serverNames } from '../../src/tls/ca.js';

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

  // Each file is written durably, but a key and its certificate are two files: a power cut between the two writes
  // (docs/durability.md, "Power loss") leaves a new key beside the old certificate. The next start must not serve it.
  it('issues a new pair when a key does not match its certificate (a cut between the two writes)', () => {
    const dir = tmp();
    ensureLocalCa(dir, []);
    const otherKey = (): string => crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    fs.writeFileSync(path.join(dir, CA_FILES.serverKey), otherKey());
    const server = ensureLocalCa(dir, []);
    expect(server.created).toEqual({ ca: false, server: true });
    expect(leaf(fs.readFileSync(server.serverCertPath, 'utf8')).checkPrivateKey(crypto.createPrivateKey(server.serverKey))).toBe(true);
    fs.writeFileSync(path.join(dir, CA_FILES.caKey), otherKey());
    const ca = ensureLocalCa(dir, []);
    expect(ca.created).toEqual({ ca: true, server: true });
    expect(leaf(ca.caCert).checkPrivateKey(crypto.createPrivateKey(fs.readFileSync(path.join(dir, CA_FILES.caKey), 'utf8')))).toBe(true);
  });

  it('re-issues the server certificate, under the same CA, when the names change within what the CA permits', () => {
    const dir = tmp();
    const first = ensureLocalCa(dir, ['a.test']);
    const next = ensureLocalCa(dir, ['a.test', 'ns1.a.test']);
    expect(next.created).toEqual({ ca: false, server: true });
    expect(next.caCert).toBe(first.caCert);
    const server = leaf(fs.readFileSync(next.serverCertPath, 'utf8'));
    expect(server.checkHost('ns1.a.test')).toBe('ns1.a.test');
    expect(server.verify(leaf(first.caCert).publicKey)).toBe(true);
  });

  it("issues a new CA when a name falls outside the old one's name constraints", () => {
    const dir = tmp();
    const first = ensureLocalCa(dir, ['a.test']);
    const next = ensureLocalCa(dir, ['a.test', 'b.test']);
    expect(next.created).toEqual({ ca: true, server: true });
    expect(next.caCert).not.toBe(first.caCert);
    expect(leaf(fs.readFileSync(next.serverCertPath, 'utf8')).checkHost('b.test')).toBe('b.test');
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

  it('constrains the CA to the names it serves: Node refuses a certificate it signed for any other name', async () => {
    const ca = ensureLocalCa(tmp(), ['broker.test', '10.1.2.3']);
    const caKey = fs.readFileSync(path.join(ca.dir, CA_FILES.caKey), 'utf8');
    const attempt = (pair: { cert: string; key: string }, servername: string, host = '127.0.0.1') => handshake(pair, ca.caCert, servername, host);
    // The served names still verify, namespace subdomains included.
    expect(await attempt({ cert: ca.serverCert, key: ca.serverKey }, 'localhost')).toBe('ok');
    expect(await attempt(signLeaf(ca.caCert, caKey, ['ns1.broker.test']), 'ns1.broker.test')).toBe('ok');
    expect(await attempt(signLeaf(ca.caCert, caKey, ['10.1.2.3']), '', '10.1.2.3')).toBe('ok');
    // A certificate for a name the CA never served is refused, though its signature is good.
    expect(await attempt(signLeaf(ca.caCert, caKey, ['bank.example']), 'bank.example')).toMatch(/subtree|constraint|violation/i);
    expect(await attempt(signLeaf(ca.caCert, caKey, ['10.9.9.9']), '', '10.9.9.9')).toMatch(/subtree|constraint|violation/i);
  });

  it('replaces a CA made before name constraints (one that could sign any name)', () => {
    const dir = tmp();
    fs.mkdirSync(dir, { recursive: true });
    const old = selfSignedCa();
    fs.writeFileSync(path.join(dir, CA_FILES.caCert), old.cert);
    fs.writeFileSync(path.join(dir, CA_FILES.caKey), old.key, { mode: 0o600 });
    const ca = ensureLocalCa(dir, []);
    expect(ca.created.ca).toBe(true);
    expect(ca.caCert).not.toBe(old.cert);
  });

  it('normalises names: lowercase, no duplicates, no wildcard bind addresses', () => {
    expect(serverNames(['Broker.Test', '0.0.0.0', '::', 'localhost', '[::1]'])).toEqual(['localhost', '127.0.0.1', '::1', 'broker.test']);
  });
});

// A TLS handshake against a server with `pair`, trusting only `caPem`; 'ok' or the client's error message.
async function handshake(pair: { cert: string; key: string }, caPem: string, servername: string, host: string): Promise<string> {
  const server = tls.createServer({ ...pair, minVersion: 'TLSv1.2' }, (s) => s.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    return await new Promise<string>((resolve) => {
      // checkServerIdentity matches the name the client meant (`host`), though the socket goes to 127.0.0.1.
      const s = tls.connect({ host: '127.0.0.1', port, ca: caPem, ...(servername ? { servername } : {}), checkServerIdentity: (_h, cert) => tls.checkServerIdentity(servername || host, cert) });
      let out = '';
      s.on('data', (d) => (out += d));
      s.on('end', () => resolve(out));
      s.on('error', (e) => resolve(e.message));
    });
  } finally {
    server.close();
  }
}

function rsa(): { priv: forge.pki.rsa.PrivateKey; pub: forge.pki.PublicKey; pem: string } {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { priv, pub: forge.pki.setRsaPublicKey(priv.n, priv.e), pem };
}

function cert(pub: forge.pki.PublicKey, subject: string, issuer: forge.pki.CertificateField[], extensions: unknown[]): forge.pki.Certificate {
  const c = forge.pki.createCertificate();
  c.publicKey = pub;
  c.serialNumber = '01' + crypto.randomBytes(8).toString('hex');
  c.validity.notBefore = new Date(Date.now() - 3600_000);
  c.validity.notAfter = new Date(Date.now() + 86_400_000);
  c.setSubject([{ name: 'commonName', value: subject }]);
  c.setIssuer(issuer);
  c.setExtensions(extensions as never[]);
  return c;
}

// What an attacker holding ca.key could make: a leaf for any names, signed by the CA.
function signLeaf(caPem: string, caKeyPem: string, names: string[]): { cert: string; key: string } {
  const ca = forge.pki.certificateFromPem(caPem);
  const keys = rsa();
  // The subject names no host (OpenSSL would check a host-like CN against the DNS constraints too).
  const c = cert(keys.pub, 'peeklock test leaf', ca.subject.attributes, [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: names.map((n) => (/^[\d.]+$/.test(n) ? { type: 7, ip: n } : { type: 2, value: n })) },
  ]);
  c.sign(forge.pki.privateKeyFromPem(caKeyPem), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(c), key: keys.pem };
}

// A CA as the broker made them before name constraints.
function selfSignedCa(): { cert: string; key: string } {
  const keys = rsa();
  const subject = [{ name: 'commonName', value: 'peeklock local CA old' }];
  const c = cert(keys.pub, 'peeklock local CA old', subject, [
    { name: 'basicConstraints', cA: true, critical: true, pathLenConstraint: 0 },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
  ]);
  c.sign(keys.priv, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(c), key: keys.pem };
}
