// The local certificate authority: clients that insist on TLS (the Python SDK over uamqp, any SDK given a
// connection string without UseDevelopmentEmulator) must trust the broker's certificate. One CA is generated on
// first start into a directory (by default `<dataDir>/tls`), and it signs a server certificate for the loopback
// names plus the configured host names. Users trust the CA once (`peeklock cert` prints how); the server
// certificate is re-issued whenever the names change or it nears expiry, without the CA changing.
//
// A trusted CA whose key sits on a developer's disk must not be able to vouch for the bank: the CA carries X.509
// name constraints (RFC 5280 §4.2.1.10, critical) permitting only the names it was made for — those DNS names
// with their subdomains (namespace hosts such as ns1.localhost) and those addresses exactly. A name outside them
// takes a new CA (to be trusted again); a CA made before constraints is replaced the same way.
//
// Keys come from Node's crypto (fast, native); node-forge only builds and signs the X.509 structures.
// Private keys are written with mode 0600, atomically (fs/durable.ts), and never logged.

import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import forge from 'node-forge';
import { makeDirDurable, PRIVATE_FILE_MODE, writeFileDurably } from '../fs/durable.js';
const { md: digest, asn1 } = forge;

/** OID of the X.509 name constraints extension. */
const NAME_CONSTRAINTS_OID = '2.5.29.30';

/** File names inside the CA directory. */
export const CA_FILES = Object.freeze({
  caCert: 'ca.crt',
  caKey: 'ca.key',
  serverCert: 'server.crt',
  serverKey: 'server.key',
});

/** The names every server certificate covers, whatever the configuration. */
export const LOOPBACK_NAMES: readonly string[] = ['localhost', '127.0.0.1', '::1'];

/** CA lifetime: long, since every client that trusts it would have to re-trust a new one. */
const CA_DAYS = 3650;
/** Server certificate lifetime (within the 398 days browsers and Apple platforms accept). */
const SERVER_DAYS = 397;
/** A server certificate that expires sooner than this is re-issued at start. */
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;

/** The CA and the server certificate, as PEM, with where they live. */
export interface LocalCa {
  dir: string;
  caCertPath: string;
  caCert: string;
  serverCertPath: string;
  serverKeyPath: string;
  /** Server certificate chain (server, then CA) for `tls.createServer({ cert })`. */
  serverCert: string;
  serverKey: string;
  /** Whether this call generated the CA or (re-)issued the server certificate. */
  created: { ca: boolean; server: boolean };
}

/** The names for a server certificate: loopback plus the configured ones, without duplicates, lowercase. */
export function serverNames(extra: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const n of [...LOOPBACK_NAMES, ...extra]) {
    const name = n.trim().toLowerCase().replace(/^\[|\]$/g, '');
    // The wildcard addresses are no name a client dials.
    if (name === '' || name === '0.0.0.0' || name === '::' || out.includes(name)) continue;
    out.push(name);
  }
  return out;
}

/**
 * Loads the CA in `dir`, generating it on first use, and makes sure the server certificate covers `names`
 * (see {@link serverNames}) and is valid for another 30 days; otherwise issues a new one signed by the same CA.
 */
export function ensureLocalCa(dir: string, names: readonly string[], now: Date = new Date()): LocalCa {
  makeDirDurable(dir, 0o700);
  const p = (f: string): string => path.join(dir, f);
  const wanted = serverNames(names);
  let caCert = readIfExists(p(CA_FILES.caCert));
  let caKey = readIfExists(p(CA_FILES.caKey));
  const created = { ca: false, server: false };
  if (!caCert || !caKey || !usable(caCert, now, 0) || !permits(caCert, wanted) || !pairs(caCert, caKey)) {
    ({ cert: caCert, key: caKey } = issueCa(now, wanted));
    writeFileDurably(p(CA_FILES.caKey), caKey, PRIVATE_FILE_MODE);
    writeFileDurably(p(CA_FILES.caCert), caCert, 0o644);
    created.ca = true;
  }
  let serverCert = readIfExists(p(CA_FILES.serverCert));
  let serverKey = readIfExists(p(CA_FILES.serverKey));
  const fresh =
    !created.ca &&
    serverCert &&
    serverKey &&
    usable(serverCert, now, RENEW_BEFORE_MS) &&
    signedBy(serverCert, caCert) &&
    covers(serverCert, wanted) &&
    pairs(serverCert, serverKey);
  if (!fresh) {
    ({ cert: serverCert, key: serverKey } = issueServer(caCert, caKey, wanted, now));
    writeFileDurably(p(CA_FILES.serverKey), serverKey, PRIVATE_FILE_MODE);
    writeFileDurably(p(CA_FILES.serverCert), serverCert, 0o644);
    created.server = true;
  }
  return {
    dir,
    caCertPath: p(CA_FILES.caCert),
    caCert,
    serverCertPath: p(CA_FILES.serverCert),
    serverKeyPath: p(CA_FILES.serverKey),
    serverCert: serverCert! + caCert,
    serverKey: serverKey!,
    created,
  };
}

