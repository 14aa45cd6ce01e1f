// A topic send that lands in two or more subscriptions stores its body once, shared by the copies and freed with
// the last of them; every copy still delivers the message's own bytes, whatever happens to the others.

import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/broker/types.js';
import { flush, Harness, msg } from './helpers.js';

const SUBS = Array.from({ length: 10 }, (_, i) => `s${i}`);
const text = (b: Uint8Array | undefined): string | undefined => b && new TextDecoder().decode(b);

async function topicWith(subs: string[]): Promise<Harness> {
  const h = await Harness.start();
  await h.broker.createTopic('news', {});
  for (const s of subs) await h.broker.createSubscription('news', s, {});
  return h;
}

describe('shared bodies of topic copies', () => {
  it('stores one body for a send to 10 subscriptions and frees it when the last copy is completed', async () => {
    const h = await topicWith(SUBS);
    await h.broker.send('news', [msg('hello'), msg('world')]);
    await flush();
    expect(h.store.sharedBodies()).toBe(2);
    const consumers = SUBS.map((s) => h.attach(`news/Subscriptions/${s}`, 1).consumer);
    await flush();
    for (const c of consumers) expect(c.deliveries.map((d) => text(d.body))).toEqual(['hello']);
    for (const [i, c] of consumers.entries()) {
      await h.broker.settle(c.token(), { kind: 'complete' });
      await flush();
      // The copies of "world" all still name the second body; "hello"'s goes with its tenth copy.
      expect(h.store.sharedBodies()).toBe(i < 9 ? 2 : 1);
    }
    for (const s of SUBS) expect(text(h.store.readBody(h.qid(`news/Subscriptions/${s}`), h.stored(`news/Subscriptions/${s}`)[0]!.seq))).toBe('world');
  });

  it('gives a copy its own body when the send lands in one subscription only', async () => {
    const h = await topicWith(['only']);
    await h.broker.send('news', [msg('solo')]);
    await flush();
    expect(h.store.sharedBodies()).toBe(0);
    const [row] = h.stored('news/Subscriptions/only');
    expect(row!.bodyRef).toBeUndefined();
    expect(text(h.store.readBody(h.qid('news/Subscriptions/only'), row!.seq))).toBe('solo');
  });

  it('keeps the body of a dead-lettered copy after the other copies are completed, and leaks nothing', async () => {
    const h = await topicWith(['a', 'b']);
    await h.broker.send('news', [msg('payload')]);
    await flush();
    const a = h.attach('news/Subscriptions/a', 1).consumer;
    const b = h.attach('news/Subscriptions/b', 1).consumer;
    await flush();
    await h.broker.settle(a.token(), { kind: 'deadLetter', reason: 'bad' });
    await h.broker.settle(b.token(), { kind: 'complete' });
    await flush();
    expect(h.store.sharedBodies()).toBe(0);
    const dlq = h.attach('news/Subscriptions/a/$DeadLetterQueue', 1).consumer;
    await flush();
    expect(text(dlq.last().body)).toBe('payload');
    await h.broker.settle(dlq.token(), { kind: 'complete' });
    await flush();
    expect(h.stored('news/Subscriptions/a/$DeadLetterQueue')).toEqual([]);
  });

  it('delivers shared bodies after a restart, and deleting the topic frees them', async () => {
    const h = await topicWith(['a', 'b', 'c']);
    await h.broker.send('news', [msg('kept')]);
    await flush();
    await h.restart();
    const c = h.attach('news/Subscriptions/c', 1).consumer;
    await flush();
    expect(text(c.last().body)).toBe('kept');
    expect(h.store.sharedBodies()).toBe(1);
    await h.broker.deleteTopic('news');
    await flush();
    expect(h.store.sharedBodies()).toBe(0);
  });

  it('dead-letter, redrive, resubmit and delete of shared copies keep every body readable and free each with its last copy', async () => {
    const h = await topicWith(['a', 'b']);
    const A = 'news/Subscriptions/a';
    const B = 'news/Subscriptions/b';
    await h.broker.send('news', [msg('x')]);
    await flush();
    const bodies = (path: string): (string | undefined)[] => h.stored(path).map((r) => text(h.store.readBody(h.qid(path), r.seq)));
    // a's copy: dead-lettered (stored with its own body), then redriven back to a.
    await h.broker.deadLetterBySequence(A, [h.stored(A)[0]!.seq], 'Poison');
    expect(await h.broker.redrive(`${A}/$DeadLetterQueue`)).toMatchObject({ moved: 1 });
    expect(h.store.sharedBodies()).toBe(1); // still named by b's copy
    // b's copy resubmitted to the topic: a new send, shared by its two new copies; the original's body goes.
    const reparse = (body: Uint8Array): IncomingMessage => ({ body, messageId: 'x' });
    expect(await h.broker.resubmitMessages(B, [h.stored(B)[0]!.seq], { reparse, to: 'news' })).toMatchObject({ count: 1 });
    await flush();
    expect(h.store.sharedBodies()).toBe(1);
    expect(bodies(A)).toEqual(['x', 'x']);
    expect(bodies(B)).toEqual(['x']);
    for (const path of [A, B]) await h.broker.deleteBySequence(path, h.stored(path).map((r) => r.seq));
    expect(h.store.sharedBodies()).toBe(0);
  });
});
