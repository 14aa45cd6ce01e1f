// Nothing gets in without its right (issue 25; docs/testing.md, "The protocol fuzzer"): a stateful, property-based
// fuzzer (fast-check) writes random sequences of hand-built frames — attach, detach, whole and multi-frame transfers,
// flow, disposition, `$cbs` put-token with good, wrong, expired, short-lived and under-privileged tokens, SASL PLAIN
// logins for the right or the wrong namespace, `$management` peek and schedule, close — pipelined or not, on up to
// three connections per sequence and several sequences at once, in three namespaces, against an in-process broker
// with the manual clock. After every batch: no message stored without a Send right in force when its transfer
// arrived; no delivery without Listen; nothing accepted vanishes unless an authorised receiver took it; no namespace
// or entity created or removed; no message in another namespace; a stock client still sends, receives and completes.
// A failing batch is shrunk and printed as frames. Sizes: `size(ci, long)`; PEEKLOCK_SEED replays a seed.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, type EmbeddedBroker } from '../../src/index.js';
import { LONG, emit, size } from '../helpers/fault.js';
import { batchArb, describeBatch, keyOf, NAMESPACES, NS_NAME, POLICIES, QUEUES, type Batch, type Ns } from '../helpers/protocol-model.js';
import { BatchRunner, emptyFigures, minimise, type FuzzFigures } from '../helpers/protocol-runner.js';

/** Sequences in all (CI: about a minute on a 2-core machine, 60–85 a second, within CI's 20-minute budget; long: hours). */
const SEQUENCES = Number(process.env.PEEKLOCK_FUZZ_SEQUENCES ?? size(4_000, 1_000_000));
/** Brokers fuzzed at once (each runs its own batches, one after another). */
const BROKERS = 2;
/** At most this many sequences run concurrently in one batch; each has at most MAX_ACTIONS actions. */
const MAX_SEQS = 24;
const MAX_ACTIONS = 15;
/** One batch in EXPIRY_ODDS waits (in real time) for its short-lived tokens to lapse mid-way. */
const EXPIRY_ODDS = 25;
const TIME_BUDGET_MS = size(4 * 60_000, 12 * 60 * 60_000);
// CI runs one fixed seed, so a red run is a regression; the long size draws a new one; PEEKLOCK_SEED replays one.
const SEED = Number(process.env.PEEKLOCK_SEED ?? (LONG ? Date.now() % 1_000_000 : 25_025));

const policies = (ns: Ns): { Name: string; Key: string; Rights: string[] }[] =>
  Object.entries(POLICIES).map(([Name, Rights]) => ({ Name, Key: keyOf(ns, Name as keyof typeof POLICIES), Rights: [...Rights] }));
const CONFIG = {
  UserConfig: {
    // The first namespace is the default one (host 127.0.0.1).
    Namespaces: (['default', ...NAMESPACES.filter((n) => n !== 'default')] as Ns[]).map((ns) => ({ Name: NS_NAME[ns], Queues: QUEUES.map((Name) => ({ Name })), SharedAccessPolicies: policies(ns) })),
  },
};

