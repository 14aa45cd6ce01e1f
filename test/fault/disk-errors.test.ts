// Disk errors (docs/durability.md, "Disk full and disk errors"). The broker runs under strace with pwrite64 failing
// with ENOSPC for a window of calls (UV_THREADPOOL_SIZE=1, so `when=` counts the one writer thread). Sends during the
// fault must never be accepted; nothing accepted may be lost; and the broker either recovers by itself or — if the
// write-ahead log could not be written, or LMDB declared the environment dead (MDB_PANIC) — exits 1 with a
// StoreFatalError log line, never via an unhandled rejection or an abort. A restart without faults then finds every accepted message.
//
// Failing every pwrite64 also fails LMDB's meta-page write, so this run usually ends in MDB_PANIC and the fatal exit; a
// real full disk does not (the meta pages' blocks are already allocated). The recovery half — sends refused while full,
// accepted again in the same process once space returns — is disk-full.test.ts, on a small tmpfs.

import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { connect } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, restartAndTally, sendOne, size, sleep, tracee } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const hasStrace = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
const SENDS = size(300, 3_000);
const FAULT = size('40..90', '40..900');
const { config, dataDir, dir } = writeConfig([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!hasStrace && !process.env.CI)('disk errors: ENOSPC injected on pwrite64', () => {
  it('refuses sends during the fault, loses nothing accepted, and never dies of an unhandled rejection', async () => {
    const broker = await startChild(['--config', config, '--data-dir', dataDir], {
      prefix: ['strace', '-f', '-o', path.join(dir, 'strace.log'), '-e', 'trace=pwrite64', '-e', `inject=pwrite64:error=ENOSPC:when=${FAULT}`],
      env: { UV_THREADPOOL_SIZE: '1' },
    });
    const history = new Map<string, 'ok' | 'fail' | 'info'>();
    const conditions = new Map<string, number>();
    const conn: Any = await connect(broker.port);
    let firstFail = -1;
    let recoveredAt = -1;
    const deadline = Date.now() + 60_000;
    for (let i = 0; i < SENDS && Date.now() < deadline && broker.proc.exitCode === null; i++) {
      const id = `m${i}`;
      const a = await sendOne(conn, 'q', { message_id: id, body: `body-${i}` }, 5_000);
      history.set(id, a.outcome);
      if (a.outcome === 'fail') {
        conditions.set(a.condition ?? '?', (conditions.get(a.condition ?? '?') ?? 0) + 1);
        if (firstFail < 0) firstFail = i;
      }
      if (a.outcome === 'ok' && firstFail >= 0 && recoveredAt < 0) recoveredAt = i;
      if (a.outcome === 'info') break; // the broker went away (StoreFatalError exit)
    }
    conn.close();
    const node = tracee(broker.proc.pid!);
    const stillUp = broker.proc.exitCode === null && node !== undefined;
    if (node) process.kill(node, 'SIGTERM');
    await exited(broker.proc);
    await sleep(200);
    const output = broker.output();

    // Restart without faults and drain.
    const { tally } = await restartAndTally(config, dataDir, history);
    const figures = { test: 'disk-errors', ...tally };
    const fatalExit = /StoreFatalError|failed for good/.test(output);
    emit({
      ...figures,
      fault: FAULT,
      conditions: Object.fromEntries(conditions),
      firstFailAt: firstFail,
      recoveredAt,
      stillUp,
      fatalExit,
      unhandled: /unhandled rejection/.test(output),
    });
    // A failed write of the write-ahead log is fatal at once (its record may be partly on disk: the writes of that
    // flush get no answer, their outcome unknown, as on a lost connection); a failure inside LMDB's apply, behind
    // the log, is retried. So either sends were refused while the fault lasted, or the broker stopped on the first.
    expect(figures.fail > 0 || fatalExit).toBe(true);
    expect(figures.lost).toBe(0);
    expect(figures.failStored).toBe(0);
    expect(figures.unexpected).toBe(0);
    expect(output).not.toMatch(/"msg":"unhandled rejection"/);
    // Either it recovered in-process, or it stopped on a StoreFatalError by design.
    expect(recoveredAt >= 0 || fatalExit).toBe(true);
  }, 120_000);
});
