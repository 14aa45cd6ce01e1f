// Microsoft's .NET SDK (Azure.Messaging.ServiceBus 7.21.0), unmodified, against a broker this file starts: the xunit
// project under test/dotnet/ is built and listed when this file is collected, run once against the broker, and each of
// its tests is reported here as a test of its own, with the .NET failure message when it fails.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { startPeeklock, type RunningBroker } from '../../src/app/app.js';
import { parseConfig } from '../../src/config/load.js';
import { dotnetResults, type DotnetResult } from '../helpers/dotnet.js';

const run = promisify(execFile);
const DIR = fileURLToPath(new URL('../dotnet/', import.meta.url));
const PROJECT = path.join(DIR, 'Peeklock.DotNet.Tests');
const hasDotnet = spawnSync('dotnet', ['--version'], { stdio: 'ignore' }).status === 0;

/** The tests the project holds (`dotnet test --list-tests`), after a build; empty without dotnet. */
function listTests(): string[] {
  if (!hasDotnet) return [];
  const build = spawnSync('dotnet', ['build', PROJECT, '-c', 'Release', '--nologo', '-v', 'q'], { encoding: 'utf8', timeout: 600_000 });
  if (build.status !== 0) throw new Error(`dotnet build failed:\n${build.stdout}\n${build.stderr}`);
  const list = spawnSync('dotnet', ['test', PROJECT, '-c', 'Release', '--no-build', '--list-tests', '--nologo'], { encoding: 'utf8', timeout: 120_000 });
  if (list.status !== 0) throw new Error(`dotnet test --list-tests failed:\n${list.stdout}\n${list.stderr}`);
  const after = list.stdout.split('The following Tests are available:')[1] ?? '';
  return [...new Set(after.split('\n').map((l) => l.trim()).filter(Boolean))];
}

const tests = listTests();
let broker: RunningBroker;
let dataDir: string;
let results: Map<string, DotnetResult>;
let runError: string | undefined;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-dotnet-'));
  const config = JSON.parse(fs.readFileSync(path.join(DIR, 'Config.json'), 'utf8')) as Record<string, unknown>;
  config.Broker = { Host: '127.0.0.1', Port: 0, TlsPort: 0, DataDir: dataDir, LogLevel: 'silent' };
  broker = await startPeeklock({
    config: parseConfig(JSON.stringify(config), 'test/dotnet/Config.json'),
    log: pino({ level: process.env.PEEKLOCK_TEST_LOG ?? 'silent' }),
  });
  const trx = path.join(dataDir, 'results.trx');
  // .NET on Linux trusts what SSL_CERT_FILE names instead of the system bundle (it replaces the default, it does not
  // add to it), and it is read when the process starts: the system bundle plus the broker's CA, for amqps, wss and
  // the administration client over HTTPS.
  const trustBundle = path.join(dataDir, 'ca-bundle.crt');
  const systemBundle = '/etc/ssl/certs/ca-certificates.crt';
  const caPem = broker.tls?.caCertPath ? fs.readFileSync(broker.tls.caCertPath, 'utf8') : '';
  fs.writeFileSync(trustBundle, `${fs.existsSync(systemBundle) ? fs.readFileSync(systemBundle, 'utf8') : ''}\n${caPem}`);
  const env = {
    ...process.env,
    PEEKLOCK_CONNECTION_STRING: `Endpoint=sb://127.0.0.1:${broker.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
    PEEKLOCK_AMQP_PORT: String(broker.port),
    PEEKLOCK_HTTP_PORT: String(broker.httpPort),
    PEEKLOCK_TLS_PORT: String(broker.tlsPort),
    PEEKLOCK_CA_CERT: broker.tls?.caCertPath ?? '',
    DOTNET_CLI_TELEMETRY_OPTOUT: '1',
    SSL_CERT_FILE: trustBundle,
  };
  // Asynchronously: the broker runs in this process and must keep serving while the .NET tests run.
  try {
    // PEEKLOCK_DOTNET_FILTER (a `dotnet test --filter` expression) runs a subset while working on one area.
    const filter = process.env.PEEKLOCK_DOTNET_FILTER ? ['--filter', process.env.PEEKLOCK_DOTNET_FILTER] : [];
    await run('dotnet', ['test', PROJECT, '-c', 'Release', '--no-build', '--nologo', ...filter, '--logger', `trx;LogFileName=${trx}`], {
      env,
      timeout: 900_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    // Failing tests make `dotnet test` exit 1; the TRX still says which. Anything else is reported below.
    if (!fs.existsSync(trx)) runError = String((err as { stdout?: string }).stdout ?? err);
  }
  results = fs.existsSync(trx) ? dotnetResults(fs.readFileSync(trx, 'utf8')) : new Map();
}, 960_000);

afterAll(async () => {
  await broker?.close();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

// Without dotnet the tests say why; on CI (.ci/run restores the project) they must run.
describe.skipIf(!hasDotnet && !process.env.CI)('.NET SDK Azure.Messaging.ServiceBus 7.21.0; needs the dotnet SDK (10) on PATH', () => {
  it('lists the .NET tests', () => {
    expect(tests.length).toBeGreaterThan(0);
  });
  for (const name of tests) {
    it(name, (ctx) => {
      expect(runError, runError).toBeUndefined();
      const r = results.get(name);
      // A test PEEKLOCK_DOTNET_FILTER left out did not run: skipped, not failed.
      if (!r && process.env.PEEKLOCK_DOTNET_FILTER) return ctx.skip();
      expect(r, `no result for ${name} in the TRX`).toBeDefined();
      expect(r!.outcome, r!.message).toBe('Passed');
    });
  }
});
