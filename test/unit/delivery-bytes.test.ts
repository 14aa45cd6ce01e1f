// The deliverer tells a consumer the stored size of each delivery it reserves and again when that delivery has
// landed, so the protocol layer can bound its outgoing bytes before a message is taken: a message it refuses is
// left in the queue unlocked.

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
  for (const mode of ['peekLock', 'receiveAndDelete'] as const) {
    it(`are reported while committing and released once handed over (${mode})`, async () => {
      const h = await Harness.start();
      await h.send('q', 'aaaa', 'bbbb', 'cccc');
      const c = new BudgetConsumer(10, mode, Infinity);
      h.broker.attach('q', c).pump();
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
    const handle = h.broker.attach('q', c);
    handle.pump();
    expect(c.committing).toBe(4);
    const q = h.broker.listEntities().find((e) => e.path === 'q')!;
    expect([q.locked, q.active]).toEqual([1, 3]);
    // One commit at a time: each landing frees the budget and the deliverer pumps again.
    await flush(20);
    expect(c.ids()).toEqual(['aaaa', 'bbbb', 'cccc', 'dddd']);
    expect(c.peak).toBe(4);
  });
});