describe('stateful protocol fuzzer: admission on every frame', () => {
  const brokers: EmbeddedBroker[] = [];
  const dirs: string[] = [];
  beforeAll(async () => {
    // In memory where there is a tmpfs: the fuzzer measures admission, not the disk (each batch waits for its writes).
    const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
    for (let i = 0; i < BROKERS; i++) {
      const dataDir = fs.mkdtempSync(path.join(base, 'peeklock-fuzz-'));
      dirs.push(dataDir);
      brokers.push(await startBroker({ config: CONFIG, clock: 'manual', dataDir }));
    }
  });
  afterAll(async () => {
    await Promise.all(brokers.map((b) => b.stop()));
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it(`finds no frame sequence that stores, delivers or changes anything without its right (${SEQUENCES} sequences)`, async () => {
    const t0 = performance.now();
    const figures: FuzzFigures = emptyFigures();
    const arb = batchArb(MAX_SEQS, MAX_ACTIONS, EXPIRY_ODDS);
    // A batch averages a little under MAX_SEQS / 2 sequences (11.7 of 24 measured).
    const runsPerBroker = Math.ceil(SEQUENCES / BROKERS / (MAX_SEQS / 2 - 1));
    const results = await Promise.all(
      brokers.map((b, i) => {
        const runner = new BatchRunner(b, `${i}`, figures);
        let last: string[] = [];
        const property = fc.asyncProperty(arb, async (batch: Batch) => {
          last = await runner.run(batch);
          if (last.length) throw new Error(last.join('\n'));
        });
        return fc
          .check(property, { seed: SEED + i, numRuns: runsPerBroker, interruptAfterTimeLimit: TIME_BUDGET_MS, markInterruptAsFailure: false })
          .then(async (details) => (await runner.close(), { details, last, seed: SEED + i }));
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    // Each broker's fuzzing stops at its first failure; every one found is minimised and printed.
    const failures = results.filter((r) => r.details.failed);
    const reports: string[] = [];
    for (const failed of failures) {
      const runner = new BatchRunner(brokers[results.indexOf(failed)]!, 'min');
      const { batch, violations } = await minimise(failed.details.counterexample![0] as Batch, (b) => runner.run(b));
      await runner.close();
      const fcMessage = String((failed.details.errorInstance as Error | undefined)?.message ?? '');
      reports.push(
        [
          `broker ${results.indexOf(failed)}, seed ${failed.seed} (replay: PEEKLOCK_SEED=${SEED}), after ${failed.details.numRuns} batches and ${failed.details.numShrinks} shrinks, the smallest failing batch:`,
          describeBatch(batch),
          'violations:',
          ...(violations.length ? violations : fcMessage.split('\n')).map((l) => `  ${l}`),
        ].join('\n'),
      );
    }
    const report = reports.join('\n\n');
    const failed = failures[0];
    if (report) process.stdout.write(report + '\n');

    // A well-behaved SDK client: send, receive under lock, complete, on each broker after the fuzzing.
    let sdkRoundTrips = 0;
    for (const b of brokers) {
      const client = new ServiceBusClient(
        `Endpoint=sb://nsb.localhost:${b.amqpPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${keyOf('nsb', 'RootManageSharedAccessKey')};UseDevelopmentEmulator=true`,
        { customEndpointAddress: `sb://127.0.0.1:${b.amqpPort}`, retryOptions: { maxRetries: 0, timeoutInMs: 10_000 } },
      );
      try {
        await client.createSender('audit').sendMessages({ body: 'after the fuzzer', messageId: 'sdk-canary' });
        const receiver = client.createReceiver('audit');
        const got = (await receiver.receiveMessages(50, { maxWaitTimeInMs: 3_000 })).find((m) => m.messageId === 'sdk-canary');
        if (got) {
          await receiver.completeMessage(got);
          sdkRoundTrips++;
        }
        await receiver.close();
      } finally {
        await client.close();
      }
    }
    emit({
      test: 'protocol-fuzz',
      seed: SEED,
      ...figures,
      batches: results.reduce((n, r) => n + r.details.numRuns, 0),
      interrupted: results.some((r) => r.details.interrupted),
      seconds: Math.round(seconds),
      sequencesPerSecond: Math.round(figures.sequences / seconds),
      failed: !!failed,
      sdkRoundTrips,
    });
    expect(report).toBe('');
    expect(sdkRoundTrips).toBe(BROKERS);
    // The fuzzer exercised the authorised paths too, not only refusals.
    expect(figures.sequences).toBeGreaterThan(SEQUENCES / 2);
    expect(figures.stored).toBeGreaterThan(0);
    expect(figures.deliveries).toBeGreaterThan(0);
  }, TIME_BUDGET_MS + 120_000);
});
