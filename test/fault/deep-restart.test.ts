// A deep queue restarts in bounded memory: 200,000 stored 1 KiB messages, with a deferred, a locked and a
// scheduled one far behind the front, come back with the broker's resident memory under a stated bound (start-up
// reads the held rows and one window, not every row), and are then delivered in sequence order across every
// window edge, the locked and the scheduled message in their places once due, the deferred one not at all.

import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { pino } from 'pino';
import rhea from 'rhea';
import { Broker } from '../../src/broker/broker.js';
import { SystemClock } from '../../src/broker/runtime/clock.js';
import { createContext } from '../../src/broker/runtime/context.js';
import { loadConfig } from '../../src/config/load.js';
import { LmdbStore } from '../../src/store/lmdb/lmdb-store.js';
import { connect } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { statusMB } from '../helpers/fault.js';

const TOTAL = 200_000;
/** Resident memory allowed after the restart. A broker that read every row came back at well over twice this. */
const RSS_BOUND_MB = 160;

const { config, dataDir, dir } = writeConfig([{ Name: 'q', Properties: { LockDuration: 'PT5M', MaxDeliveryCount: 10 } }]);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

// Fills the store through the broker itself (the rows are exactly what sends would have written), then sets three
// rows far behind the front into the states a receiver would have left them in.
async function fill(): Promise<{ deferSeq: number; lockSeq: number; schedSeq: number; dueAt: number }> {
  const store = new LmdbStore({ path: dataDir });
  await store.open();
  const deps = { config: loadConfig(config), store, clock: new SystemClock(), log: pino({ level: 'silent' }) };
  const ctx = createContext(deps);
  const broker = new Broker(deps, ctx);
  await broker.start();
  const payload = 'x'.repeat(1000);
  for (let i = 0; i < TOTAL; i += 2000) {
    const msgs = Array.from({ length: 2000 }, (_, k) => {
      const id = `m${i + k + 1}`;
      return { messageId: id, body: new Uint8Array(rhea.message.encode({ message_id: id, body: payload })) };
    });
    await broker.send('q', msgs);
  }
  const qid = ctx.entities.resolve('q').id;
  await broker.stop();
  await store.open();
  const dueAt = Date.now() + 3000;
  const [deferSeq, lockSeq, schedSeq] = [150_000, 160_000, 170_000];
  const row = (seq: number) => store.readRow(qid, seq)!;
  await store.write([
    { op: 'put', qid, row: { ...row(deferSeq), state: 'deferred', deferred: true, deliveryCount: 1 } },
    { op: 'put', qid, row: { ...row(lockSeq), state: 'locked', deliveryCount: 1, lock: { token: '6f1c0e8a-0000-4000-8000-000000000001', until: dueAt } } },
    { op: 'put', qid, row: { ...row(schedSeq), state: 'scheduled', scheduledAt: dueAt } },
  ]);
  await store.close();
  return { deferSeq, lockSeq, schedSeq, dueAt };
}

// Receives and completes every message, recording sequence numbers in delivery order, until none comes for idleMs.
function receiveAll(conn: rhea.Connection, idleMs: number): Promise<number[]> {
  const seqs: number[] = [];
  const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 500, autoaccept: true, rcv_settle_mode: 0 });
  return new Promise((resolve) => {
    let timer = setTimeout(() => finish(), idleMs * 4);
    const finish = (): void => {
      receiver.close();
      resolve(seqs);
    };
    receiver.on('message', (ctx: rhea.EventContext) => {
      seqs.push(Number(ctx.message!.message_annotations!['x-opt-sequence-number']));
      clearTimeout(timer);
      timer = setTimeout(finish, idleMs);
    });
  });
}

describe('a deep queue across a restart', () => {
  it('restarts with 200,000 messages in bounded memory and delivers them in sequence order', async () => {
    const { deferSeq, lockSeq, schedSeq, dueAt } = await fill();
    const b = await startChild(['--config', config]);
    try {
      await new Promise((r) => setTimeout(r, 300)); // let start-up garbage be collected before sampling
      const pid = b.proc.pid;
      const mem = { rss: statusMB(pid, 'VmRSS'), anon: statusMB(pid, 'RssAnon'), file: statusMB(pid, 'RssFile') };
      process.stdout.write(JSON.stringify({ test: 'deep-restart', messages: TOTAL, startMs: Math.round(b.startMs), ...mem }) + '\n');
      expect(mem.rss).toBeLessThan(RSS_BOUND_MB);

      await new Promise((r) => setTimeout(r, Math.max(0, dueAt - Date.now() + 200))); // the lock lapses, the schedule falls due
      const conn = (await connect(b.port)) as rhea.Connection;
      const seqs = await receiveAll(conn, 1500);
      conn.close();
      expect(seqs).toHaveLength(TOTAL - 1);
      let ordered = true;
      for (let i = 1; i < seqs.length; i++) if (seqs[i]! <= seqs[i - 1]!) ordered = false;
      expect(ordered).toBe(true);
      expect(seqs).toContain(lockSeq);
      expect(seqs).toContain(schedSeq);
      expect(seqs).not.toContain(deferSeq);
    } finally {
      b.proc.kill('SIGTERM');
      await exited(b.proc);
    }
  }, 180_000);
});
