// Power loss during a broker's first start (docs/durability.md, "Power loss"): on an empty data directory the
// broker makes the directory, takes the data-directory lock (`peeklock.lock`), creates the LMDB store, generates
// the local CA and server certificate for its TLS port, and then, answered by the test, a runtime namespace
// (`namespace.json` and its own store). The power is cut just before a random one of those mutating file-system
// calls (N in 1..all the calls a clean first start makes), or just after the namespace was answered 201 (the last
// cut and every tenth), the broker killed. The restart on what is left must need no help: it takes the lock, opens
// or creates the store, serves TLS with a certificate its CA signed, and a namespace answered 201 before the cut is
// there. Each round begins from an empty directory again.

import { describe, expect, it } from 'vitest';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { exited, type ChildBroker } from '../helpers/child-broker.js';
import { CUT_MODES, cutfsUnavailable, powerCutRig } from '../helpers/cutfs.js';
import { emit, LONG, size } from '../helpers/fault.js';
import { adminCall, restartAfterCut, spread } from '../helpers/powercut.js';

const CUTS = size(3, 200);
const SEED = Number(process.env.PEEKLOCK_SEED ?? Math.floor(Math.random() * 1e9));
const unavailable = cutfsUnavailable();

const rig = powerCutRig([{ Name: 'q' }], { broker: { TlsPort: 0 } });

/** The port of the broker's `amqps listening` line. */
function tlsPort(b: ChildBroker): number {
  const line = b.output().split('\n').find((l) => l.includes('"amqps listening"'));
  return line ? (JSON.parse(line) as { tlsPort: number }).tlsPort : 0;
}

/** A TLS handshake with the broker's amqps port, trusting only the CA in its data directory; the error, or null. */
function handshake(b: ChildBroker): Promise<string | null> {
  let ca: Buffer;
  try {
    ca = fs.readFileSync(path.join(rig.dataDir, 'tls', 'ca.crt'));
  } catch (err) {
    return Promise.resolve(`no CA certificate: ${(err as Error).message}`);
  }
  return new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port: tlsPort(b), ca, servername: 'localhost', timeout: 5_000 });
    s.once('secureConnect', () => {
      s.destroy();
      resolve(null);
    });
    s.once('error', (err) => resolve(`TLS handshake failed: ${err.message}`));
    s.once('timeout', () => {
      s.destroy();
      resolve('TLS handshake timed out');
    });
  });
}

/** After the broker listens: a runtime namespace (namespace.json and a store of its own); its answer is recorded. */
const makeNamespace = (answer: { status: number }) => async (b: ChildBroker): Promise<void> => {
  answer.status = (await adminCall(b.port, 'PUT', '/api/namespaces/pc-first', { Queues: [{ Name: 'inbox' }] })).status;
};

describe.skipIf(!!unavailable)(`power cut during the first start${unavailable ? ` [skipped: ${unavailable}]` : ''}`, () => {
  it('starts without help after a cut anywhere in a first start: lock, store, TLS files, namespace.json', async () => {
    const figures = { test: 'powercut-first-start', seed: SEED, calls: 0, cuts: 0, namespacesAcknowledged: 0, failedRestarts: 0, tlsFailures: 0, namespacesLost: 0, restartMs: [] as number[] };
    const problems: string[] = [];
    // A clean first start, counted: how many mutating calls the cut can land before.
    const clean = { status: 0 };
    const first = await rig.start();
    await makeNamespace(clean)(first);
    expect(clean.status).toBe(201);
    figures.calls = (await rig.mount.stats()).ops;
    first.proc.kill('SIGTERM');
    expect(await exited(first.proc)).toBe(0);
    await rig.unmount();

    for (let cut = 0; cut < CUTS; cut++) {
      rig.wipe();
      const rnd = crypto.createHash('sha256').update(`${SEED}/${cut}`).digest();
      const mode = CUT_MODES[(cut + SEED) % CUT_MODES.length]!;
      // Stratified over the start's calls (strata in a scrambled order: a run stopped early has sampled all of it).
      // The last cut and every tenth land just after the namespace's 201 instead (the arm is never reached, so the
      // rig cuts once the start is answered): a cut before the last call always comes before the 201.
      const afterStart = cut === CUTS - 1 || cut % 10 === 9;
      const n = afterStart
        ? figures.calls + 1_000_000
        : 1 + Math.floor(((((cut * 7919) % CUTS) + rnd.readUInt32BE(0) / 2 ** 32) * figures.calls) / CUTS);
      const answer = { status: 0 };
      const cutFigures = await rig.startCut(mode, rnd.readUInt32BE(4), n, makeNamespace(answer));
      const where = afterStart
        ? `cut ${cut} (${mode}, after the start was answered, seed ${SEED})`
        : `cut ${cut} (${mode}, before ${cutFigures.op ?? 'nothing'} ${n} of ${figures.calls}, seed ${SEED})`;
      figures.cuts++;
      if (answer.status === 201) figures.namespacesAcknowledged++;
      await rig.unmount();
      const broker = await restartAfterCut(rig, where, problems);
      if (!broker) {
        figures.failedRestarts++;
        continue;
      }
      figures.restartMs.push(Math.round(broker.startMs));
      const tlsProblem = await handshake(broker);
      if (tlsProblem) {
        figures.tlsFailures++;
        problems.push(`${tlsProblem} after ${where}`);
      }
      const listed = await adminCall(broker.port, 'GET', '/api/namespaces');
      const names = ((listed.body ?? []) as { name: string }[]).map((x) => x.name);
      if (answer.status === 201 && !names.includes('pc-first')) {
        figures.namespacesLost++;
        problems.push(`namespace pc-first was created (201) and is gone after ${where}`);
      }
      broker.proc.kill('SIGTERM');
      if ((await exited(broker.proc)) !== 0) problems.push(`the restarted broker did not stop cleanly after ${where}`);
      await rig.unmount();
      if (LONG && cut % 10 === 9) emit({ ...figures, restartMs: spread(figures.restartMs), partial: true, problems: problems.length });
    }
    emit({ ...figures, restartMs: spread(figures.restartMs) });
    for (const p of problems.slice(0, 10)) console.error(p);
    expect(problems).toEqual([]);
    // The namespace check must have come into play: some cuts land after the 201.
    expect(figures.namespacesAcknowledged).toBeGreaterThan(0);
  }, size(120_000, 3_600_000));
});
