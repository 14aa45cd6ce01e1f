// Certificates a client must refuse: a broker configured (Broker.Tls.CertFile/KeyFile) with an expired
// certificate, or with one issued for another host name. The CA is trusted, so only the certificate itself is
// wrong. The JS SDK 7.9.5 (over amqps in a child process with NODE_EXTRA_CA_CERTS, and over wss in-process) and
// Qpid Proton must fail with the certificate error within seconds, not hang or retry forever, and the broker
// keeps serving plain AMQP clients.

import crypto from 'node:crypto';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import forge from 'node-forge';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceBusClient } from '@azure/service-bus';
import WebSocket from 'ws';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROTON_SNIPPET = fileURLToPath(new URL('../snippets/proton_amqps.py', import.meta.url));
const hasProton = spawnSync('/usr/bin/python3', ['-c', 'import proton'], { stdio: 'ignore' }).status === 0;
const run = promisify(execFile);
const DAY = 86_400_000;
// node-forge's message-digest namespace, under a local name.
const { md: digest } = forge;
const CS = 'Endpoint=sb://localhost/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE';

interface Pem {
  cert: string;
  key: string;
}

function keys(): { priv: forge.pki.rsa.PrivateKey; pub: forge.pki.PublicKey; pem: string } {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { priv, pub: forge.pki.setRsaPublicKey(priv.n, priv.e), pem };
}

/** A CA, and a server certificate it signs for `names`, valid from `from` to `to`. */
function issue(names: string[], from: Date, to: Date): { ca: Pem; server: Pem } {
  const caKeys = keys();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.pub;
  ca.serialNumber = '01';
  ca.validity.notBefore = new Date(Date.now() - DAY);
  ca.validity.notAfter = new Date(Date.now() + 30 * DAY);
  const caName = [{ name: 'commonName', value: 'bad-cert test CA' }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, critical: true },
  ]);
  ca.sign(caKeys.priv, digest.sha256.create());
  const srvKeys = keys();
  const srv = forge.pki.createCertificate();
  srv.publicKey = srvKeys.pub;
  srv.serialNumber = '02';
  srv.validity.notBefore = from;
  srv.validity.notAfter = to;
  srv.setSubject([{ name: 'commonName', value: names[0]! }]);
  srv.setIssuer(caName);
  srv.setExtensions([
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: names.map((n) => ({ type: 2, value: n })) },
  ]);
  srv.sign(caKeys.priv, digest.sha256.create());
  return {
    ca: { cert: forge.pki.certificateToPem(ca), key: caKeys.pem },
    server: { cert: forge.pki.certificateToPem(srv), key: srvKeys.pem },
  };
}

const CASES = [
  { name: 'an expired certificate', code: 'CERT_HAS_EXPIRED', names: ['localhost'], from: -60, to: -1 },
  { name: 'a certificate for another host name', code: 'ERR_TLS_CERT_ALTNAME_INVALID', names: ['wrong.example'], from: -1, to: 30 },
];

let broker: TestBroker | undefined;
let dir: string | undefined;
afterEach(async () => {
  await broker?.dispose();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  broker = undefined;
  dir = undefined;
});

async function start(c: (typeof CASES)[number]): Promise<{ b: TestBroker; caFile: string }> {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-badcert-'));
  const { ca, server } = issue(c.names, new Date(Date.now() + c.from * DAY), new Date(Date.now() + c.to * DAY));
  const file = (n: string, text: string): string => (fs.writeFileSync(path.join(dir!, n), text), path.join(dir!, n));
  const caFile = file('ca.crt', ca.cert);
  broker = await startTestBroker([{ Name: 'q' }], {
    store: new MemoryStore(),
    broker: { TlsPort: 0, Tls: { CertFile: file('server.crt', server.cert), KeyFile: file('server.key', server.key) } },
  });
  return { b: broker, caFile };
}

// The amqps client of docs/clients.md, in a child process so that NODE_EXTRA_CA_CERTS applies.
const CLIENT = `
import { ServiceBusClient } from '@azure/service-bus';
const client = new ServiceBusClient(process.argv[2], { customEndpointAddress: 'amqps://localhost:' + process.argv[1] });
try {
  await client.createSender('q').sendMessages({ body: 'x' });
  process.stdout.write('sent\\n');
} catch (err) {
  process.stdout.write(JSON.stringify({ code: err.code, message: String(err.message) }) + '\\n');
}
await client.close();
`;

function amqpsClient(port: number, caFile: string): Promise<{ out: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: caFile };
    const proc = spawn(process.execPath, ['--input-type=module', '-e', CLIENT, String(port), CS], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    proc.on('close', () => {
      clearTimeout(timer);
      resolve({ out, ms: Date.now() - t0 });
    });
  });
}

/** A plain AMQP round trip: proof the broker serves others. */
async function plainRoundTrip(b: TestBroker): Promise<void> {
  const client = new ServiceBusClient(b.connectionString);
  await client.createSender('q').sendMessages({ body: 'plain' });
  const [m] = await client.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(1, { maxWaitTimeInMs: 5000 });
  await client.close();
  expect(m?.body).toBe('plain');
}

describe('a client refuses a bad server certificate, and the broker keeps serving', () => {
  for (const c of CASES) {
    it(`${c.name}: the SDK over amqps fails with ${c.code} within seconds`, async () => {
      const { b, caFile } = await start(c);
      const { out, ms } = await amqpsClient(b.tlsPort!, caFile);
      expect(out).toContain(c.code);
      expect(ms).toBeLessThan(30_000);
      await plainRoundTrip(b);
    }, 60_000);

    it.skipIf(!hasProton && !process.env.CI)(`${c.name}: Qpid Proton (the snippet of docs/clients.md) refuses it within seconds`, async () => {
      const { b, caFile } = await start(c);
      const t0 = Date.now();
      const r = await run('timeout', ['30', '/usr/bin/python3', PROTON_SNIPPET], {
        env: { PATH: process.env.PATH!, PEEKLOCK_PORT: String(b.tlsPort), PEEKLOCK_CA: caFile },
      }).then(
        () => ({ failed: false, stderr: '' }),
        (e: { code?: number; stderr?: string }) => ({ failed: e.code !== 124, stderr: e.stderr ?? '' }),
      );
      expect(r.failed).toBe(true);
      if (process.env.PEEKLOCK_TEST_REPORT) process.stderr.write(r.stderr.split('\n').slice(-3).join('\n'));
      expect(r.stderr).toContain('certificate verify failed');
      expect(Date.now() - t0).toBeLessThan(30_000);
      await plainRoundTrip(b);
    }, 60_000);

    it(`${c.name}: the SDK over wss fails with ${c.code} within seconds`, async () => {
      const { b, caFile } = await start(c);
      const client = new ServiceBusClient(CS, {
        webSocketOptions: { webSocket: WebSocket, webSocketConstructorOptions: { ca: fs.readFileSync(caFile) } },
        customEndpointAddress: `https://localhost:${b.httpPort}`,
      });
      const t0 = Date.now();
      const err = await client
        .createSender('q')
        .sendMessages({ body: 'x' })
        .then(() => null, (e: unknown) => e as Error);
      await client.close();
      expect(String(err?.message) + String((err as { code?: string })?.code)).toContain(c.code);
      expect(Date.now() - t0).toBeLessThan(30_000);
      await plainRoundTrip(b);
    }, 60_000);
  }
});
