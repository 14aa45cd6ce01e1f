// Microsoft's Python SDK 7.8.2 (uamqp 1.5.3, Debian's python3-azure and python3-uamqp) with a wrong key and
// retry_total=0 must end in ServiceBusError ("Authentication Put-Token failed"), run after run, over amqps and over
// wss: a refused put-token must never crash uamqp's C code (issue 38, item 1: it died with `free(): invalid next
// size (fast)` in some runs). The right key must still send. Each run is its own Python process, bounded by a timeout.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { emit, size } from '../helpers/fault.js';

// Debian's interpreter: a python3 earlier on PATH may be a separate build without Debian's modules.
const PYTHON = '/usr/bin/python3';
const hasSdk = spawnSync(PYTHON, ['-c', 'import uamqp, azure.servicebus'], { stdio: 'ignore' }).status === 0;
const SCRIPT = fileURLToPath(new URL('./python_sdk_auth.py', import.meta.url));
const RIGHT_KEY = 'SAS_KEY_VALUE';
const WRONG_KEY = Buffer.from('not the key of this namespace').toString('base64');

/** Wrong-key runs per transport (and right-key runs): small in CI, 100 per transport under PEEKLOCK_LONG. */
const WRONG_RUNS = size(12, 100);
const RIGHT_RUNS = size(2, 10);
/** Python processes at once: the crash needs no load, and two cores are shared. */
const PARALLEL = 3;
/** One run's bound: a wrong key fails within a few seconds; `timeout -s KILL` ends a hung client on every path. */
const RUN_SECONDS = 45;

interface Run {
  /** `sent`, `ServiceBusError`, or how the process ended otherwise (signal, exit code, timeout). */
  outcome: string;
  /** The last lines of stderr and stdout, for the failure message. */
  tail: string;
}

/** One client process: its outcome from its JSON line, or how it died. */
function runOnce(port: number, ca: string, key: string, websocket: boolean): Promise<Run> {
  const args = ['-s', 'KILL', String(RUN_SECONDS), PYTHON, SCRIPT, String(port), ca, 'authq', key, ...(websocket ? ['websocket'] : [])];
  return new Promise((resolve) => {
    execFile('timeout', args, { maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const tail = `${stderr.trim().split('\n').slice(-6).join('\n')}\n${stdout.trim()}`;
      const code = (err as (Error & { code?: number | string; signal?: string }) | null)?.code;
      const signal = (err as (Error & { signal?: string }) | null)?.signal;
      if (err) {
        // timeout(1) passes on a killed child's status as 128 + the signal, and says 137 when it killed it itself.
        const how = signal ? `signal ${signal}` : code === 137 ? 'timeout' : typeof code === 'number' && code > 128 ? `signal ${code - 128}` : `exit ${code}`;
        return resolve({ outcome: how, tail });
      }
      try {
        resolve({ outcome: String((JSON.parse(stdout.trim().split('\n').pop()!) as { outcome: string }).outcome), tail });
      } catch {
        resolve({ outcome: 'no report', tail });
      }
    });
  });
}

/** `count` runs, `PARALLEL` at a time, each with its outcome. */
async function runMany(count: number, run: () => Promise<Run>): Promise<Run[]> {
  const out: Run[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      out.push(await run());
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, count) }, worker));
  return out;
}

/** The outcomes counted by kind, and the first few that were not `expected`, with their output. */
function tally(runs: Run[], expected: string): { counts: Record<string, number>; unexpected: string[] } {
  const counts: Record<string, number> = {};
  for (const r of runs) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
  const unexpected = runs.filter((r) => r.outcome !== expected).slice(0, 3).map((r) => `${r.outcome}:\n${r.tail}`);
  return { counts, unexpected };
}

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'authq' }], { store: new MemoryStore(), broker: { TlsPort: 0 } });
});
afterAll(async () => broker?.dispose());

// Without the packages the test says why; on CI (.ci/run installs them) it must run.
describe.skipIf(!hasSdk && !process.env.CI)('Python SDK 7.8.2 (uamqp) and a refused token; needs apt-get install python3-azure python3-uamqp', () => {
  const timeout = ((WRONG_RUNS + RIGHT_RUNS) / PARALLEL + 2) * RUN_SECONDS * 1000;

  for (const transport of ['amqps', 'wss'] as const) {
    it(`ends every wrong-key run over ${transport} in ServiceBusError, none in a crash`, async () => {
      const runs = await runMany(WRONG_RUNS, () => runOnce(broker.tlsPort!, broker.tls!.caCertPath!, WRONG_KEY, transport === 'wss'));
      const { counts, unexpected } = tally(runs, 'ServiceBusError');
      emit({ test: 'python-wrong-key', transport, runs: runs.length, ...counts });
      expect(unexpected, JSON.stringify(counts)).toEqual([]);
      expect(counts.ServiceBusError).toBe(WRONG_RUNS);
    }, timeout);

    it(`sends with the right key over ${transport}, run after run`, async () => {
      const runs = await runMany(RIGHT_RUNS, () => runOnce(broker.tlsPort!, broker.tls!.caCertPath!, RIGHT_KEY, transport === 'wss'));
      const { counts, unexpected } = tally(runs, 'sent');
      emit({ test: 'python-right-key', transport, runs: runs.length, ...counts });
      expect(unexpected, JSON.stringify(counts)).toEqual([]);
    }, timeout);
  }
});
