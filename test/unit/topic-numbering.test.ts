// A topic keeps no rows of its own, so the only record of how far its sequence numbers went is its mark. Every
// path that takes a topic number — a send to the topic, and a send to a queue that forwards to it — writes the
// mark in the same store write, so a restart never hands a topic number out twice; and a queue that forwards to
// a topic reports the topic's number, as the send to the topic itself would.

import { describe, expect, it } from 'vitest';
import { Harness, msg } from './helpers.js';

const MINUTE = 60_000;

describe('topic sequence numbers', () => {
  it('reports the topic number for a send through a queue that forwards to the topic', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('events', {});
    await h.broker.createQueue('inbox', { settings: { forwardTo: 'events' } });
    // Numbers the topic took before the subscription existed: the topic's numbering runs ahead of the subscription's.
    await h.broker.send('events', [msg('unseen-1'), msg('unseen-2')]);
    await h.broker.createSubscription('events', 's1', {});
    const [direct] = await h.broker.send('events', [msg('direct', { scheduledAt: h.clock.now() + MINUTE })]);
    expect(direct).toBe(3);
    const [forwarded] = await h.broker.send('inbox', [msg('forwarded', { scheduledAt: h.clock.now() + MINUTE })]);
    expect(forwarded).toBe(direct! + 1);
    // The topic number cancels the forwarded copy, as it would one sent to the topic.
    await h.broker.cancelScheduled('events', [forwarded!]);
    expect(h.broker.browse('events/Subscriptions/s1').map((m) => m.row.messageId)).toEqual(['direct']);
  });

  it('never reuses a topic number after a restart, when the numbers were taken through a forwarding queue', async () => {
    const h = await Harness.start();
    await h.broker.createTopic('events', {});
    await h.broker.createSubscription('events', 's1', {});
    await h.broker.createQueue('inbox', { settings: { forwardTo: 'events' } });
    const taken = [...(await h.broker.send('inbox', [msg('a')])), ...(await h.broker.send('inbox', [msg('b')]))];
    await h.restart();
    const [after] = await h.broker.send('events', [msg('c')]);
    expect(after).toBeGreaterThan(Math.max(...taken));
  });
});
