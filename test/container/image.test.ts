// The image as users get it (docs/containers.md): the repository's Dockerfile built with podman on a stand-in for
// node:20-bookworm-slim (.ci/image-base: Docker Hub is out of reach here, so the definition is built unchanged on an
// equivalent base of the same name), then run with published ports on 127.0.0.1 (host ports picked by podman).
// It starts on the shipped config and, as the documented compose service, on a mounted emulator Config.json; the JS
// SDK sends, receives and completes through the published port; `podman stop` ends it cleanly within 10 s; a new
// container on the same named volume still has the messages; the ready line and /health appear as Testcontainers
// waits for them, and the documented Node and .NET Testcontainers recipes run as written (testcontainers from npm and
// NuGet in scratch projects, against podman's Docker API; Ryuk is off because its image cannot be pulled here; the
// .NET one is skipped without a dotnet SDK). One JSON line of figures: image size, build and start times, stop time, the whole check's cost.

import { ServiceBusClient } from '@azure/service-bus';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docSection, fencedBlocks, readDoc } from '../helpers/docs.js';
import { emit } from '../helpers/fault.js';
import { spawn, spawnSync } from 'node:child_process';
import { buildImage, hasPodman, hostPort, logLines, msFromStart, podman, podmanService, podmanSkipReason, runDetached, stop, waitForLog } from '../helpers/podman.js';
import { EMULATOR_CONFIG, EMULATOR_READY_LINE } from '../../src/cli/container.js';

const CONTAINERS_DOC = 'docs/containers.md';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const hasDotnet = spawnSync('dotnet', ['--version'], { encoding: 'utf8' }).status === 0;
const TAG = 'localhost/peeklock:container-test';
const run = `${process.pid}`;
const made: { containers: string[]; volumes: string[]; dirs: string[] } = { containers: [], volumes: [], dirs: [] };
const figures: Record<string, unknown> = {};
const t0 = performance.now();
let untaggedBefore = new Set<string>();
let untaggedAfter = new Set<string>();

/** The untagged images nothing is built on (what `podman images` lists as <none>), by id. */
const untagged = (): Set<string> => new Set(podman(['images', '--filter', 'dangling=true', '--format', '{{.ID}}']).split('\n').filter(Boolean));

/** The emulator's connection string for a published AMQP port. */
const connectionString = (port: number): string =>
  `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`;

/** The compose file of docs/containers.md (the yaml block of its "Compose" section). */
function documentedCompose(): Record<string, any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const [yaml] = fencedBlocks(docSection(readDoc(CONTAINERS_DOC), '## Compose'), 'yaml');
  if (yaml === undefined) throw new Error(`no yaml block in the Compose section of ${CONTAINERS_DOC}`);
  return parse(yaml) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** The `podman run` flags for the compose service: its volumes, ports (on 127.0.0.1, free host ports) and environment. */
function composeRunArgs(service: { volumes: string[]; ports: string[]; environment?: Record<string, string> }, vars: Record<string, string>, volumeNames: Record<string, string>): string[] {
  const expand = (s: string): string => s.replace(/\$\{(\w+):-([^}]*)\}/g, (_, name: string, dflt: string) => vars[name] ?? dflt);
  const args: string[] = [];
  for (const v of service.volumes.map(expand)) {
    const [source, ...rest] = v.split(':');
    args.push('-v', [volumeNames[source!] ?? source, ...rest].join(':'));
  }
  for (const p of service.ports) args.push('-p', `127.0.0.1::${p.split(':').at(-1)}`);
  for (const [k, v] of Object.entries(service.environment ?? {})) args.push('-e', `${k}=${v}`);
  return args;
}

/** A Testcontainers recipe of docs/containers.md (the code block starting with `firstLine`), on the image under test. */
function documentedRecipe(fence: string, firstLine: string, imageCall: [string, string]): string {
  const body = fencedBlocks(docSection(readDoc(CONTAINERS_DOC), '## Testcontainers'), fence).find((b) => b.startsWith(`${firstLine}\n`));
  if (body === undefined) throw new Error(`no ${firstLine} recipe in the Testcontainers section of ${CONTAINERS_DOC}`);
  // The one substitution: the image under test instead of the documented `peeklock`.
  if (!body.includes(imageCall[0])) throw new Error(`the ${firstLine} recipe has no ${imageCall[0]}`);
  return body.replace(imageCall[0], imageCall[1]);
}

