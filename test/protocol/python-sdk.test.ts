// Microsoft's Python SDK 7.x (azure-servicebus 7.8.2 over uamqp 1.5.3, Debian's python3-azure and
// python3-uamqp, installed by .ci/run), unmodified, over amqps with the broker's local CA: it asks for SASL
// MSSBCBS, reads status codes only as AMQP ints and addresses links by absolute URLs, and must work all the same.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

// Debian's interpreter: a python3 earlier on PATH may be a separate build without Debian's modules.
const PYTHON = '/usr/bin/python3';
const hasSdk = spawnSync(PYTHON, ['-c', 'import uamqp, azure.servicebus'], { stdio: 'ignore' }).status === 0;
const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./python_sdk_client.py', import.meta.url));

let broker: TestBroker;
/** The broker's `websocket connected` log lines: proof the WebSocket runs did not fall back to amqps. */
const websockets: string[] = [];
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'pyq', Properties: { LockDuration: 'PT30S' } }, { Name: 'pys', Properties: { RequiresSession: true } }], {
    store: new MemoryStore(),
    broker: { TlsPort: 0 },
    log: pino({ level: 'debug' }, { write: (l: string) => void (l.includes('websocket connected') && websockets.push(l)) }),
  });
});
afterAll(async () => broker?.dispose());

/** Runs the client (amqps by default, `websocket` for AMQP over wss) on fresh queues; resolves with its report. */
async function runPython([port, ...rest]: string[]): Promise<Record<string, unknown>> {
  // Asynchronously: the broker runs in this process and must keep serving while the client runs.
  const { stdout } = await run('timeout', ['90', PYTHON, SCRIPT, port!, broker.tls!.caCertPath!, 'pyq', 'pys', ...rest]);
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

function expectFlows(out: Record<string, unknown>): void {
  expect(out.peeked).toEqual(['p1', 'p2', 'p3']);
  expect(out.scheduled).toBe(true);
  expect(out.received).toEqual(['one', 'three', 'two']);
  expect(out.props).toEqual({ n: 1 });
  expect(out.renewed).toBe(true);
  expect(out.redelivered).toEqual([{ id: 'p2', deliveryCount: 1 }]);
  expect(out.scheduledArrived).toEqual(['p4']);
  expect(out.leftover).toEqual([]);
  expect(out.deferred).toEqual({ id: 'p6', hasLock: true });
  expect(out.afterDeferred).toEqual([]);
  expect(out.dead).toEqual([{ id: 'p3', reason: 'bad', description: 'from python' }]);
  expect(out.session).toEqual({ bodies: ['s0', 's1', 's2'], ids: ['alpha'], state: 'step-2' });
}

// Without the packages the test says why; on CI (.ci/run installs them) it must run.
describe.skipIf(!hasSdk && !process.env.CI)('Python SDK 7.8.2 (uamqp) over amqps; needs apt-get install python3-azure python3-uamqp', () => {
  it('sends, peeks, schedules, locks, renews, completes, abandons, defers, dead-letters, reads the DLQ and a session', async () => {
    expectFlows(await runPython([String(broker.tlsPort)]));
  }, 120_000);

  it('does the same over WebSockets (wss, custom_endpoint_address) on the amqps port', async () => {
    const before = websockets.length;
    expectFlows(await runPython([String(broker.tlsPort), 'websocket']));
    expect(websockets.length - before).toBeGreaterThan(0);
    expect(websockets.every((l) => l.includes('"tls":true'))).toBe(true);
  }, 120_000);

  it('does the same over WebSockets on the HTTP port, which terminates TLS too', async () => {
    const before = websockets.length;
    expectFlows(await runPython([String(broker.httpPort), 'websocket']));
    expect(websockets.length - before).toBeGreaterThan(0);
  }, 120_000);
});
