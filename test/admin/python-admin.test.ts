// Microsoft's Python administration client (azure-servicebus 7.8.2 from Debian's python3-azure, installed by
// .ci/run), unmodified: it always dials HTTPS on the Endpoint's port, so the broker must terminate TLS there; the
// only setting is REQUESTS_CA_BUNDLE, naming the broker's local CA. Run against the AMQP port and the HTTP port.

import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

// Debian's interpreter: a python3 earlier on PATH may be a separate build without Debian's modules.
const PYTHON = '/usr/bin/python3';
const hasSdk = spawnSync(PYTHON, ['-c', 'import azure.servicebus.management'], { stdio: 'ignore' }).status === 0;
const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./python_admin_client.py', import.meta.url));

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'configured' }], { store: new MemoryStore(), broker: { TlsPort: 0 } });
});
afterAll(async () => broker?.dispose());

async function runAdmin(port: number): Promise<Record<string, { ok: boolean; value?: unknown; error?: string; status?: number }>> {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, REQUESTS_CA_BUNDLE: broker.tls!.caCertPath! };
  // Asynchronously: the broker runs in this process and must keep serving while the client runs.
  const { stdout } = await run('timeout', ['90', PYTHON, SCRIPT, String(port)], { env });
  const calls = JSON.parse(stdout.trim().split('\n').pop()!) as { call: string; ok: boolean }[];
  if (process.env.PEEKLOCK_TEST_REPORT) process.stderr.write(`${JSON.stringify(calls)}\n`);
  return Object.fromEntries(calls.map((c) => [c.call, c]));
}

function expectCalls(c: Awaited<ReturnType<typeof runAdmin>>): void {
  expect(c['create_queue(pq)']).toEqual({ call: 'create_queue(pq)', ok: true, value: 'pq' });
  expect(c['create_queue(pq) again']).toMatchObject({ ok: false, error: 'ResourceExistsError', status: 409 });
  expect(c['get_queue(pq)']?.value).toEqual(['pq', 5]);
  expect(c['get_queue_runtime_properties(pq)']?.value).toBe(0);
  expect(c['list_queues()']?.value).toEqual(['configured', 'pq']);
  expect(c['get_queue(missing)']).toMatchObject({ ok: false, error: 'ResourceNotFoundError' });
  expect(c['create_topic(pt)']?.value).toBe('pt');
  expect(c['get_topic(pt)']?.value).toBe('pt');
  expect(c['list_topics()']?.value).toEqual(['pt']);
  expect(c['create_subscription(pt, ps)']?.value).toBe('ps');
  expect(c['get_subscription(pt, ps)']?.value).toBe('ps');
  expect(c['list_subscriptions(pt)']?.value).toEqual(['ps']);
  expect(c['create_rule(pt, ps, red)']?.value).toBe('red');
  expect(c['get_rule(pt, ps, red)']?.value).toBe("color = 'red'");
  expect(c['list_rules(pt, ps)']?.value).toEqual(['$Default', 'red']);
  expect(c['delete_rule(pt, ps, red)']).toMatchObject({ ok: true });
  expect(c['list_rules(pt, ps) after delete']?.value).toEqual(['$Default']);
  expect(c['delete_subscription(pt, ps)']).toMatchObject({ ok: true });
  expect(c['list_subscriptions(pt) after delete']?.value).toEqual([]);
  expect(c['delete_topic(pt)']).toMatchObject({ ok: true });
  expect(c['list_topics() after delete']?.value).toEqual([]);
  expect(c['delete_queue(pq)']).toMatchObject({ ok: true });
  expect(c['list_queues() after delete']?.value).toEqual(['configured']);
  expect(c['get_namespace_properties()']?.value).toBe('sbemulatorns');
}

// Without the packages the test says why; on CI (.ci/run installs them) it must run.
describe.skipIf(!hasSdk && !process.env.CI)('Python administration client 7.8.2 over HTTPS; needs apt-get install python3-azure', () => {
  it('creates, gets, lists and deletes a queue, topic, subscription and rule through the AMQP port', async () => {
    expectCalls(await runAdmin(broker.port));
  }, 120_000);

  it('does the same through the HTTP port', async () => {
    expectCalls(await runAdmin(broker.httpPort));
  }, 120_000);
});
