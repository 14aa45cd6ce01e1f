// The operator's and the management plane's state changes under an injected commit failure (MemoryStore.failWrites,
// fake clock), as write-failures.test.ts does for the messaging transitions: afterwards what the broker shows equals
// what a fresh broker recovering from the same store shows, and the caller got StoreUnavailable (docs/durability.md,
// "Disk full and disk errors").

import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/broker/types.js';
import { codeOf, flush, msg } from './helpers.js';
import { DLQ, expectAgreement, failing, locked, rig } from './write-failures-rig.js';

const MIN = 60_000;
const reparse = (body: Uint8Array): IncomingMessage => ({ body, messageId: 'overwritten' });
const blue = { name: 'blue', filter: { type: 'sql' as const, expression: "color = 'blue'" }, action: null };

/** One message `a` dead-lettered from q; returns its sequence number in the dead-letter queue. */
async function deadLettered(h: Awaited<ReturnType<typeof rig>>): Promise<number> {
  const c = await locked(h);
  await h.broker.settle(c.token(), { kind: 'deadLetter', reason: 'bad', description: 'bad' });
  await flush();
  return h.broker.browse(DLQ)[0]!.row.seq;
}

describe('operator and management changes under a failed commit', () => {
  it('purge: StoreUnavailable, every message stays, the locked one under its lock', async () => {
    const h = await rig();
    const c = await locked(h);
    await h.send('q', 'b', 'c');
    expect(await failing(h, () => codeOf(h.broker.purge('q')))).toBe('StoreUnavailable');
    await h.broker.settle(c.token(), { kind: 'complete' });
    await expectAgreement(h);
    expect(h.broker.browse('q').map((m) => m.row.messageId)).toEqual(['b', 'c']);
  });

  it('batch delete: StoreUnavailable, the messages stay available', async () => {
    const h = await rig();
    await h.send('q', 'a', 'b');
    h.clock.advance(1);
    expect(await failing(h, () => codeOf(h.broker.deleteMessages('q', { count: 10 })))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('add rule: StoreUnavailable, the subscription keeps its rules', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.addRule('t/Subscriptions/all', blue)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('remove rule: StoreUnavailable, the rule stays', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.removeRule('t/Subscriptions/red', 'red')))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('update rule (management plane): StoreUnavailable, the old filter stays', async () => {
    const h = await rig();
    const rule = { name: 'red', filter: { type: 'false' as const }, action: null };
    expect(await failing(h, () => codeOf(h.broker.updateRule('t', 'red', rule)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('create queue: StoreUnavailable, no queue', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.createQueue('nq', {})))).toBe('StoreUnavailable');
    await expectAgreement(h);
    await h.broker.createQueue('nq', {});
  });

  it('update queue: StoreUnavailable, the old settings stay', async () => {
    const h = await rig();
    await h.broker.createQueue('nq', {});
    h.clock.advance(1000);
    const code = await failing(h, () => codeOf(h.broker.updateQueue('nq', { settings: { maxDeliveryCount: 7 } })));
    expect(code).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('delete queue: StoreUnavailable, the queue and its messages stay', async () => {
    const h = await rig();
    await h.broker.createQueue('nq', {});
    await h.send('nq', 'a');
    expect(await failing(h, () => codeOf(h.broker.deleteQueue('nq')))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('create topic: StoreUnavailable, no topic', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.createTopic('nt', {})))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('update topic: StoreUnavailable, the old settings stay', async () => {
    const h = await rig();
    await h.broker.createTopic('nt', {});
    h.clock.advance(1000);
    expect(await failing(h, () => codeOf(h.broker.updateTopic('nt', { maxSizeBytes: 2 * 1024 * 1024 * 1024 })))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('delete topic: StoreUnavailable, the topic, its subscriptions and their messages stay', async () => {
    const h = await rig();
    await h.broker.createTopic('nt', {});
    await h.broker.createSubscription('nt', 's', {});
    await h.send('nt', 'a');
    expect(await failing(h, () => codeOf(h.broker.deleteTopic('nt')))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('create subscription (with its own default rule): StoreUnavailable, no subscription', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.createSubscription('t', 'ns', {}, blue)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('update subscription: StoreUnavailable, the old settings stay', async () => {
    const h = await rig();
    await h.broker.createSubscription('t', 'ns', {});
    h.clock.advance(1000);
    const code = await failing(h, () => codeOf(h.broker.updateSubscription('t', 'ns', { settings: { maxDeliveryCount: 7 } })));
    expect(code).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('delete subscription: StoreUnavailable, the subscription and its messages stay', async () => {
    const h = await rig();
    await h.broker.createSubscription('t', 'ns', {});
    await h.send('t', 'a');
    expect(await failing(h, () => codeOf(h.broker.deleteSubscription('t', 'ns')))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('resubmit from the dead-letter queue: StoreUnavailable, the original stays dead-lettered, no copy', async () => {
    const h = await rig();
    const seq = await deadLettered(h);
    expect(await failing(h, () => codeOf(h.broker.resubmitMessages(DLQ, [seq], { reparse })))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('resubmit keeping the original: StoreUnavailable, no copy', async () => {
    const h = await rig();
    const seq = await deadLettered(h);
    const code = await failing(h, () => codeOf(h.broker.resubmitMessages(DLQ, [seq], { reparse, keepOriginal: true })));
    expect(code).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('delete by sequence number: StoreUnavailable, the messages stay', async () => {
    const h = await rig();
    const seqs = await h.send('q', 'a', 'b');
    expect(await failing(h, () => codeOf(h.broker.deleteBySequence('q', seqs)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('dead-letter by sequence number: StoreUnavailable, the messages stay in their queue', async () => {
    const h = await rig();
    const seqs = await h.send('q', 'a', 'b');
    expect(await failing(h, () => codeOf(h.broker.deadLetterBySequence('q', seqs, 'op', 'by hand')))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('redrive: the move is reported failed, the message stays dead-lettered', async () => {
    const h = await rig();
    await deadLettered(h);
    expect(await failing(h, () => h.broker.redrive(DLQ))).toEqual({ moved: 0, skipped: 0, failed: 1, dryRun: false });
    const c = h.attach(DLQ, 1).consumer; // before any restart: the message is available again, not only listed
    await flush();
    expect(c.ids()).toEqual(['a']);
    await expectAgreement(h);
  });

  it('AccessedAt: a sweep whose write failed writes it down at the next sweep', async () => {
    const h = await rig();
    await h.send('q', 'a');
    const used = h.broker.getQueue('q')!.accessedAt;
    expect(used).toBe(h.clock.now());
    await failing(h, () => h.broker.sweepIdle());
    await h.broker.sweepIdle();
    await expectAgreement(h);
    expect(h.broker.getQueue('q')!.accessedAt).toBe(used);
  });

  it('AutoDeleteOnIdle: a delete whose write failed leaves the queue, deleted at a later sweep', async () => {
    const h = await rig();
    await h.broker.createQueue('temp', { autoDeleteOnIdleMs: 5 * MIN });
    await failing(h, async () => {
      h.clock.advance(5 * MIN); // the sweep timer fires in this advance
      await h.broker.sweepIdle();
    });
    expect(h.broker.getQueue('temp')).toBeDefined();
    await expectAgreement(h);
    await h.advance(5 * MIN); // idle time counts from the restart
    await h.broker.sweepIdle();
    expect(h.broker.getQueue('temp')).toBeUndefined();
  });

  it('recovery clean-up (duplicate-detection windows that passed while down): a failed write changes nothing', async () => {
    const h = await rig();
    await h.broker.send('dq', [msg('a')]);
    h.clock.advance(600_001);
    h.store.failWrites = new Error('EIO');
    await h.restart();
    await flush();
    h.store.failWrites = null;
    await expectAgreement(h);
    const [seq] = await h.broker.send('dq', [msg('a')]);
    expect(seq).toBeGreaterThan(0);
  });
});
