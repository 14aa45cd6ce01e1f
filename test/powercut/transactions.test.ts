// Power loss during AMQP transactions (docs/durability.md, "Power loss" and "Transactions"). A Qpid Proton client
// runs transactions "send three outputs via `in` to `out`, complete input inK", 8 open at once, while the power is
// cut (runPowerCuts: timed, or just before a random mutating call, i.e. inside the commit of a discharge). After
// every cut, with the store opened directly: each input is still in `in` with none of its outputs, or gone with all
// three exactly once — never half — and every transaction whose discharge was accepted is applied.

import { describe, expect, it } from 'vitest';
import { connect, sendMany } from '../helpers/amqp-client.js';
import { cutfsUnavailable, powerCutRig } from '../helpers/cutfs.js';
import { emit, size } from '../helpers/fault.js';
import { runPowerCuts, type PowerCutWorkload } from '../helpers/powercut.js';
import { driveTransactions, hasProton, transactionOutcomes } from '../helpers/proton-txn.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const CUTS = size(2, 200);
const REFILL = 1000;
const SEED = Number(process.env.PEEKLOCK_SEED ?? Math.floor(Math.random() * 1e9));
const unavailable = cutfsUnavailable() ?? (hasProton ? null : 'no python3-qpid-proton');

const rig = powerCutRig([
  { Name: 'in', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 1000 } },
  { Name: 'out', Properties: {} },
]);

describe.skipIf(!!unavailable)(`power cut during transactions${unavailable ? ` [skipped: ${unavailable}]` : ''}`, () => {
  it('applies every transaction entirely or not at all, and keeps every accepted commit', async () => {
    const ids: string[] = [];
    const committed = new Set<string>();
    const f = { declared: 0, committed: 0, applied: 0, partial: 0, lostCommit: 0, duplicated: 0 };
    let remaining = 0;
    let named = 0;
    let events: { ev: string; id: string }[] = [];
    const workload: PowerCutWorkload = {
      ready: () => events.some((e) => e.ev === 'committed'),
      async load(broker) {
        // This round's events only: with the last round's, `ready` held at once and a cut could land in the refill.
        events = [];
        if (remaining < REFILL / 2) {
          // Inputs for the next rounds (no cut during this: the driver has not started).
          const conn: Any = await connect(broker.port);
          // Names never reused: a send that was not acknowledged may still be stored, and a second input of the same
          // name would look like a transaction applied in part.
          const more = Array.from({ length: REFILL }, () => `in${named++}`);
          const sent = await sendMany(conn, 'in', more, 200, Buffer.from('x'));
          conn.close();
          for (const id of more) if (sent.get(id) === 'ok') ids.push(id);
          remaining += REFILL;
        }
        const d = driveTransactions(broker.port);
        events = d.events;
        await d.done;
        f.declared += d.events.filter((e) => e.ev === 'declare').length;
      },
      offline(rowsOf) {
        const inRows = rowsOf('in');
        const inputs = new Set(inRows.map((r) => r.messageId));
        remaining = inputs.size;
        // Every commit the driver was told of before the cut (the broker is gone: none can come after).
        for (const e of events) if (e.ev === 'committed') committed.add(e.id);
        const out = transactionOutcomes(ids, inputs, rowsOf('out').map((r) => r.messageId), committed);
        f.applied = out.applied;
        f.partial += out.partial.length;
        f.lostCommit += out.lostCommit.length;
        f.duplicated += out.duplicated.length;
        // What the store holds of an input that is not all-or-nothing, so that a failure says which way it went: the
        // input's rows (a name stored twice, a row left locked) and how many of its outputs are there.
        const outIds = rowsOf('out').map((r) => r.messageId);
        const held = (id: string): string => {
          const rows = inRows.filter((r) => r.messageId === id).map((r) => `${r.state}${r.lock ? ` until ${new Date(r.lock.until).toISOString()}` : ''} count ${r.deliveryCount}`);
          const outs = [0, 1, 2].map((i) => outIds.filter((o) => o === `${id}-o${i}`).length);
          return `(in: ${rows.length ? rows.join('; ') : 'none'}; outputs ${outs.join('/')}; ${committed.has(id) ? 'committed' : 'not committed'})`;
        };
        return [
          ...out.partial.slice(0, 5).map((id) => `transaction of ${id} applied in part ${held(id)}`),
          ...out.lostCommit.slice(0, 5).map((id) => `transaction of ${id} committed (accepted) and not applied ${held(id)}`),
          ...out.duplicated.slice(0, 5).map((id) => `an output of ${id} stored twice`),
        ];
      },
      check: async () => [],
    };
    const { figures, problems, stopCode } = await runPowerCuts(rig, { cuts: CUTS, seed: SEED, workload });
    expect(stopCode).toBe(0);
    f.committed = committed.size;
    emit({ test: 'powercut-transactions', ...figures, ...f });
    expect(f.committed).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  }, size(120_000, 3_600_000));
});
