// Power loss while namespaces are created and deleted at run time (docs/durability.md, "Power loss"): the broker (a
// child process, data directory on cutfs) takes `PUT` and `DELETE /api/namespaces/{name}` one after another, each
// created namespace getting one message; the power is cut and the broker killed at a random point. After the
// restart (without help) every namespace whose create was answered 201 and never deleted is there with its message,
// and every namespace whose delete was answered 200 is gone. Namespaces are `namespace.json` plus their own LMDB
// store in a directory of their own, so this checks the directory syncs of src/fs/durable.ts end to end.

import { describe, expect, it } from 'vitest';
import { ServiceBusClient } from '@azure/service-bus';
import crypto from 'node:crypto';
import { exited } from '../helpers/child-broker.js';
import { CUT_MODES, cutfsUnavailable, powerCutRig } from '../helpers/cutfs.js';
import { emit, size, sleep } from '../helpers/fault.js';
import { adminCall as call, bounded } from '../helpers/powercut.js';

const CUTS = size(2, 200);
const SEED = Number(process.env.PEEKLOCK_SEED ?? Math.floor(Math.random() * 1e9));
const unavailable = cutfsUnavailable();

const rig = powerCutRig([{ Name: 'q' }]);

/** The connection string of namespace `name`, aimed at the broker's port. */
function clientOf(port: number, connectionString: string): ServiceBusClient {
  return new ServiceBusClient(connectionString.replace(/Endpoint=sb:\/\/[^;]+/, `Endpoint=sb://127.0.0.1:${port}`), {
    retryOptions: { maxRetries: 0, timeoutInMs: 10_000 },
  });
}

describe.skipIf(!!unavailable)(`power cut while namespaces are created and deleted${unavailable ? ` [skipped: ${unavailable}]` : ''}`, () => {
  it('keeps every acknowledged namespace with its message and no acknowledged delete comes back', async () => {
    const figures = { test: 'powercut-namespaces', seed: SEED, cuts: 0, created: 0, deleted: 0, inFlight: 0, lost: 0, resurrected: 0, messagesLost: 0, restartMs: [] as number[] };
    // name -> what the broker answered last: created (with a message accepted in it) or deleted; in flight if unknown.
    const state = new Map<string, 'created' | 'deleted' | 'unknown'>();
    let broker = await rig.start();
    for (let cut = 0; cut < CUTS; cut++) {
      const port = broker.port;
      let stop = false;
      const load = (async () => {
        for (let i = 0; !stop && i < 1000; i++) {
          const name = `pc-${cut}-${i}`;
          state.set(name, 'unknown');
          const made = await call(port, 'PUT', `/api/namespaces/${name}`, { Queues: [{ Name: 'inbox' }] });
          if (made.status !== 201) continue;
          const c = clientOf(port, made.body.connectionString as string);
          const sent = await c.createSender('inbox').sendMessages({ messageId: name, body: name }).then(() => true, () => false);
          await c.close().catch(() => undefined);
          if (stop || !sent) continue;
          state.set(name, 'created');
          figures.created++;
          // Every other namespace is deleted again at once.
          if (i % 2 === 1) {
            state.set(name, 'unknown');
            if ((await call(port, 'DELETE', `/api/namespaces/${name}`)).status === 200 && !stop) {
              state.set(name, 'deleted');
              figures.deleted++;
            }
          }
        }
      })();
      const rnd = crypto.createHash('sha256').update(`${SEED}/${cut}`).digest();
      await sleep(1500 + (rnd.readUInt16BE(0) % 2000));
      const mode = CUT_MODES[cut % CUT_MODES.length]!;
      await rig.cut(mode, rnd.readUInt32BE(2));
      stop = true;
      figures.cuts++;
      // What is in flight at the cut fails only at the SDK's or the request's timeout; the broker is gone and confirms
      // nothing, and nothing is recorded once `stop` is set, so the round goes on after a short grace.
      await bounded(load, 500);
      await rig.unmount();
      broker = await rig.restart();
      figures.restartMs.push(Math.round(broker.startMs));

      const listed = await call(broker.port, 'GET', '/api/namespaces');
      expect(listed.status).toBe(200);
      const present = new Set<string>((listed.body as { name: string }[]).map((n) => n.name));
      for (const [name, s] of state) {
        if (s === 'created' && !present.has(name)) {
          figures.lost++;
          console.error(`namespace ${name} was created (201) and is gone after cut ${cut} (${mode})`);
        }
        if (s === 'deleted' && present.has(name)) {
          figures.resurrected++;
          console.error(`namespace ${name} was deleted (200) and is back after cut ${cut} (${mode})`);
        }
      }
      // Each acknowledged namespace still holds its message; then all of them are deleted (no cut now) to stay small.
      for (const ns of listed.body as { name: string; connectionString: string }[]) {
        if (!state.has(ns.name)) continue;
        if (state.get(ns.name) === 'created') {
          const c = clientOf(broker.port, ns.connectionString);
          const got = await c.createReceiver('inbox').peekMessages(10).catch(() => []);
          await c.close().catch(() => undefined);
          if (!got.some((m) => m.messageId === ns.name)) {
            figures.messagesLost++;
            console.error(`namespace ${ns.name} lost its accepted message after cut ${cut} (${mode})`);
          }
        }
        expect((await call(broker.port, 'DELETE', `/api/namespaces/${ns.name}`)).status).toBe(200);
        state.set(ns.name, 'deleted');
      }
      for (const [name, s] of state) if (s === 'unknown') {
        state.delete(name);
        figures.inFlight++;
      }
    }
    broker.proc.kill('SIGTERM');
    expect(await exited(broker.proc)).toBe(0);
    emit(figures);
    expect({ lost: figures.lost, resurrected: figures.resurrected, messagesLost: figures.messagesLost }).toEqual({ lost: 0, resurrected: 0, messagesLost: 0 });
  }, size(120_000, 3_600_000));
});
