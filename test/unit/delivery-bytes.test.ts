// The deliverer tells a consumer of each delivery it reserves, with the row's stored size, and the consumer's
// delivery ends the reservation, so the protocol layer can bound its outgoing bytes before a message is taken: a
// consumer that pushes 0 credit once its budget is reached is offered nothing more, and what it was not offered is
// left in the queue unlocked.

import { describe, expect, it } from 'vitest';
import type { Delivery, ReceiveMode } from '../../src/broker/types.js';
import { attachFake, FakeConsumer, Harness, flush } from './helpers.js';

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
  override figure(): number {
    return this.committing >= this.budget ? 0 : super.figure();
  }
  override reserved(delta: 1 | -1, bytes = 0): void {
    super.reserved(delta);
    this.committing += delta * bytes;
    this.peak = Math.max(this.peak, this.committing);
    // Out of budget: the figure falls to 0 at once, within the broker's pump.
    if (this.committing >= this.budget) this.push();
  }
  override deliver(d: Delivery): void {
    super.deliver(d);
    this.committing -= d.row.size;
    // Landed: the budget is free again, and the pushed figure offers more.
    this.push();
  }
}

describe('bytes of deliveries in flight', () => {
  for (const mode of ['peekLock', 'receiveAndDelete'] as const) {
    it(`are reported while committing and released once handed over (${mode})`, async () => {
      const h = await Harness.start();
      await h.send('q', 'aaaa', 'bbbb', 'cccc');
      const c = new BudgetConsumer(10, mode, Infinity);
      attachFake(h.broker, 'q', c);
      expect(c.committing).toBe(12);
      await flush();
      expect(c.ids()).toEqual(['aaaa', 'bbbb', 'cccc']);
      expect(c.committing).toBe(0);
    });
  }

  it('a consumer out of byte budget is offered nothing more, and what it was not offered stays unlocked', async () => {
    const h = await Harness.start();
    await h.send('q', 'aaaa', 'bbbb', 'cccc', 'dddd');
    // Room for one 4-byte body at a time, whatever the credit.
    const c = new BudgetConsumer(100, 'peekLock', 4);
    attachFake(h.broker, 'q', c);
    expect(c.committing).toBe(4);
    const q = h.broker.listEntities().find((e) => e.path === 'q')!;
    expect([q.locked, q.active]).toEqual([1, 3]);
    // One commit at a time: each landing frees the budget and the consumer's push offers the next.
    await flush(20);
    expect(c.ids()).toEqual(['aaaa', 'bbbb', 'cccc', 'dddd']);
    expect(c.peak).toBe(4);
  });
});