/** A config with one queue, as a recipe's Config.json. */
function recipeConfig(dir: string, queue: string): void {
  fs.writeFileSync(
    path.join(dir, 'Config.json'),
    JSON.stringify({ UserConfig: { Namespaces: [{ Name: 'sbemulatorns', Queues: [{ Name: queue }] }], Logging: { Type: 'File' } } }),
  );
}

/** Removes the volumes made since `before` (podman's Docker API keeps a removed container's anonymous /data volume). */
function removeNewVolumes(before: Set<string>): void {
  for (const v of podman(['volume', 'ls', '-q']).split('\n')) if (v && !before.has(v)) podman(['volume', 'rm', '-f', v]);
}

async function roundTrip(port: number, queue: string): Promise<string> {
  const client = new ServiceBusClient(connectionString(port), { retryOptions: { maxRetries: 2, timeoutInMs: 15_000 } });
  try {
    await client.createSender(queue).sendMessages({ body: 'through the published port', messageId: `rt-${run}` });
    const receiver = client.createReceiver(queue);
    const [msg] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    expect(msg?.body).toBe('through the published port');
    await receiver.completeMessage(msg!);
    expect(await receiver.peekMessages(1)).toEqual([]);
    return msg!.messageId as string;
  } finally {
    await client.close();
  }
}

