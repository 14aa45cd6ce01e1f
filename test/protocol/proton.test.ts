// A client not built on rhea: Apache Qpid Proton (Debian's python3-qpid-proton, installed by .ci/run) sends,
// receives under a lock, abandons, dead-letters and completes against the broker, over plain AMQP and over amqps.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

// Debian's interpreter: a python3 earlier on PATH may be a separate build without Debian's modules.
const PYTHON = '/usr/bin/python3';
const hasProton = spawnSync(PYTHON, ['-c', 'import proton'], { stdio: 'ignore' }).status === 0;
const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./proton_client.py', import.meta.url));

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }], { store: new MemoryStore() });
});
afterAll(async () => broker?.dispose());

function expectFlows(stdout: string): void {
  const out = JSON.parse(stdout);
  expect(out.first).toEqual({ id: 'p1', body: 'one', props: { n: 0, tag: 'proton' }, seq: 1, dc: 0 });
  expect(out.next).toEqual({ id: 'p2', dc: 0 });
  expect(out.rest).toEqual({ p1: 1, p3: 0 });
  expect(out.deadLettered).toEqual({ id: 'p2', body: 'two' });
}

describe.skipIf(!hasProton && !process.env.CI)('Qpid Proton client', () => {
  it('sends, receives under a lock, abandons, dead-letters and completes', async () => {
    // Asynchronously: the broker runs in this process and must keep serving while the client runs.
    const { stdout } = await run('timeout', ['60', PYTHON, SCRIPT, String(broker.port)]);
    expectFlows(stdout);
  });

  it('does the same over amqps with SASL PLAIN, trusting the local CA and checking the name', async () => {
    const tlsBroker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }], {
      store: new MemoryStore(),
      broker: { TlsPort: 0 },
    });
    try {
      const { stdout } = await run('timeout', ['60', PYTHON, SCRIPT, String(tlsBroker.tlsPort), tlsBroker.tls!.caCertPath!]);
      expectFlows(stdout);
    } finally {
      await tlsBroker.dispose();
    }
  });
});
