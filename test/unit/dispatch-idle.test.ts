// Offering messages looks, in turn, for a receiver of the entity with credit; with nothing to offer there is nothing
// to look for. Attaching N receivers to one idle queue, each pushing its credit (which offers it what is ready), used
// to ask every receiver already there for its room, N²/2 asks in all: with 10,000 AMQP receivers, each ask a credit,
// Listen-right and session check, the many-connections test could not open them all in its time
// (test/fault/many-connections.test.ts). Credit is now the broker's own figure, pushed by each link: the receivers
// are asked nothing, and a pump of an idle queue looks at none of them.

import { describe, expect, it, vi } from 'vitest';
import { Deliverer } from '../../src/broker/messaging/deliverer.js';
import { attachFake, FakeConsumer, Harness, flush } from './helpers.js';

/** A consumer that counts how often the broker asks whether it is still open. */
class CountingConsumer extends FakeConsumer {
  static asked = 0;
  override isOpen(): boolean {
    CountingConsumer.asked++;
    return super.isOpen();
  }
}

describe('pumping an idle queue', () => {
  it('looks at no receiver while nothing is ready, asks none of them anything, and still hands out what arrives', async () => {
    const h = await Harness.start();
    const n = 2_000;
    const consumers: CountingConsumer[] = [];
    CountingConsumer.asked = 0;
    const room = vi.spyOn(Deliverer.prototype, 'room');
    try {
      for (let i = 0; i < n; i++) {
        const c = new CountingConsumer(0);
        consumers.push(c);
        attachFake(h.broker, 'q', c);
      }
      // Then each gets credit, the newest first: each push pumps the idle queue, and a pump that looked for a
      // receiver with credit would pass every one still without (n²/2 looks in all; it found none to ask before).
      for (let i = n - 1; i >= 0; i--) consumers[i]!.credit = 1;
      expect(room.mock.calls.length).toBeLessThanOrEqual(n);
      expect(CountingConsumer.asked).toBe(0);
      await h.send('q', 'm1', 'm2');
      await flush();
      expect(consumers.flatMap((c) => c.ids()).sort()).toEqual(['m1', 'm2']);
    } finally {
      room.mockRestore();
    }
  });
});
