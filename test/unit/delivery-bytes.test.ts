// The deliverer tells a consumer the stored size of each receive-and-delete delivery it reserves while its delete
// commits, and again when that delivery has landed, so the protocol layer can bound its outgoing bytes before a
// message is taken: a message it refuses is left in the queue unlocked. A peek-lock transfer goes out while its
// lock commits (docs/durability.md, "Early delivery"), so nothing of it is held as committing.

import { describe, expect, it } from 'vitest';
import type { ReceiveMode } from '../../src/broker/types.js';
import { FakeConsumer, Harness, flush } from './helpers.js';

/** A consumer with a byte budget for deliveries still being committed, recording what it was told. */
class BudgetConsumer extends FakeConsumer {
  committing = 0;
  peak = 0;
  constructor(
    credit: number,
    mode: ReceiveMode,
    private readonly budget: number,
  ) {
    super(credit, mode);
  }
  override capacity(): number {
    return this.committing >= this.budget ? 0 : super.capacity();
  }
  inFlight(bytes: number): void {
    this.committing += bytes;
    this.peak = Math.max(this.peak, this.committing);
  }
}

describe('bytes of deliveries in flight', () => {
  it('are reported while committing and released once handed over (receiveAndDelete)', async () => {
    const h = await Harness.start();
    await h.send('q', 'aaaa', 'bbbb', 'cccc');
    const c = new BudgetConsumer(10, 'receiveAndDelete', Infinity);
    h.broker.attach('q', c).pump();
    expect(c.committing).toBe(12);
    expect(c.deliveries).toHaveLength(0);
    await flush();
    expect(c.ids()).toEqual(['aaaa', 'bbbb', 'cccc']);
    expect(c.committing).toBe(0);
  });

  it('peek-lock deliveries are handed over in the turn they are locked: nothing held as committing', async () => {
    const h = await Harness.start();
    await h.send('q', 'aaaa', 'bbbb', 'cccc');
    const c = new BudgetConsumer(10, 'peekLock', Infinity);
    h.broker.attach('q', c).pump();
    expect(c.ids()).toEqual(['aaaa', 'bbbb', 'cccc']);
    expect(c.peak).toBe(0);
  });

  it('a consumer out of byte budget is offered nothing more, and what it was not offered stays unlocked', async () => {
    const h = await Harness.start();
    await h.send('q', 'aaaa', 'bbbb', 'cccc', 'dddd');
    // Room for one 4-byte body at a time, whatever the credit.
    const c = new BudgetConsumer(100, 'receiveAndDelete', 4);
    const handle = h.broker.attach('q', c);
    handle.pump();
    expect(c.committing).toBe(4);
    const q = h.broker.listEntities().find((e) => e.path === 'q')!;
    expect([c.deliveries.length, q.active]).toEqual([0, 3]);
    // One commit at a time: each landing frees the budget and the deliverer pumps again.
    await flush(20);
    expect(c.ids()).toEqual(['aaaa', 'bbbb', 'cccc', 'dddd']);
    expect(c.peak).toBe(4);
  });
});
