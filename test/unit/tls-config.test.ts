// The TLS settings: the amqps port rule, `Broker.Tls` validation, the certificate the listener serves, and link
// addresses written as absolute URLs (uamqp clients).

import { afterAll, describe, expect, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { ConfigError, effectiveTlsPort, parseConfig } from '../../src/config/load.js';
import { tlsCredentials } from '../../src/app/tls.js';
import { entityAddress } from '../../src/amqp/address.js';
import { classifyFirstByte } from '../../src/tls/sniff.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker } from '../helpers/broker.js';

function withBroker(broker: Record<string, unknown>): string {
  return JSON.stringify({ UserConfig: { Namespaces: [{ Name: 'ns' }] }, Broker: broker });
}

function problems(text: string): string[] {
  try {
    parseConfig(text, 't');
  } catch (err) {
    return (err as ConfigError).problems;
  }
  return [];
}

describe('the amqps port rule', () => {
  it('moves with the AMQP port from 5671, as the HTTP port does from 5300', () => {
    expect(effectiveTlsPort({ port: 5672 })).toBe(5671);
    expect(effectiveTlsPort({ port: 5673 })).toBe(5672);
    expect(effectiveTlsPort({ port: 1000 })).toBe(0);
  });
  it('is off with AMQP port 0 unless set, and an explicit value wins', () => {
    expect(effectiveTlsPort({ port: 0 })).toBe(-1);
    expect(effectiveTlsPort({ port: 0, tlsPort: 0 })).toBe(0);
    expect(effectiveTlsPort({ port: 5672, tlsPort: -1 })).toBe(-1);
    expect(effectiveTlsPort({ port: 5672, tlsPort: 15671 })).toBe(15671);
  });
});

describe('Broker.TlsPort and Broker.Tls', () => {
  it('accepts -1..65535 and the Tls settings', () => {
    const c = parseConfig(withBroker({ TlsPort: -1, Tls: { CaDir: '/x', HostNames: ['broker.test'] } }), 't');
    expect(c.broker.tlsPort).toBe(-1);
    expect(c.broker.tls).toEqual({ caDir: '/x', hostNames: ['broker.test'] });
  });
  it('refuses a port out of range and a certificate without its key, one line each', () => {
    expect(problems(withBroker({ TlsPort: -2 }))).toEqual(['Broker.TlsPort = -2: must be an integer from -1 to 65535']);
    expect(problems(withBroker({ Tls: { CertFile: 'a.pem' } }))).toEqual([
      'Broker.Tls.KeyFile: required when Broker.Tls.CertFile is set (a certificate and its private key, PEM)',
    ]);
  });
});

describe('Broker.HttpsPort', () => {
  it('is unset by default, takes -1..65535, and refuses anything else in one line', () => {
    expect(parseConfig(withBroker({}), 't').broker.httpsPort).toBeUndefined();
    expect(parseConfig(withBroker({ HttpsPort: 443 }), 't').broker.httpsPort).toBe(443);
    expect(problems(withBroker({ HttpsPort: 70000 }))).toEqual(['Broker.HttpsPort = 70000: must be an integer from -1 to 65535']);
  });
});

describe('the certificate the TLS listener serves', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-tlscfg-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  it('is issued by the local CA in <dataDir>/tls by default, for the configured host too', () => {
    const creds = tlsCredentials({ host: 'broker.test', dataDir: dir });
    expect(creds.caCertPath).toBe(path.join(dir, 'tls', 'ca.crt'));
    expect(new X509Certificate(creds.cert).checkHost('broker.test')).toBe('broker.test');
  });
  it('is the configured pair when CertFile and KeyFile are set, and a missing file is named in one line', () => {
    const ca = path.join(dir, 'tls');
    const creds = tlsCredentials({ host: '127.0.0.1', dataDir: dir, tls: { certFile: path.join(ca, 'server.crt'), keyFile: path.join(ca, 'server.key'), hostNames: [] } });
    expect(creds.certFile).toBe(path.join(ca, 'server.crt'));
    expect(() => tlsCredentials({ host: '127.0.0.1', dataDir: dir, tls: { certFile: '/nope.pem', keyFile: '/nope.key', hostNames: [] } })).toThrow(
      'cannot read Broker.Tls.CertFile /nope.pem (no such file); give a readable PEM file',
    );
  });
  it('refuses a certificate with another certificate\'s key', () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-tlscfg-'));
    tlsCredentials({ host: '127.0.0.1', dataDir: other });
    const t = { certFile: path.join(dir, 'tls', 'server.crt'), keyFile: path.join(other, 'tls', 'server.key'), hostNames: [] };
    expect(() => tlsCredentials({ host: '127.0.0.1', dataDir: dir, tls: t })).toThrow(/cannot be used together/);
    fs.rmSync(other, { recursive: true, force: true });
  });
});

describe('link addresses', () => {
  it('names the entity by the path of an absolute URL, as Service Bus does', () => {
    expect(entityAddress('amqps://localhost/pyq')).toBe('pyq');
    expect(entityAddress('sb://ns.servicebus.windows.net/t/Subscriptions/s')).toBe('t/Subscriptions/s');
    expect(entityAddress('amqps://localhost:5671/q/$management')).toBe('q/$management');
    expect(entityAddress('amqps://localhost/my%20q')).toBe('my q');
    expect(entityAddress('q/$DeadLetterQueue')).toBe('q/$DeadLetterQueue');
    expect(entityAddress('$cbs')).toBe('$cbs');
  });
});

describe('reloading the TLS certificate', () => {
  it('serves a replaced CertFile to new connections after reloadTls, and keeps the old one when the new is unreadable', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-reload-'));
    const a = tlsCredentials({ host: '127.0.0.1', dataDir: path.join(dir, 'a') });
    const b = tlsCredentials({ host: '127.0.0.1', dataDir: path.join(dir, 'b') });
    const certFile = path.join(dir, 'cert.pem');
    const keyFile = path.join(dir, 'key.pem');
    fs.writeFileSync(certFile, a.cert);
    fs.writeFileSync(keyFile, a.key);
    const broker = await startTestBroker([], { store: new MemoryStore(), broker: { TlsPort: 0, Tls: { CertFile: certFile, KeyFile: keyFile } } });
    const caA = fs.readFileSync(a.caCertPath!, 'utf8');
    const caB = fs.readFileSync(b.caCertPath!, 'utf8');
    try {
      expect(await trusts(broker.tlsPort!, caA)).toBe(true);
      fs.writeFileSync(certFile, b.cert);
      fs.writeFileSync(keyFile, b.key);
      expect(await trusts(broker.tlsPort!, caA)).toBe(true);
      broker.reloadTls();
      expect(await trusts(broker.tlsPort!, caB)).toBe(true);
      expect(await trusts(broker.tlsPort!, caA)).toBe(false);
      fs.rmSync(keyFile);
      broker.reloadTls();
      expect(await trusts(broker.tlsPort!, caB)).toBe(true);
    } finally {
      await broker.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Whether a client trusting only `ca` completes a handshake with the TLS port. */
function trusts(port: number, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', ca }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

describe('first-byte sniffing', () => {
  it('tells AMQP, TLS and HTTP apart by the first byte', () => {
    expect(classifyFirstByte('A'.charCodeAt(0))).toBe('amqp');
    expect(classifyFirstByte(0x16)).toBe('tls');
    for (const m of ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH']) expect(classifyFirstByte(m.charCodeAt(0))).toBe('http');
    expect(classifyFirstByte(0x00)).toBe('unknown');
  });
});
