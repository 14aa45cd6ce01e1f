// Power loss while queues are created, updated and deleted at run time over ATOM, the Service Bus management plane
// (docs/durability.md, "Power loss"; src/broker/catalog/catalogue.ts: each change is one store write, answered after it).
// The SDK's administration client creates queues one after another, updates every third (MaxDeliveryCount) and
// deletes every other; the power is cut at a random point (runPowerCuts: timed, or inside a commit). After the
// restart every queue is as last acknowledged: a create or update answered is there with its settings, a delete
// answered is gone; one whose change was in flight is either as before or as after it, never anything else.

import { describe, expect, it } from 'vitest';
import { ServiceBusAdministrationClient } from '@azure/service-bus-beta';
import type { ChildBroker } from '../helpers/child-broker.js';
import { cutfsUnavailable, powerCutRig } from '../helpers/cutfs.js';
import { emit, size } from '../helpers/fault.js';
import { runPowerCuts, type PowerCutWorkload } from '../helpers/powercut.js';

const CUTS = size(2, 200);
const SEED = Number(process.env.PEEKLOCK_SEED ?? Math.floor(Math.random() * 1e9));
const unavailable = cutfsUnavailable();

const rig = powerCutRig([{ Name: 'configured' }]);

function admin(b: ChildBroker): ServiceBusAdministrationClient {
  const line = b.output().split('\n').find((l) => l.includes('"listening"'))!;
  const port = (JSON.parse(line) as { httpPort: number }).httpPort;
  const key = 'SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true';
  return new ServiceBusAdministrationClient(`Endpoint=sb://127.0.0.1:${port};${key}`, { retryOptions: { maxRetries: 0 } });
}

/** What a queue may be after a cut: absent (null) or with this MaxDeliveryCount; more than one while a change was in flight. */
type Allowed = (number | null)[];

describe.skipIf(!!unavailable)(`power cut while queues are created, updated and deleted over ATOM${unavailable ? ` [skipped: ${unavailable}]` : ''}`, () => {
  it('keeps every queue as last acknowledged', async () => {
    const allowed = new Map<string, Allowed>();
    const f = { created: 0, updated: 0, deleted: 0, lost: 0, resurrected: 0, wrongSettings: 0 };
    let changes = 0;
    const workload: PowerCutWorkload = {
      ready: () => changes >= 4,
      async load(broker, round) {
        changes = 0;
        const a = admin(broker);
        // Each step: the queue may be as before or as after while the request is in flight; as after once answered.
        const step = async (name: string, after: number | null, call: () => Promise<unknown>, kind: 'created' | 'updated' | 'deleted'): Promise<boolean> => {
          const before = allowed.get(name) ?? [null];
          allowed.set(name, [...before, after]);
          const ok = await call().then(() => true, () => false);
          if (ok && !round.stopped) {
            allowed.set(name, [after]);
            f[kind]++;
            changes++;
          }
          return ok;
        };
        for (let i = 0; !round.stopped && i < 10_000; i++) {
          const name = `e-${round.cut}-${i}`;
          if (!(await step(name, 1 + (i % 10), () => a.createQueue(name, { maxDeliveryCount: 1 + (i % 10), lockDuration: 'PT10S' }), 'created'))) continue;
          if (i % 3 === 0) {
            const q = await a.getQueue(name).catch(() => undefined);
            if (!q) continue;
            await step(name, 20 + (i % 10), () => a.updateQueue({ ...q, maxDeliveryCount: 20 + (i % 10) }), 'updated');
          }
          if (i % 2 === 1) await step(name, null, () => a.deleteQueue(name), 'deleted');
        }
      },
      async check(broker) {
        const out: string[] = [];
        const a = admin(broker);
        const found = new Map<string, number>();
        for await (const q of a.listQueues()) found.set(q.name, q.maxDeliveryCount);
        if (!found.has('configured')) out.push('the configured queue is gone');
        for (const [name, may] of allowed) {
          const is = found.get(name) ?? null;
          if (may.includes(is)) continue;
          const kind = is === null ? 'lost' : may.length === 1 && may[0] === null ? 'resurrected' : 'wrongSettings';
          f[kind]++;
          out.push(`${kind}: ${name} is ${is === null ? 'gone' : `there with MaxDeliveryCount ${is}`}; acknowledged: ${may.map((m) => m ?? 'gone').join(' or ')}`);
        }
        // Delete what is left (no cut now), so the next round starts small.
        for (const name of found.keys()) if (name !== 'configured') await a.deleteQueue(name);
        allowed.clear();
        return out;
      },
    };
    const { figures, problems, stopCode } = await runPowerCuts(rig, { cuts: CUTS, seed: SEED, workload, maxOps: 100 });
    expect(stopCode).toBe(0);
    emit({ test: 'powercut-entities', ...figures, ...f });
    expect(f.created).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  }, size(120_000, 3_600_000));
});
