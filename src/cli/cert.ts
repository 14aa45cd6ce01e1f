// `peeklock cert`: where the local certificate authority is and how to make each client trust it. Run before
// the first start it creates the CA (and the server certificate) exactly as `start` would, so a user can set up
// trust first. `--path` prints the CA file alone, for `export NODE_EXTRA_CA_CERTS=$(peeklock cert --path)`; `--pem`
// prints the certificate itself, so a client outside a container can get it: the CA lives in the container's volume
// (`docker exec CONTAINER peeklock cert --container --pem > peeklock-ca.crt`, docs/containers.md).

import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { tlsCredentials } from '../app/tls.js';
import type { PeeklockConfig } from '../config/types.js';
import { CONTAINER_DATA_DIR, containerStart } from './container.js';

interface CertFlags {
  config: string;
  dataDir?: string;
  path?: boolean;
  pem?: boolean;
  container?: boolean;
}

/** The lines `peeklock cert` prints for a CA certificate at `ca` and the server certificate `serverPem`. */
export function trustInstructions(ca: string, serverPem: string, created: boolean): string[] {
  const server = new X509Certificate(serverPem);
  const names = (server.subjectAltName ?? '').replace(/IP Address:|DNS:/g, '');
  return [
    `local certificate authority: ${ca}${created ? ' (created now)' : ''}`,
    `server certificate for ${names}, valid until ${new Date(server.validTo).toISOString().slice(0, 10)}`,
    '',
    'Trust the CA in each client (every port serves TLS: amqps, HTTPS for the admin clients, wss):',
    `  Node.js, @azure/service-bus:  export NODE_EXTRA_CA_CERTS=${ca}`,
    `  Python, azure-servicebus:     connection_verify="${ca}" (AMQP);  export REQUESTS_CA_BUNDLE=${ca} (HTTPS)`,
    `  Java:                         keytool -importcert -noprompt -alias peeklock-ca -file ${ca} -keystore peeklock.jks -storepass changeit`,
    '                                then run with -Djavax.net.ssl.trustStore=peeklock.jks -Djavax.net.ssl.trustStorePassword=changeit',
    '                                (its admin client dials HTTPS on 443: set Broker.HttpsPort to 443)',
    `  .NET, curl, the system:       sudo cp ${ca} /usr/local/share/ca-certificates/peeklock-ca.crt && sudo update-ca-certificates`,
    '',
    'The key files next to it are private (mode 0600); never copy them to clients.',
  ];
}

/** Adds `peeklock cert`; `load` reads the config file as `start` does (and exits on a config error). */
export function addCertCommand(program: Command, defaultConfig: string, load: (file: string) => PeeklockConfig): void {
  program
    .command('cert')
    .description("print where the local certificate authority is and how to trust it (creates it if it does not exist)")
    .option('-c, --config <file>', 'config file, as for start', defaultConfig)
    .option('-d, --data-dir <dir>', 'data directory, as for start (the CA is in <dir>/tls unless Broker.Tls.CaDir is set)')
    .option('--path', 'print only the CA certificate file')
    .option('--pem', 'print only the CA certificate itself (PEM; the public certificate, never a key)')
    .option('--container', `read the config and data dir as the image's entry point does (the emulator's Config.json when mounted, ${CONTAINER_DATA_DIR})`)
    .action((flags: CertFlags, cmd: Command) => {
      // In the image the entry point's config and data dir are not this command's defaults; --container names them.
      const configGiven = cmd.getOptionValueSource('config') !== 'default';
      const config = load(flags.container && !configGiven ? containerStart({}, defaultConfig).config : flags.config);
      const dataDir = flags.dataDir ?? (flags.container ? CONTAINER_DATA_DIR : undefined);
      const broker = { ...config.broker, ...(dataDir !== undefined ? { dataDir } : {}) };
      let creds;
      try {
        creds = tlsCredentials(broker);
      } catch (err) {
        process.stderr.write(`peeklock: ${(err as Error).message}\n`);
        process.exit(1);
      }
      if (creds.caCertPath === undefined) {
        process.stderr.write(`peeklock: the broker serves the configured certificate ${creds.certFile} (Broker.Tls.CertFile), not the local CA's; trust whoever issued it\n`);
        process.exit(1);
      }
      if (flags.path) return void process.stdout.write(`${creds.caCertPath}\n`);
      if (flags.pem) return void process.stdout.write(readFileSync(creds.caCertPath, 'utf8'));
      process.stdout.write(trustInstructions(creds.caCertPath, creds.cert, creds.issued?.ca ?? false).join('\n') + '\n');
    });
}
