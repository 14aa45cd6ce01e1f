// Early delivery (docs/durability.md, "Early delivery"): a peek-lock transfer goes out while its lock commits, and
// whatever the client does with the lock token is processed only after that commit. These tests assert the order
// of events on a memory store (which commits on setImmediate, so "before the commit" is "before the next turn"),
// never timing: the transfer precedes the lock's durability; a settle, renewal or transaction commit that arrives
// in between issues its own write only after the lock's write has settled; if the lock commit fails, that settle
// fails with LockLost and memory and store agree.

import { describe, expect, it } from 'vitest';
import type { StoreOp } from '../../src/store/store.js';
import { Harness, codeOf, flush, msg } from './helpers.js';

/** Records every store write: what it held, and when it was issued and settled relative to the others. */
function recordWrites(h: Harness): string[] {
  const events: string[] = [];
  const write = h.store.write.bind(h.store);
  const name = (ops: StoreOp[]): string => ops.map((o) => (o.op === 'put' ? `put:${o.row.state}` : o.op)).join('+');
  h.store.write = (ops) => {
    const n = name(ops);
    events.push(`issue ${n}`);
    return write(ops).then(
      () => void events.push(`durable ${n}`),
      (err: unknown) => {
        events.push(`failed ${n}`);
        throw err;
      },
    );
  };
  return events;
}

/** A harness with one message `a` stored and ready in `q`, nothing attached. */
async function ready(): Promise<Harness> {
  const h = await Harness.start();
  await h.send('q', 'a');
  return h;
}

describe('early delivery: the transfer goes out while its lock commits', () => {
  it('hands the message over in the turn it is locked, before the lock is durable', async () => {
    const h = await ready();
    const events = recordWrites(h);
    const { consumer } = h.attach('q', 1);
    // Same turn: delivered with its lock and counted attempt, while the store still holds it unlocked.
    expect(consumer.ids()).toEqual(['a']);
    expect(consumer.last().row.deliveryCount).toBe(1);
    expect(h.stored('q').map((r) => [r.state, r.deliveryCount])).toEqual([['active', 0]]);
    await flush();
    expect(events).toEqual(['issue put:locked', 'durable put:locked']);
    expect(h.stored('q').map((r) => [r.state, r.deliveryCount])).toEqual([['locked', 1]]);
  });

  it('a complete that arrives before the lock is durable is written only after the lock commit', async () => {
    const h = await ready();
    const events = recordWrites(h);
    const { consumer } = h.attach('q', 1);
    const done = h.broker.settle(consumer.token(), { kind: 'complete' });
    await done;
    expect(events).toEqual(['issue put:locked', 'durable put:locked', 'issue delete', 'durable delete']);
    expect(h.stored('q')).toHaveLength(0);
    expect(h.broker.browse('q')).toHaveLength(0);
  });

  it('if the lock commit fails, the early complete fails with LockLost, writes nothing, and memory and store agree', async () => {
    const h = await ready();
    const events = recordWrites(h);
    h.store.failWrites = new Error('EIO');
    const { consumer } = h.attach('q', 1);
    expect(consumer.ids()).toEqual(['a']);
    const settled = codeOf(h.broker.settle(consumer.token(), { kind: 'complete' }));
    // The store recovers (after the lock's write, issued at the end of this turn, has failed) before the settle
    // is looked at: the settle's write must still not be issued.
    await flush(2);
    h.store.failWrites = null;
    expect(await settled).toBe('LockLost');
    expect(events).toEqual(['issue put:locked', 'failed put:locked']);
    // Available again with the count the store holds: the attempt whose lock never landed is not counted.
    const shown = h.broker.browse('q').map(({ row }) => [row.messageId, row.state, row.deliveryCount, row.lock]);
    expect(shown).toEqual([['a', 'active', 0, undefined]]);
    expect(h.stored('q').map((r) => [r.messageId, r.state, r.deliveryCount])).toEqual([['a', 'active', 0]]);
    await h.restart();
    expect(h.broker.browse('q').map(({ row }) => [row.messageId, row.state, row.deliveryCount, row.lock])).toEqual(shown);
  });

  it('an abandon, dead-letter or defer that arrives before the lock is durable is processed after it', async () => {
    for (const s of [{ kind: 'abandon' }, { kind: 'deadLetter' }, { kind: 'defer' }] as const) {
      const h = await ready();
      const events = recordWrites(h);
      const { consumer } = h.attach('q', 1);
      await h.broker.settle(consumer.token(), s);
      expect(events.slice(0, 3), s.kind).toEqual(['issue put:locked', 'durable put:locked', expect.stringMatching(/^issue /)]);
    }
  });

  it('a renewal that arrives before the lock is durable is written after it, and fails with LockLost if it failed', async () => {
    const h = await ready();
    const events = recordWrites(h);
    const { consumer } = h.attach('q', 1);
    await h.broker.renewLock(consumer.token());
    expect(events).toEqual(['issue put:locked', 'durable put:locked', 'issue put:locked', 'durable put:locked']);

    const h2 = await ready();
    h2.store.failWrites = new Error('EIO');
    const c2 = h2.attach('q', 1).consumer;
    const renewed = codeOf(h2.broker.renewLock(c2.token()));
    await flush(2);
    h2.store.failWrites = null;
    expect(await renewed).toBe('LockLost');
    expect(h2.stored('q').map((r) => [r.state, r.deliveryCount])).toEqual([['active', 0]]);
  });

  it('a transaction commit naming a lock still committing waits for it, then commits in one write', async () => {
    const h = await ready();
    const txns = h.broker.transactions;
    const id = txns.declare({ connection: 'c1', link: 'ctl' });
    const events = recordWrites(h);
    const { consumer } = h.attach('q', 1);
    txns.stage(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('out')] });
    txns.stage(id, 'c1', { kind: 'settle', token: consumer.token(), settlement: { kind: 'complete' } });
    await txns.discharge(id, 'c1', false);
    // The send and the complete in one write, issued once the lock is durable.
    expect(events).toHaveLength(4);
    expect(events.slice(0, 2)).toEqual(['issue put:locked', 'durable put:locked']);
    expect(events[2]).toMatch(/^issue (?=.*put:active)(?=.*delete)/);
    expect(h.broker.browse('q').map(({ row }) => row.messageId)).toEqual(['out']);
  });

  it('a lock that ends while it commits ends after the commit: expired once, the store agrees', async () => {
    const h = await ready();
    const events = recordWrites(h);
    const { consumer } = h.attach('q', 1);
    h.broker.expireLock(consumer.token());
    await flush();
    expect(events.slice(0, 3)).toEqual(['issue put:locked', 'durable put:locked', 'issue put:active']);
    expect(h.stored('q').map((r) => [r.state, r.deliveryCount])).toEqual([['active', 1]]);
    expect(h.broker.browse('q').map(({ row }) => [row.state, row.deliveryCount])).toEqual([['active', 1]]);
  });
});
