// Resubmit, delete and dead-letter of chosen messages (Broker.resubmitMessages / deleteBySequence /
// deadLetterBySequence) on a memory store and a fake clock: a failed store write changes nothing (the
// original stays, no copy appears), what succeeds survives a restart, locked messages are skipped, and a
// resubmitted copy is enqueued anew without its dead-letter reason.

import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/broker/types.js';
import { Harness, codeOf, flush } from './helpers.js';

const DLQ = 'q/$DeadLetterQueue';
const reparse = (body: Uint8Array): IncomingMessage => ({ body, messageId: 'overwritten' });
const ids = (h: Harness, path: string) => h.stored(path).map((r) => r.messageId);

async function withDeadLetters(...names: string[]): Promise<Harness> {
  const h = await Harness.start();
  const { consumer, handle } = h.attach('q', names.length);
  await h.send('q', ...names);
  for (let i = 0; i < names.length; i++) await h.broker.settle(consumer.token(i), { kind: 'deadLetter', reason: 'Poison' });
  handle.detach();
  await flush();
  return h;
}

describe('message actions', () => {
  it('resubmit moves a dead letter back in one write; after a restart the copy is there and the original gone', async () => {
    const h = await withDeadLetters('a');
    const [seq] = h.stored(DLQ).map((r) => r.seq);
    await h.advance(5_000);
    expect(await h.broker.resubmitMessages(DLQ, [seq!], { reparse })).toEqual({ count: 1, skipped: 0 });
    await h.restart();
    expect(ids(h, DLQ)).toEqual([]);
    const [copy] = h.stored('q');
    expect(copy).toMatchObject({ messageId: 'a', deliveryCount: 0, state: 'active', enqueuedAt: h.clock.now() });
    expect(copy!.props?.DeadLetterReason).toBeUndefined();
    const { consumer } = h.attach('q', 1);
    await flush();
    expect(consumer.ids()).toEqual(['a']);
  });

  it('a failed write during resubmit or delete loses nothing and copies nothing', async () => {
    const h = await withDeadLetters('a', 'b');
    const seqs = h.stored(DLQ).map((r) => r.seq);
    h.store.failWrites = new Error('disk unplugged');
    expect(await codeOf(h.broker.resubmitMessages(DLQ, seqs, { reparse }))).toBe('StoreUnavailable');
    expect(await codeOf(h.broker.deleteBySequence(DLQ, seqs))).toBe('StoreUnavailable');
    h.store.failWrites = null;
    expect(ids(h, DLQ)).toEqual(['a', 'b']);
    expect(ids(h, 'q')).toEqual([]);
    expect(h.broker.listEntities().find((e) => e.path === 'q')).toMatchObject({ active: 0, deadLettered: 2 });
    // Still there in memory too: a later resubmit moves both.
    expect(await h.broker.resubmitMessages(DLQ, seqs, { reparse })).toEqual({ count: 2, skipped: 0 });
    expect(ids(h, 'q')).toEqual(['a', 'b']);
  });

  it('keeps the original when asked, and skips locked or missing messages', async () => {
    const h = await withDeadLetters('a');
    const [seq] = h.stored(DLQ).map((r) => r.seq);
    expect(await h.broker.resubmitMessages(DLQ, [seq!, 9_999], { reparse, keepOriginal: true })).toEqual({ count: 1, skipped: 1 });
    expect(ids(h, DLQ)).toEqual(['a']);
    expect(ids(h, 'q')).toEqual(['a']);
    const { consumer } = h.attach('q', 1); // locks the copy
    await flush();
    const locked = consumer.last().row.seq;
    expect(await h.broker.deleteBySequence('q', [locked])).toEqual({ count: 0, skipped: 1 });
    expect(await h.broker.deadLetterBySequence('q', [locked], 'Manual')).toEqual({ count: 0, skipped: 1 });
    expect(ids(h, 'q')).toEqual(['a']);
  });

  it('dead-letters a scheduled message with the reason, and refuses a dead-letter queue', async () => {
    const h = await Harness.start();
    await h.broker.send('q', [{ body: new Uint8Array([1]), messageId: 'later', scheduledAt: h.clock.now() + 60_000 }]);
    const [seq] = h.stored('q').map((r) => r.seq);
    expect(await h.broker.deadLetterBySequence('q', [seq!], 'Manual', 'by hand')).toEqual({ count: 1, skipped: 0 });
    expect(h.stored(DLQ)[0]).toMatchObject({ messageId: 'later', state: 'active', props: { DeadLetterReason: 'Manual', DeadLetterErrorDescription: 'by hand' } });
    await h.advance(120_000); // its schedule falls due with nothing left to enqueue
    expect(ids(h, 'q')).toEqual([]);
    expect(await codeOf(h.broker.deadLetterBySequence(DLQ, [seq!]))).toBe('InvalidOperation');
  });
});
