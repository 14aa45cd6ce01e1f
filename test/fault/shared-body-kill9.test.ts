// A topic send to 10 subscriptions stores its body once, shared by the 10 copies and freed with the last of
// them, and kill -9 at any point in between neither loses a copy nor frees a body early. The broker is the real
// CLI in a child process, the client the real SDK with its default options; the store is opened after the
// broker is dead (the directory lock guarantees that) to count what is on disk.

import fs from 'node:fs';
import { ServiceBusClient, type ServiceBusClientOptions, type ServiceBusReceivedMessage } from '@azure/service-bus';
import { afterAll, describe, expect, it } from 'vitest';
import type { LmdbDbs } from '../../src/store/lmdb/env.js';
import { LoggedStore } from '../../src/store/log/logged-store.js';
import { exited, startChild, writeConfig, type ChildBroker } from '../helpers/child-broker.js';

const SUBS = Array.from({ length: 10 }, (_, i) => `s${i}`);
const N = 40;
const { config, dataDir, dir } = writeConfig([], {}, [
  { Name: 't', Subscriptions: SUBS.map((Name) => ({ Name, Properties: { LockDuration: 'PT5S' } })) },
]);
const children: ChildBroker[] = [];
afterAll(async () => {
  for (const { proc } of children) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  await Promise.all(children.map(({ proc }) => exited(proc)));
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The body of message i: 1 KiB, different for every message, so a copy reading another's body shows. */
function bodyOf(i: number): Buffer {
  const b = Buffer.alloc(1024, i);
  b.write(`message ${i}`);
  return b;
}

async function start(): Promise<ChildBroker> {
  const b = await startChild(['--config', config]);
  children.push(b);
  return b;
}

async function kill9(b: ChildBroker): Promise<void> {
  b.proc.kill('SIGKILL');
  await exited(b.proc);
}

function client(port: number, options?: ServiceBusClientOptions): ServiceBusClient {
  return new ServiceBusClient(
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
    options,
  );
}

/** What the data directory holds: bodies stored, shared bodies, and each subscription's rows with their bodies. */
async function onDisk(): Promise<{ bodies: number; shared: number; rows: Map<string, { id: string; body: string | undefined }[]> }> {
  // Opening replays the write-ahead log into LMDB, so LMDB's databases then hold everything acknowledged.
  const store = new LoggedStore({ path: dataDir });
  await store.open();
  try {
    const { dbs } = (store as unknown as { index: { dbs: LmdbDbs } }).index;
    const rows = new Map<string, { id: string; body: string | undefined }[]>();
    for (const s of SUBS) {
      // Read, not allocated: the broker registered every subscription under its lower-cased path.
      const qid = dbs.names.get(`t/subscriptions/${s}`)!;
      expect(qid).toBeTypeOf('number');
      rows.set(
        s,
        store.load(qid).rows.map((r) => ({ id: r.messageId, body: hex(store.readBody(qid, r.seq)) })),
      );
    }
    return { bodies: dbs.bodies.getCount(), shared: store.sharedBodies(), rows };
  } finally {
    await store.close();
  }
}

const hex = (b: Uint8Array | undefined): string | undefined => b && Buffer.from(b).toString('hex');
const idOf = (m: ServiceBusReceivedMessage): number => Number(String(m.messageId).slice(1));

/** Receives and completes from one subscription until `n` arrived or nothing comes for a while; checks bodies. */
async function drain(c: ServiceBusClient, sub: string, n: number): Promise<number[]> {
  const receiver = c.createReceiver('t', sub);
  const got: number[] = [];
  try {
    for (let round = 0; round < 30 && got.length < n; round++) {
      const msgs = await receiver.receiveMessages(n - got.length, { maxWaitTimeInMs: 2000 });
      for (const m of msgs) {
        expect(Buffer.from(m.body as Uint8Array).equals(bodyOf(idOf(m)))).toBe(true);
        got.push(idOf(m));
        await receiver.completeMessage(m);
      }
    }
  } finally {
    await receiver.close();
  }
  return got.sort((a, b) => a - b);
}

describe('shared topic bodies under kill -9', () => {
  it('stores one body per send for 10 subscriptions; completing every copy frees it; kill -9 in between loses and frees nothing early', async () => {
    const all = Array.from({ length: N }, (_, i) => i);
    const t0 = performance.now();
    const ms: Record<string, number> = {};

    // 1. N sends to the topic, all accepted, then kill -9: N bodies on disk, not 10 x N.
    let b = await start();
    let c = client(b.port);
    await c.createSender('t').sendMessages(all.map((i) => ({ messageId: `m${i}`, body: bodyOf(i) })));
    await kill9(b);
    await c.close().catch(() => undefined);
    let disk = await onDisk();
    expect(disk.shared).toBe(N);
    expect(disk.bodies).toBe(N);
    for (const s of SUBS) expect(disk.rows.get(s)!.map((r) => r.id)).toEqual(all.map((i) => `m${i}`));

    ms.sent = Math.round(performance.now() - t0);
    // 2. Complete every copy in s0..s4; in s5 complete half (confirmed), then kill -9 with more completes in flight.
    // This client does not retry, so the completes the kill cut off fail at once instead of retrying for a minute.
    b = await start();
    c = client(b.port, { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } });
    for (const s of SUBS.slice(0, 5)) expect(await drain(c, s, N)).toEqual(all);
    const s5 = c.createReceiver('t', 's5');
    const locked: ServiceBusReceivedMessage[] = [];
    for (let round = 0; round < 10 && locked.length < N; round++) locked.push(...(await s5.receiveMessages(N - locked.length, { maxWaitTimeInMs: 2000 })));
    expect(locked).toHaveLength(N);
    const confirmed = new Set<number>();
    for (const m of locked.slice(0, N / 2)) {
      await s5.completeMessage(m);
      confirmed.add(idOf(m));
    }
    // The other half at once, and kill -9 a moment later: some may commit, none is confirmed before the kill.
    const inFlight = locked.slice(N / 2).map((m) =>
      s5.completeMessage(m).then(
        () => void confirmed.add(idOf(m)),
        () => undefined,
      ),
    );
    await new Promise((r) => setTimeout(r, 2));
    await kill9(b);
    await Promise.all(inFlight);
    await c.close().catch(() => undefined);
    ms.killedMidComplete = Math.round(performance.now() - t0);
    // Every copy still stored reads its own message's bytes, and every message still has its 4 untouched copies,
    // so no body may have been freed.
    disk = await onDisk();
    expect(disk.shared).toBe(N);
    expect(disk.bodies).toBe(N);
    for (const s of SUBS.slice(0, 5)) expect(disk.rows.get(s)).toEqual([]);
    for (const [s, rows] of disk.rows) {
      // A stored body is the message as it was sent (all its sections); the payload is inside it.
      for (const r of rows) expect(r.body?.includes(hex(bodyOf(Number(r.id.slice(1))))!), `${s} ${r.id}`).toBe(true);
    }
    const s5Left = disk.rows.get('s5')!.map((r) => Number(r.id.slice(1)));
    for (const i of confirmed) expect(s5Left).not.toContain(i);

    // 3. Restart and complete the rest: what was left in s5 (after its locks lapse) and all of s6..s9. Then
    // nothing is left on disk: every shared body went with its last copy.
    b = await start();
    c = client(b.port);
    expect(await drain(c, 's5', s5Left.length)).toEqual(s5Left);
    for (const s of SUBS.slice(6)) expect(await drain(c, s, N)).toEqual(all);
    await c.close();
    b.proc.kill('SIGTERM');
    expect(await exited(b.proc)).toBe(0);
    disk = await onDisk();
    expect(disk.shared).toBe(0);
    expect(disk.bodies).toBe(0);
    for (const rows of disk.rows.values()) expect(rows).toEqual([]);
    process.stdout.write(JSON.stringify({ test: 'shared-body-kill9', messages: N, subscriptions: SUBS.length, s5LeftAfterKill: s5Left.length, ms, totalMs: Math.round(performance.now() - t0) }) + '\n');
  }, 120_000);
});
