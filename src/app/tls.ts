// The certificate the amqps listener serves: the user's own (`Broker.Tls.CertFile`/`KeyFile`) or one issued by
// the local CA (src/tls/ca.ts). Every failure here is a one-line, user-facing start-up error naming the config key.

import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import type { BrokerSettings } from '../config/types.js';
import { ensureLocalCa } from '../tls/ca.js';

/** What a TLS listener serves, and where it came from (paths only, for the log and `peeklock cert`). */
export interface TlsCredentials {
  cert: string;
  key: string;
  /** The local CA's certificate, when the local CA issued the server certificate. */
  caCertPath?: string;
  /** The configured certificate file, when the user gave one. */
  certFile?: string;
  /** Whether this start generated the CA or issued a new server certificate. */
  issued?: { ca: boolean; server: boolean };
}

/** A TLS set-up failure, worded for the person who started the broker. */
export class TlsSetupError extends Error {
  override name = 'TlsSetupError';
  /** A one-line message naming the cause and the fix. */
  readonly userFacing = true;
}

/** The local CA's directory for these settings: `Broker.Tls.CaDir`, else `<dataDir>/tls`. */
export function caDirFor(b: Pick<BrokerSettings, 'dataDir' | 'tls'>): string {
  return path.resolve(b.tls?.caDir ?? path.join(b.dataDir, 'tls'));
}

/** Loads the configured certificate, or ensures the local CA and its server certificate for the broker's names. */
export function tlsCredentials(b: Pick<BrokerSettings, 'host' | 'dataDir' | 'tls'>): TlsCredentials {
  const { certFile, keyFile } = b.tls ?? {};
  if (certFile !== undefined && keyFile !== undefined) {
    const cert = readPem(certFile, 'CertFile');
    const key = readPem(keyFile, 'KeyFile');
    try {
      tls.createSecureContext({ cert, key });
    } catch (err) {
      throw new TlsSetupError(
        `Broker.Tls.CertFile and KeyFile (${certFile}, ${keyFile}) cannot be used together: ${(err as Error).message}; give a PEM certificate and its own private key`,
      );
    }
    return { cert, key, certFile: path.resolve(certFile) };
  }
  const dir = caDirFor(b);
  try {
    const ca = ensureLocalCa(dir, [b.host, ...(b.tls?.hostNames ?? [])]);
    return { cert: ca.serverCert, key: ca.serverKey, caCertPath: ca.caCertPath, issued: ca.created };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new TlsSetupError(`cannot create or read the local certificate authority in ${dir} (${code}); choose a writable directory with Broker.Tls.CaDir or --data-dir`);
  }
}

function readPem(file: string, key: 'CertFile' | 'KeyFile'): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? (err as Error).message);
    throw new TlsSetupError(`cannot read Broker.Tls.${key} ${file} (${why}); give a readable PEM file`);
  }
}
