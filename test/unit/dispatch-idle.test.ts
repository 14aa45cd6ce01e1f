// Offering messages asks the receivers of the entity, in turn, whether they have room; with nothing to offer
// there is nothing to ask. Attaching N receivers without credit to one idle queue (each attach pumps it) used to
// ask every receiver already there, N²/2 asks in all: with 10,000 AMQP receivers, each ask a credit, Listen-right
// and session check, the many-connections test could not open them all in its time
// (test/fault/many-connections.test.ts).

import { describe, expect, it } from 'vitest';
import { FakeConsumer, Harness, flush } from './helpers.js';

/** A consumer that counts how often it is asked for room. */
class CountingConsumer extends FakeConsumer {
  static asked = 0;
  override capacity(): number {
    CountingConsumer.asked++;
    return super.capacity();
  }
}

describe('pumping an idle queue', () => {
  it('asks receivers without credit for room no more than once per attach, and still hands out what arrives', async () => {
    const h = await Harness.start();
    const n = 2_000;
    const consumers: CountingConsumer[] = [];
    CountingConsumer.asked = 0;
    for (let i = 0; i < n; i++) {
      const c = new CountingConsumer(0);
      consumers.push(c);
      h.broker.attach('q', c).pump();
    }
    const asked = CountingConsumer.asked;
    consumers[n - 1]!.credit = 2;
    await h.send('q', 'm1', 'm2');
    await flush();
    // Linear at most, not quadratic (it was n(n+1)/2 = 2,001,000 here).
    expect(asked).toBeLessThanOrEqual(n);
    expect(consumers.flatMap((c) => c.ids()).sort()).toEqual(['m1', 'm2']);
  });
});