describe.skipIf(!hasPodman && !process.env.CI)(`the container image${podmanSkipReason}`, () => {
  beforeAll(() => {
    untaggedBefore = untagged();
    const built = buildImage(TAG);
    untaggedAfter = untagged();
    figures.baseS = Math.round(built.baseS * 10) / 10;
    figures.buildS = Math.round(built.buildS * 10) / 10;
    const size = Number(podman(['image', 'inspect', TAG, '--format', '{{.Size}}']));
    const base = Number(podman(['image', 'inspect', 'docker.io/library/node:20-bookworm-slim', '--format', '{{.Size}}']));
    figures.imageMB = Math.round(size / 1e5) / 10;
    figures.aboveBaseMB = Math.round((size - base) / 1e5) / 10;
  }, 900_000);

  afterAll(() => {
    for (const c of made.containers) podman(['rm', '-f', '-v', c]);
    for (const v of made.volumes) podman(['volume', 'rm', '-f', v]);
    for (const d of made.dirs) fs.rmSync(d, { recursive: true, force: true });
    figures.totalS = Math.round((performance.now() - t0) / 100) / 10;
    emit({ test: 'container-image', ...figures });
  }, 120_000);

  it('was built from the Dockerfile: non-root, the volume, the ports, the health check and the entry point', () => {
    const config = JSON.parse(podman(['image', 'inspect', TAG, '--format', '{{json .Config}}'])) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(config.User).toBe('node');
    // The build stage's label and the proxy's CA (a build argument of that stage) stay out of the shipped image.
    expect(config.Labels ?? {}).not.toHaveProperty('peeklock.stage');
    expect((config.Env as string[]).join('\n')).not.toContain('NODE_EXTRA_CA_CERTS');
    expect(Object.keys(config.Volumes)).toEqual(['/data']);
    expect(Object.keys(config.ExposedPorts).sort()).toEqual(['5300/tcp', '5672/tcp']);
    // (podman's inspect lists the health check apart from the rest of the config)
    const health = JSON.parse(podman(['image', 'inspect', TAG, '--format', '{{json .Config.Healthcheck}}'])) as { Test: string[] };
    expect(health.Test.join(' ')).toContain("fetch('http://127.0.0.1:'+(process.env.EMULATOR_HTTP_PORT||5300)+'/health')");
    expect(config.Entrypoint).toEqual(['/usr/bin/tini', '--', 'node', 'bin/peeklock.js', 'start', '--container', '--host', '0.0.0.0', '--data-dir', '/data']);
    // Production dependencies only: no compiler, no test runner, no sources.
    const ls = podman(['--runtime', 'runc', 'run', '--rm', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024', '--entrypoint', 'sh', TAG, '-c', 'ls node_modules; ls; id -u']);
    expect(ls).toContain('lmdb');
    expect(ls).not.toMatch(/^(typescript|vitest|@azure)$/m);
    expect(ls).not.toMatch(/^(src|test)$/m);
    expect(ls.split('\n').at(-1)).toBe('1000');
  });

  // Neither the build stage nor, on a rebuild, the image the tag named before.
  it('leaves no untagged image behind (the build stage, compiler and dev dependencies, is pruned)', () => {
    const left = [...untaggedAfter].filter((id) => !untaggedBefore.has(id));
    figures.leftUntaggedMB = left.reduce((mb, id) => mb + Math.round(Number(podman(['image', 'inspect', id, '--format', '{{.Size}}'])) / 1e6), 0);
    expect(left).toEqual([]);
  });

  it('gives its CA to clients outside: `peeklock cert --container --pem` and `podman cp` agree, and the JS admin client trusts it over HTTPS', async () => {
    const name = `peeklock-ca-${run}`;
    runDetached(['--name', name, '-p', '127.0.0.1::5672', TAG]);
    made.containers.push(name);
    await waitForLog(name, EMULATOR_READY_LINE);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-ca-'));
    made.dirs.push(dir);
    // The commands of docs/containers.md, "The CA for HTTPS and amqps".
    const commands = fencedBlocks(docSection(readDoc(CONTAINERS_DOC), '## The CA for HTTPS and amqps'), 'sh').join('\n');
    expect(commands).toContain('docker cp CONTAINER:/data/tls/ca.crt peeklock-ca.crt');
    expect(commands).toContain('docker exec CONTAINER peeklock cert --container --pem > peeklock-ca.crt');
    podman(['cp', `${name}:/data/tls/ca.crt`, path.join(dir, 'copied.crt')]);
    const pem = podman(['exec', name, 'peeklock', 'cert', '--container', '--pem']);
    expect(pem).toBe(fs.readFileSync(path.join(dir, 'copied.crt'), 'utf8').trim());
    expect(pem).not.toMatch(/PRIVATE KEY/);
    const caFile = path.join(dir, 'peeklock-ca.crt');
    fs.writeFileSync(caFile, `${pem}\n`);
    // docs/clients.md's admin snippet: @azure/service-bus 7.9.5 dials HTTPS on the Endpoint's port (any peeklock port).
    const admin = (extra: Record<string, string>): ReturnType<typeof spawnSync> =>
      spawnSync(process.execPath, ['test/snippets/js_admin.mjs'], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
        env: { PATH: process.env.PATH!, HOME: process.env.HOME!, PEEKLOCK_PORT: String(hostPort(name, 5672)), ...extra },
      });
    const untrusted = admin({});
    expect(untrusted.status).not.toBe(0);
    expect(String(untrusted.stderr)).toContain('SELF_SIGNED_CERT_IN_CHAIN');
    const trusted = admin({ NODE_EXTRA_CA_CERTS: caFile });
    expect([trusted.status, String(trusted.stdout).trim()], String(trusted.stderr)).toEqual([0, 'true']);
    expect(stop(name).exitCode).toBe(0);
  }, 120_000);

  it('starts on the shipped config: ready line after listening, /health 200, the SDK round trip, a clean stop within 10 s', async () => {
    const name = `peeklock-shipped-${run}`;
    const started = performance.now();
    runDetached(['--name', name, '-p', '127.0.0.1::5672', '-p', '127.0.0.1::5300', '-e', 'ACCEPT_EULA=Y', '-e', 'MSSQL_SA_PASSWORD=Str0ng!Passw0rd', TAG]);
    made.containers.push(name);
    await waitForLog(name, EMULATOR_READY_LINE);
    figures.runToReadyMs = Math.round(performance.now() - started);
    const lines = logLines(name);
    const msgs = lines.map((l) => l.msg);
    // Inside the container: from its start to the ready line (a first start also makes the local CA for amqps).
    figures.firstReadyMs = msFromStart(name, EMULATOR_READY_LINE);
    expect(msgs.indexOf(EMULATOR_READY_LINE)).toBeGreaterThan(msgs.indexOf('listening'));
    expect(msgs.filter((m) => m === EMULATOR_READY_LINE)).toHaveLength(1);
    expect(msgs.filter((m) => m.startsWith('ignoring emulator settings'))).toEqual([
      'ignoring emulator settings that mean nothing here (no SQL Server, no EULA): ACCEPT_EULA, MSSQL_SA_PASSWORD',
    ]);
    expect(lines.find((l) => l.msg === 'listening')).toMatchObject({ host: '0.0.0.0', port: 5672, httpPort: 5300, config: '/opt/peeklock/config/peeklock.json' });
    // Nothing mounted at /data: the image's VOLUME gave an anonymous volume, and the log says what that keeps.
    expect(lines.find((l) => l.dataDir === '/data')).toMatchObject({ mount: 'anonymous', level: 40 });
    expect(JSON.stringify(lines)).not.toContain('Str0ng');

    const health = await fetch(`http://127.0.0.1:${hostPort(name, 5300)}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
    // The image's HEALTHCHECK, run as the engine runs it.
    podman(['healthcheck', 'run', name]);
    await roundTrip(hostPort(name, 5672), 'orders');

    const stopped = stop(name);
    figures.stopS = Math.round(stopped.stopS * 100) / 100;
    expect(stopped.exitCode).toBe(0);
    expect(stopped.stopS).toBeLessThan(10);
    const last = logLines(name).slice(-2);
    expect(last.map((l) => l.msg)).toEqual(['shutting down', 'stopped']);
    figures.brokerStopMs = (last[1]!.time as number) - (last[0]!.time as number);
  }, 120_000);

  it('stops at once when stopped during its start-up (PID 1 has no default signal actions; tini is PID 1)', () => {
    const name = `peeklock-early-${run}`;
    runDetached(['--name', name, TAG]);
    made.containers.push(name);
    // At once: the signal lands while Node is still starting, before the broker's handler exists.
    const stopped = stop(name);
    figures.earlyStopS = Math.round(stopped.stopS * 100) / 100;
    expect(stopped.stopS).toBeLessThan(5);
    // 143: SIGTERM's default action, taken before the broker serves; 0: a graceful stop, if it already served.
    // (137 was podman giving up after 10 s and sending SIGKILL.)
    expect([0, 143]).toContain(stopped.exitCode);
  }, 60_000);

  it("runs as the documented compose service on a mounted emulator Config.json, and a new container on its volume keeps the messages", async () => {
    const compose = documentedCompose();
    expect(Object.keys(compose.services)).toEqual(['emulator']);
    const service = compose.services.emulator;
    expect(service.image).toBe('peeklock');
    expect(service.volumes).toEqual(['${CONFIG_PATH:-./Config.json}:/ServiceBus_Emulator/ConfigFiles/Config.json:ro', 'peeklock-data:/data']);
    expect(service.ports).toEqual(['5672:5672', '5300:5300']);
    expect(compose.volumes).toHaveProperty('peeklock-data');
    expect(service.depends_on).toBeUndefined();
    expect(service.volumes[0]).toContain(EMULATOR_CONFIG);

    // An emulator Config.json as Microsoft's samples write it (a queue and a topic with a filtered subscription).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-container-'));
    made.dirs.push(dir);
    const configFile = path.join(dir, 'Config.json');
    fs.writeFileSync(
      configFile,
      JSON.stringify({
        UserConfig: {
          Namespaces: [
            {
              Name: 'sbemulatorns',
              Queues: [{ Name: 'queue.1', Properties: { DeadLetteringOnMessageExpiration: false, DefaultMessageTimeToLive: 'PT1H', DuplicateDetectionHistoryTimeWindow: 'PT20S', ForwardDeadLetteredMessagesTo: '', ForwardTo: '', LockDuration: 'PT1M', MaxDeliveryCount: 3, RequiresDuplicateDetection: false, RequiresSession: false } }],
              Topics: [{ Name: 'topic.1', Properties: { DefaultMessageTimeToLive: 'PT1H', DuplicateDetectionHistoryTimeWindow: 'PT20S', RequiresDuplicateDetection: false }, Subscriptions: [{ Name: 'subscription.1', Properties: { LockDuration: 'PT1M', MaxDeliveryCount: 3 }, Rules: [{ Name: 'app-prop-filter-1', Properties: { FilterType: 'Correlation', CorrelationFilter: { Properties: { prop1: 'value1' } } } }] }] }],
            },
          ],
          Logging: { Type: 'File' },
        },
      }),
    );
    fs.chmodSync(configFile, 0o644);
    const volume = `peeklock-data-${run}`;
    made.volumes.push(volume);
    // Microsoft's template's variables, passed as it passes them: accepted and ignored.
    const env = ['-e', 'ACCEPT_EULA=Y', '-e', 'SQL_SERVER=sqlserver', '-e', 'MSSQL_SA_PASSWORD=Str0ng!Passw0rd', '-e', 'SQL_WAIT_INTERVAL=15'];
    const args = [...composeRunArgs(service, { CONFIG_PATH: configFile }, { 'peeklock-data': volume }), ...env, TAG];

    const first = `peeklock-compose-${run}`;
    runDetached(['--name', first, ...args]);
    made.containers.push(first);
    await waitForLog(first, EMULATOR_READY_LINE);
    const lines = logLines(first);
    expect(lines.find((l) => l.msg === 'listening')).toMatchObject({ config: EMULATOR_CONFIG, entities: expect.any(Number) });
    expect(lines.find((l) => l.dataDir === '/data')).toMatchObject({ mount: 'mounted', configSource: 'emulator mount', msg: 'data dir /data is a mounted volume: messages outlive the container' });
    expect(lines.filter((l) => l.msg.startsWith('ignoring emulator settings'))).toHaveLength(1);

    const port = hostPort(first, 5672);
    const health = await fetch(`http://127.0.0.1:${hostPort(first, 5300)}/health`);
    expect([health.status, await health.text()]).toEqual([200, expect.stringContaining('"ok"')]);
    await roundTrip(port, 'queue.1');
    const client = new ServiceBusClient(connectionString(port), { retryOptions: { maxRetries: 2, timeoutInMs: 15_000 } });
    try {
      await client.createSender('queue.1').sendMessages([1, 2, 3].map((n) => ({ body: `kept ${n}`, messageId: `kept-${n}` })));
      await client.createSender('topic.1').sendMessages({ body: 'routed', applicationProperties: { prop1: 'value1' } });
    } finally {
      await client.close();
    }
    expect(stop(first).exitCode).toBe(0);
    podman(['rm', first]);
    made.containers.splice(made.containers.indexOf(first), 1);

    // A new container (not a restart of the old one) on the same volume.
    const second = `peeklock-compose2-${run}`;
    runDetached(['--name', second, ...args]);
    made.containers.push(second);
    await waitForLog(second, EMULATOR_READY_LINE);
    figures.restartReadyMs = msFromStart(second, EMULATOR_READY_LINE);
    const again = new ServiceBusClient(connectionString(hostPort(second, 5672)), { retryOptions: { maxRetries: 2, timeoutInMs: 15_000 } });
    try {
      const receiver = again.createReceiver('queue.1');
      const got = await receiver.receiveMessages(3, { maxWaitTimeInMs: 10_000 });
      for (let i = 0; got.length < 3 && i < 5; i++) got.push(...(await receiver.receiveMessages(3 - got.length, { maxWaitTimeInMs: 2_000 })));
      expect(got.map((m) => m.body)).toEqual(['kept 1', 'kept 2', 'kept 3']);
      for (const m of got) await receiver.completeMessage(m);
      const sub = again.createReceiver('topic.1', 'subscription.1', { receiveMode: 'receiveAndDelete' });
      expect((await sub.receiveMessages(1, { maxWaitTimeInMs: 10_000 })).map((m) => m.body)).toEqual(['routed']);
    } finally {
      await again.close();
    }
    expect(stop(second).exitCode).toBe(0);
  }, 180_000);

  it("the documented Node Testcontainers recipe starts it and waits for the ready line; the SDK round trip works", async () => {
    const recipe = documentedRecipe('ts', '// Node: testcontainers', ["new GenericContainer('peeklock')", `new GenericContainer('${TAG}')`]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-tc-'));
    made.dirs.push(dir);
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'tc-recipe', private: true, type: 'module' }));
    recipeConfig(dir, 'tc.queue');
    const t = performance.now();
    // The version the docs pin for Node 20 (12.1 and later need Node 22).
    const pin = /^npm i -D (testcontainers@\S+) +# Node 20\b/m.exec(fencedBlocks(docSection(readDoc(CONTAINERS_DOC), '## Testcontainers'), 'sh').join('\n'));
    expect(pin, `no "npm i -D testcontainers@… # Node 20" line in the Testcontainers section of ${CONTAINERS_DOC}`).not.toBeNull();
    const install = spawnSync('npm', ['install', pin![1]!, '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, encoding: 'utf8', timeout: 300_000 });
    expect(install.status, install.stderr).toBe(0);
    figures.testcontainersInstallS = Math.round((performance.now() - t) / 100) / 10;
    // The recipe, then: hand the connection string over, wait for the word, stop.
    fs.writeFileSync(
      path.join(dir, 'recipe.mjs'),
      `${recipe}\nconsole.log(JSON.stringify({ connectionString }));\nawait new Promise((r) => process.stdin.once('data', r));\nawait container.stop();\n`,
    );
    const volumesBefore = new Set(podman(['volume', 'ls', '-q']).split('\n'));
    const service = await podmanService(dir);
    try {
      const proc = spawn(process.execPath, ['recipe.mjs'], {
        cwd: dir,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, DOCKER_HOST: service.dockerHost, TESTCONTAINERS_RYUK_DISABLED: 'true' },
      });
      let out = '';
      proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
      proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const started = performance.now();
      const cs = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the recipe gave no connection string in 90 s: ${out}`)), 90_000);
        proc.stdout.on('data', () => {
          const line = out.split('\n').find((l) => l.startsWith('{"connectionString"'));
          if (line) {
            clearTimeout(timer);
            resolve((JSON.parse(line) as { connectionString: string }).connectionString);
          }
        });
        proc.once('exit', (code) => reject(new Error(`the recipe exited with ${code}: ${out}`)));
      });
      figures.testcontainersStartMs = Math.round(performance.now() - started);
      expect(cs).toMatch(/^Endpoint=sb:\/\/[^;]+:\d+;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true$/);
      const client = new ServiceBusClient(cs, { retryOptions: { maxRetries: 1, timeoutInMs: 15_000 } });
      try {
        await client.createSender('tc.queue').sendMessages({ body: 'from testcontainers' });
        const receiver = client.createReceiver('tc.queue');
        const [msg] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
        expect(msg?.body).toBe('from testcontainers');
        await receiver.completeMessage(msg!);
      } finally {
        await client.close();
      }
      proc.stdin.end('stop\n'); // (an open stdin would keep the recipe's process alive)
      const code = await new Promise<number | null>((resolve, reject) => {
        if (proc.exitCode !== null) return resolve(proc.exitCode);
        const timer = setTimeout(() => reject(new Error(`the recipe did not stop in 30 s: ${out}`)), 30_000);
        proc.once('exit', (c) => (clearTimeout(timer), resolve(c)));
      });
      expect(code, out).toBe(0);
    } finally {
      service.stop();
      removeNewVolumes(volumesBefore);
    }
  }, 420_000);

  it.skipIf(!hasDotnet)(`the documented .NET Testcontainers recipe starts it and waits for the ready line; Azure.Messaging.ServiceBus round trip${hasDotnet ? '' : ' (skipped: no dotnet SDK)'}`, async () => {
    const recipe = documentedRecipe('csharp', '// .NET: Testcontainers', ['.WithImage("peeklock")', `.WithImage("${TAG}")`]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-tc-dotnet-'));
    made.dirs.push(dir);
    recipeConfig(dir, 'tc.queue');
    const major = spawnSync('dotnet', ['--version'], { encoding: 'utf8' }).stdout.split('.')[0];
    fs.writeFileSync(
      path.join(dir, 'recipe.csproj'),
      `<Project Sdk="Microsoft.NET.Sdk"><PropertyGroup><OutputType>Exe</OutputType><TargetFramework>net${major}.0</TargetFramework>` +
        '<ImplicitUsings>enable</ImplicitUsings><Nullable>enable</Nullable></PropertyGroup><ItemGroup>' +
        '<PackageReference Include="Testcontainers" Version="4.17.0" /><PackageReference Include="Azure.Messaging.ServiceBus" Version="7.21.0" />' +
        '</ItemGroup></Project>',
    );
    fs.writeFileSync(
      path.join(dir, 'Program.cs'),
      `using Azure.Messaging.ServiceBus;\nusing DotNet.Testcontainers.Builders;\n${recipe}\n` +
        'await using (var client = new ServiceBusClient(connectionString))\n{\n' +
        '    await client.CreateSender("tc.queue").SendMessageAsync(new ServiceBusMessage("from dotnet"));\n' +
        '    var receiver = client.CreateReceiver("tc.queue");\n' +
        '    var msg = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(10));\n' +
        '    await receiver.CompleteMessageAsync(msg);\n' +
        '    Console.WriteLine("received: " + msg.Body);\n}\nawait container.DisposeAsync();\n',
    );
    const volumesBefore = new Set(podman(['volume', 'ls', '-q']).split('\n'));
    const service = await podmanService(dir);
    const t = performance.now();
    try {
      const r = spawnSync('dotnet', ['run'], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 300_000,
        env: { ...process.env, DOCKER_HOST: service.dockerHost, TESTCONTAINERS_RYUK_DISABLED: 'true', DOTNET_CLI_TELEMETRY_OPTOUT: '1', DOTNET_NOLOGO: '1' },
      });
      expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(r.stdout).toContain('received: from dotnet');
      figures.dotnetRecipeS = Math.round((performance.now() - t) / 100) / 10;
    } finally {
      service.stop();
      removeNewVolumes(volumesBefore);
    }
  }, 420_000);
});