function readIfExists(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function usable(pem: string, now: Date, margin: number): boolean {
  try {
    const c = new crypto.X509Certificate(pem);
    return new Date(c.validFrom) <= now && new Date(c.validTo).getTime() - margin > now.getTime();
  } catch {
    return false;
  }
}

// A key and its certificate are two files, each written durably but not together: a power cut between the two
// writes leaves a new key beside the old certificate (docs/durability.md, "Power loss"), so a pair is checked.
function pairs(certPem: string, keyPem: string): boolean {
  try {
    return new crypto.X509Certificate(certPem).checkPrivateKey(crypto.createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

function signedBy(pem: string, caPem: string): boolean {
  try {
    return new crypto.X509Certificate(pem).verify(new crypto.X509Certificate(caPem).publicKey);
  } catch {
    return false;
  }
}

function covers(pem: string, names: readonly string[]): boolean {
  const c = new crypto.X509Certificate(pem);
  return names.every((n) => (net.isIP(n) ? c.checkIP(n) !== undefined : c.checkHost(n, { wildcards: false }) !== undefined));
}

interface Pair {
  cert: string;
  key: string;
}

function rsaKeys(): { pub: forge.pki.PublicKey; priv: forge.pki.rsa.PrivateKey; pem: string } {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { priv, pub: forge.pki.setRsaPublicKey(priv.n, priv.e), pem };
}

function baseCert(pub: forge.pki.PublicKey, now: Date, days: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = pub;
  // A positive 16-byte serial: the high bit cleared so DER does not read it as negative.
  const serial = crypto.randomBytes(16);
  serial[0]! &= 0x7f;
  cert.serialNumber = serial.toString('hex');
  // Back-dated an hour so a client whose clock is slightly behind accepts it.
  cert.validity.notBefore = new Date(now.getTime() - 3600_000);
  cert.validity.notAfter = new Date(now.getTime() + days * DAY_MS);
  return cert;
}

function issueCa(now: Date, names: readonly string[]): Pair {
  const keys = rsaKeys();
  const cert = baseCert(keys.pub, now, CA_DAYS);
  const subject = [
    { name: 'commonName', value: `peeklock local CA ${crypto.randomBytes(4).toString('hex')}` },
    { name: 'organizationName', value: 'peeklock' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true, pathLenConstraint: 0 },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
    // node-forge has no encoder for name constraints: given as DER under its OID.
    { id: NAME_CONSTRAINTS_OID, critical: true, value: nameConstraints(names) },
  ]);
  cert.sign(keys.priv, digest.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: keys.pem };
}

// NameConstraints ::= SEQUENCE { permittedSubtrees [0] GeneralSubtrees } (implicit tags), each GeneralSubtree a
// SEQUENCE { base GeneralName }: dNSName [2] IA5String, iPAddress [7] the address followed by a full mask.
function nameConstraints(names: readonly string[]): string {
  const subtrees = names.map((n) => {
    const base = net.isIP(n)
      ? asn1.create(asn1.Class.CONTEXT_SPECIFIC, 7, false, ipBytes(n) + '\xff'.repeat(net.isIPv4(n) ? 4 : 16))
      : asn1.create(asn1.Class.CONTEXT_SPECIFIC, 2, false, n);
    return asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [base]);
  });
  const permitted = asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, subtrees);
  return asn1.toDer(asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [permitted])).getBytes();
}

// An address as a byte string (node-forge's util.bytesFromIP, which its typings leave out).
function ipBytes(ip: string): string {
  return (forge.util as unknown as { bytesFromIP(ip: string): string }).bytesFromIP(ip);
}

// True when the CA's name constraints permit every one of `names` (a CA without them permits nothing here: it is
// replaced). A DNS base permits itself and its subdomains; an address base, the addresses its mask covers.
function permits(caPem: string, names: readonly string[]): boolean {
  let dns: string[];
  let ips: { addr: string; mask: string }[];
  try {
    const ext = forge.pki.certificateFromPem(caPem).getExtension({ id: NAME_CONSTRAINTS_OID } as never) as { value?: string } | null; // its typings say the id is a number
    if (!ext?.value) return false;
    const root = asn1.fromDer(ext.value);
    const permitted = (root.value as forge.asn1.Asn1[]).find((x) => x.tagClass === asn1.Class.CONTEXT_SPECIFIC && (x.type as number) === 0);
    const bases = ((permitted?.value ?? []) as forge.asn1.Asn1[]).map((sub) => (sub.value as forge.asn1.Asn1[])[0]!);
    dns = bases.filter((b) => b.type === 2).map((b) => String(b.value).toLowerCase());
    ips = bases.filter((b) => b.type === 7).map((b) => {
      const v = String(b.value);
      return { addr: v.slice(0, v.length / 2), mask: v.slice(v.length / 2) };
    });
  } catch {
    return false;
  }
  return names.every((n) => {
    if (!net.isIP(n)) return dns.some((d) => n === d || n.endsWith(`.${d}`));
    const a = ipBytes(n);
    return ips.some(({ addr, mask }) => addr.length === a.length && [...a].every((c, i) => (c.charCodeAt(0) & mask.charCodeAt(i)) === addr.charCodeAt(i)));
  });
}

function issueServer(caPem: string, caKeyPem: string, names: readonly string[], now: Date): Pair {
  const ca = forge.pki.certificateFromPem(caPem);
  const caKey = forge.pki.privateKeyFromPem(caKeyPem) as forge.pki.rsa.PrivateKey;
  const keys = rsaKeys();
  const cert = baseCert(keys.pub, now, SERVER_DAYS);
  cert.setSubject([{ name: 'commonName', value: names.find((n) => !net.isIP(n)) ?? 'localhost' }]);
  cert.setIssuer(ca.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    // DNS names as type 2, addresses as type 7 (RFC 5280 §4.2.1.6); clients match IPs only against type 7.
    { name: 'subjectAltName', altNames: names.map((n) => (net.isIP(n) ? { type: 7, ip: n } : { type: 2, value: n })) },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, digest.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: keys.pem };
}
