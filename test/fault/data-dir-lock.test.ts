// One broker per data directory, as the real CLI runs it: a second broker on a held directory is refused at once
// with one line naming the holder's PID (and the first goes on delivering each message once), a broker killed
// with kill -9 never blocks its restart, and of brokers started at the same instant on one directory exactly one
// runs. Clients are the real SDK with its default options.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ServiceBusClient } from '@azure/service-bus';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, exited, runCli, startChild, trackChild, writeConfig, type ChildBroker } from '../helpers/child-broker.js';

const { config, dataDir, dir } = writeConfig([{ Name: 'orders', Properties: { LockDuration: 'PT30S' } }]);
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const p of children) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await Promise.all(children.map((p) => exited(p)));
  fs.rmSync(dir, { recursive: true, force: true });
});

const lockedLine = (pid: number): string =>
  `peeklock: the data directory ${dataDir} is in use by another peeklock (PID ${pid}); stop that broker, or give this one its own --data-dir (or Broker.DataDir)\n`;

async function start(): Promise<ChildBroker> {
  const b = await startChild(['--config', config]);
  children.push(b.proc);
  return b;
}

function client(port: number): ServiceBusClient {
  return new ServiceBusClient(
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
  );
}

/** Receives and completes until `n` arrived or 5 s of nothing; returns the message ids in arrival order. */
async function drain(port: number, n: number): Promise<string[]> {
  const c = client(port);
  const receiver = c.createReceiver('orders');
  const ids: string[] = [];
  try {
    for (let round = 0; round < 20; round++) {
      const msgs = await receiver.receiveMessages(n, { maxWaitTimeInMs: ids.length >= n ? 1000 : 5000 });
      if (msgs.length === 0) break;
      for (const m of msgs) {
        ids.push(String(m.messageId));
        await receiver.completeMessage(m);
      }
    }
  } finally {
    await c.close();
  }
  return ids;
}

describe('one broker per data directory', () => {
  it('refuses a second broker on a held directory within 5 s with one line naming the PID; no message is delivered twice', async () => {
    const first = await start();
    const c = client(first.port);
    await c.createSender('orders').sendMessages(Array.from({ length: 20 }, (_, i) => ({ messageId: `m${i}`, body: i })));
    await c.close();

    const t0 = performance.now();
    const second = await runCli(['start', '--config', config], 5_000);
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(lockedLine(first.proc.pid!));
    expect(performance.now() - t0).toBeLessThan(5_000);

    // The first broker is untouched and delivers each message once; after a restart nothing comes back.
    const ids = await drain(first.port, 20);
    expect(ids.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`).sort());
    first.proc.kill('SIGTERM');
    expect(await exited(first.proc)).toBe(0);
    const again = await start();
    expect(await drain(again.port, 1)).toEqual([]);
    again.proc.kill('SIGTERM');
    expect(await exited(again.proc)).toBe(0);
  });

  it('restarts at once on the directory of a broker killed with kill -9, keeping its messages', async () => {
    const victim = await start();
    const c = client(victim.port);
    await c.createSender('orders').sendMessages({ messageId: 'survivor', body: 'x' });
    await c.close();
    victim.proc.kill('SIGKILL');
    expect(await exited(victim.proc)).toBe('SIGKILL');
    // The dead broker's PID is still written in the lock file; only the kernel's lock counts, and it is gone.
    expect(fs.readFileSync(path.join(dataDir, 'peeklock.lock'), 'utf8').trim()).toBe(String(victim.proc.pid));

    const t0 = performance.now();
    const next = await start();
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect(await drain(next.port, 1)).toEqual(['survivor']);
    next.proc.kill('SIGTERM');
    expect(await exited(next.proc)).toBe(0);
  });

  it('of brokers started at the same instant on one directory, exactly one runs and the others name it', async () => {
    for (let round = 0; round < 3; round++) {
      const procs = Array.from({ length: 3 }, () => {
        const p = trackChild(spawn(process.execPath, [BIN, 'start', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] }));
        children.push(p);
        let err = '';
        p.stderr.on('data', (c: Buffer) => (err += c.toString()));
        return { p, err: () => err };
      });
      // Every one has either exited (refused) or logged `listening` within 20 s.
      const outcome = await Promise.all(
        procs.map(
          ({ p, err }) =>
            new Promise<'running' | number | string | null>((resolve) => {
              const timer = setTimeout(() => resolve('hung'), 20_000);
              const check = (): void => {
                if (err().includes('"listening"')) {
                  clearTimeout(timer);
                  resolve('running');
                }
              };
              p.stderr.on('data', check);
              p.once('exit', (code) => {
                clearTimeout(timer);
                resolve(code);
              });
            }),
        ),
      );
      const running = procs.filter((_, i) => outcome[i] === 'running');
      expect(running).toHaveLength(1);
      expect(outcome.filter((o) => o === 1)).toHaveLength(2);
      const winner = running[0]!.p;
      for (const [i, { err }] of procs.entries()) if (outcome[i] === 1) expect(err()).toBe(lockedLine(winner.pid!));
      winner.kill('SIGTERM');
      expect(await exited(winner)).toBe(0);
    }
  });
});
