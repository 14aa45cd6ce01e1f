// A deep queue keeps only its front in memory (src/broker/indexes/cold-tail.ts): these tests fill a queue past the window
// and check that delivery order, counts, sizes and the by-sequence operations are what they would be with every
// row in memory, live and across a restart.

import { describe, expect, it } from 'vitest';
import { WINDOW } from '../../src/broker/indexes/cold-tail.js';
import { attachFake, FakeConsumer, Harness, flush, msg } from './helpers.js';

const TOTAL = WINDOW * 2 + 2000;

async function fill(h: Harness, path: string, n: number, first = 1): Promise<void> {
  for (let i = first; i < first + n; i += 1000) {
    const ids = Array.from({ length: Math.min(1000, first + n - i) }, (_, k) => `m${i + k}`);
    await h.broker.send(path, ids.map((id) => msg(id)));
  }
  await flush();
}

function seqsOf(c: FakeConsumer): number[] {
  return c.deliveries.map((d) => d.row.seq);
}

describe('a deep queue keeps only its front in memory', () => {
  it('holds at most one window of available rows while counting every message and byte', async () => {
    const h = await Harness.start();
    await fill(h, 'q', TOTAL);
    const q = h.ctx.entities.resolve('q');
    expect(q.rows.size).toBeLessThanOrEqual(WINDOW);
    expect(q.counts().active).toBe(TOTAL);
    expect(q.size).toBe(TOTAL);
    const bytes = h.stored('q').reduce((n, r) => n + r.size, 0);
    expect(q.bytes).toBe(bytes);
  });

  it('delivers every message once, in sequence order, across the window edge while sends keep arriving', async () => {
    const h = await Harness.start();
    await fill(h, 'q', TOTAL);
    const c = new FakeConsumer(0, 'receiveAndDelete');
    attachFake(h.broker, 'q', c);
    for (let round = 0; round < 30; round++) {
      c.credit += 500;
      await fill(h, 'q', 100, TOTAL + 1 + round * 100);
    }
    c.credit += 10_000;
    await flush(10);
    const seqs = seqsOf(c);
    expect(seqs).toHaveLength(TOTAL + 3000);
    expect(seqs).toEqual(Array.from({ length: TOTAL + 3000 }, (_, i) => i + 1));
    const q = h.ctx.entities.resolve('q');
    expect(q.size).toBe(0);
    expect(q.bytes).toBe(0);
    expect(h.stored('q')).toHaveLength(0);
  });

  it('after a restart reads held rows and one window, and keeps sequence order past locked and scheduled rows far behind the front', async () => {
    const h = await Harness.start();
    const now = h.clock.now();
    await fill(h, 'q', TOTAL - 1);
    const sched = TOTAL;
    await h.broker.send('q', [msg(`m${sched}`, { scheduledAt: now + 60_000 })]);
    // Lock every message once; keep the last 2,999 locked (more than half a window: once their locks lapse they
    // outnumber the refill mark), defer one, abandon the rest (they stay available).
    const c = h.attach('q', TOTAL).consumer;
    await flush(10);
    expect(c.deliveries).toHaveLength(TOTAL - 1);
    const deferSeq = TOTAL - 3500;
    const lockedFrom = TOTAL - 2999;
    for (const d of c.deliveries) {
      const token = d.row.lock!.token;
      if (d.row.seq === deferSeq) await h.broker.settle(token, { kind: 'defer' });
      else if (d.row.seq < lockedFrom) await h.broker.settle(token, { kind: 'abandon' });
    }
    h.broker.attach('q', new FakeConsumer(0)).detach();
    c.open = false;
    await flush();

    await h.restart();
    const q = h.ctx.entities.resolve('q');
    // Held: the deferred, the locked and the scheduled messages; available: one window.
    expect(q.rows.size).toBeLessThanOrEqual(WINDOW + 3001);
    expect(q.counts()).toEqual({ active: TOTAL - 3001, locked: 2999, deferred: 1, scheduled: 1 });
    expect(q.size).toBe(TOTAL);

    await h.advance(61_000); // the lock lapses and the scheduled message falls due
    const r = h.attach('q', TOTAL, 'receiveAndDelete').consumer;
    await flush(10);
    const seqs = seqsOf(r);
    expect(seqs).toHaveLength(TOTAL - 1);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(seqs).toContain(lockedFrom);
    expect(seqs).toContain(sched);
    expect(seqs).not.toContain(deferSeq);
    expect(q.counts()).toEqual({ active: 0, locked: 0, deferred: 1, scheduled: 0 });
  });

  it('peeks, browses and deletes by sequence number behind the window without losing count', async () => {
    const h = await Harness.start();
    await fill(h, 'q', TOTAL);
    const q = h.ctx.entities.resolve('q');
    const deep = TOTAL - 10;
    expect(q.rows.has(deep)).toBe(false);
    const peeked = h.broker.peek('q', deep, 5);
    expect(peeked.map((m) => m.row.seq)).toEqual([deep, deep + 1, deep + 2, deep + 3, deep + 4]);
    expect(new TextDecoder().decode(peeked[0]!.body)).toBe(`m${deep}`);
    expect(q.rows.has(deep)).toBe(false); // a peek loads nothing

    const res = await h.broker.deleteBySequence('q', [deep, deep + 1]);
    expect(res.count).toBe(2);
    await flush();
    expect(q.size).toBe(TOTAL - 2);
    expect(h.broker.peek('q', deep, 1)[0]!.row.seq).toBe(deep + 2);

    expect(await h.broker.deleteMessages('q', { count: 3, before: h.clock.now() + 1 })).toBe(3);
    expect(q.size).toBe(TOTAL - 5);
    expect(await h.broker.purge('q')).toBe(TOTAL - 5);
    await flush();
    expect(q.size).toBe(0);
    expect(q.bytes).toBe(0);
    expect(h.stored('q')).toHaveLength(0);
  });
});
