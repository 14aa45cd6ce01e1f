// Every transition of a stored message under an injected commit failure (MemoryStore.failWrites, fake clock):
// afterwards the broker's memory and its store agree — what the broker shows (browse, counts) equals what a
// fresh broker recovering from the same store shows — and the client got the documented error
// (StoreUnavailable; docs/durability.md, "Disk full and disk errors").

import { describe, expect, it } from 'vitest';
import { attachFake, FakeConsumer, LOCK_MS, codeOf, flush, msg } from './helpers.js';
import { DLQ, RED, expectAgreement, failing, locked, rig } from './write-failures-rig.js';

describe('every transition under a failed commit', () => {
  it('send: StoreUnavailable, nothing visible', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.send('q', [msg('a')])))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('send of a batch: StoreUnavailable, none of it visible', async () => {
    const h = await rig();
    const batch = [msg('a'), msg('b'), msg('c')];
    expect(await failing(h, () => codeOf(h.broker.send('q', batch)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('send with duplicate detection: StoreUnavailable, and a retry of the same message-id is accepted', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.send('dq', [msg('a')])))).toBe('StoreUnavailable');
    await expectAgreement(h);
    const [seq] = await h.broker.send('dq', [msg('a')]);
    expect(seq).toBeGreaterThan(0);
  });

  it('send to a topic (fan-out to its subscriptions): StoreUnavailable, no copy visible', async () => {
    const h = await rig();
    const m = msg('a', { ...RED });
    expect(await failing(h, () => codeOf(h.broker.send('t', [m])))).toBe('StoreUnavailable');
    await expectAgreement(h);
    await h.broker.send('t', [m]);
    const copies = ['all', 'red'].map((sub) => h.broker.browse(`t/Subscriptions/${sub}`).length);
    expect(copies).toEqual([1, 1]);
  });

  it('schedule: StoreUnavailable, nothing scheduled', async () => {
    const h = await rig();
    const at = h.clock.now() + 60_000;
    expect(await failing(h, () => codeOf(h.broker.send('q', [msg('a', { scheduledAt: at })])))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('schedule to a topic: StoreUnavailable, nothing scheduled in any subscription', async () => {
    const h = await rig();
    const m = msg('a', { scheduledAt: h.clock.now() + 60_000, ...RED });
    expect(await failing(h, () => codeOf(h.broker.send('t', [m])))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('take lock: nothing delivered, the message stays available with its count', async () => {
    const h = await rig();
    await h.send('q', 'a');
    const c = await failing(h, async () => {
      const { consumer } = h.attach('q', 1);
      await flush();
      return consumer;
    });
    expect(c.deliveries).toHaveLength(0);
    await expectAgreement(h);
  });

  it('lock given back (the receiver left before its transfer went out): memory and store agree', async () => {
    const h = await rig();
    const c = h.attach('q', 10).consumer;
    await h.broker.send('q', [msg('a')]); // its lock write is issued in this turn
    c.open = false;
    await new Promise<void>((res) => setImmediate(res)); // the lock committed; the uncounted release issued
    await failing(h, () => flush());
    expect(c.deliveries).toHaveLength(0);
    await expectAgreement(h);
  });

  it('receive-and-delete put-back (the receiver left before its transfer went out): memory and store agree', async () => {
    const h = await rig();
    const r = h.attach('q', 10, 'receiveAndDelete').consumer;
    await h.broker.send('q', [msg('a')]); // the delete for r is issued in this turn
    r.open = false;
    await new Promise<void>((res) => setImmediate(res)); // delete committed; put-back issued
    await failing(h, () => flush());
    expect(r.deliveries).toHaveLength(0);
    await expectAgreement(h);
  });

  it('renew: StoreUnavailable, the lock keeps its stored locked-until', async () => {
    const h = await rig();
    const c = await locked(h);
    h.clock.advance(1000);
    expect(await failing(h, () => codeOf(h.broker.renewLock(c.token())))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('complete: StoreUnavailable, the message stays locked', async () => {
    const h = await rig();
    const c = await locked(h);
    expect(await failing(h, () => codeOf(h.broker.settle(c.token(), { kind: 'complete' })))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('abandon: StoreUnavailable, the message stays locked by its holder, who may retry', async () => {
    const h = await rig();
    const c = await locked(h);
    expect(await failing(h, () => codeOf(h.broker.settle(c.token(), { kind: 'abandon' })))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('abandon: a retry by the holder works once the store is back', async () => {
    const h = await rig();
    const c = await locked(h);
    expect(await failing(h, () => codeOf(h.broker.settle(c.token(), { kind: 'abandon' })))).toBe('StoreUnavailable');
    await h.broker.settle(c.token(), { kind: 'abandon' });
    expect(h.stored('q')).toMatchObject([{ messageId: 'a', state: 'active' }]);
  });

  it('defer: StoreUnavailable, the message stays locked and not deferred', async () => {
    const h = await rig();
    const c = await locked(h);
    expect(await failing(h, () => codeOf(h.broker.settle(c.token(), { kind: 'defer' })))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('dead-letter: StoreUnavailable, the message stays in its queue under its lock', async () => {
    const h = await rig();
    const c = await locked(h);
    const s = { kind: 'deadLetter' as const, reason: 'bad', description: 'bad' };
    expect(await failing(h, () => codeOf(h.broker.settle(c.token(), s)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('dead-letter: a retry by the holder works once the store is back', async () => {
    const h = await rig();
    const c = await locked(h);
    const s = { kind: 'deadLetter' as const, reason: 'bad', description: 'bad' };
    expect(await failing(h, () => codeOf(h.broker.settle(c.token(), s)))).toBe('StoreUnavailable');
    await h.broker.settle(c.token(), s);
    expect(h.stored(DLQ)).toMatchObject([{ messageId: 'a', deliveryCount: 0 }]);
    expect(h.broker.browse(DLQ).map((m) => m.row.messageId)).toEqual(['a']);
  });

  it('forward a dead-letter (ForwardDeadLetteredMessagesTo): StoreUnavailable, nothing forwarded', async () => {
    const h = await rig();
    const c = await locked(h, 'fq');
    const s = { kind: 'deadLetter' as const, reason: 'bad', description: 'bad' };
    expect(await failing(h, () => codeOf(h.broker.settle(c.token(), s)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('lock expiry: the message is neither available in memory nor lost', async () => {
    const h = await rig();
    await locked(h);
    await failing(h, () => h.advance(LOCK_MS));
    await expectAgreement(h);
  });

  it('lock expiry at MaxDeliveryCount: not dead-lettered in memory alone', async () => {
    const h = await rig();
    await h.send('q', 'a');
    for (let i = 0; i < 2; i++) {
      h.attach('q', 1);
      await flush();
      await h.advance(LOCK_MS);
    }
    h.attach('q', 1);
    await flush();
    await failing(h, () => h.advance(LOCK_MS));
    await expectAgreement(h);
  });

  it('lock expiry: a failed release is retried once the store is back, and the message is redelivered', async () => {
    const h = await rig();
    await locked(h);
    await failing(h, () => h.advance(LOCK_MS));
    const again = h.attach('q', 1).consumer;
    await flush();
    expect(again.deliveries).toHaveLength(0);
    await h.advance(1_000);
    expect(again.ids()).toEqual(['a']);
    expect(again.last().row.deliveryCount).toBe(2);
  });

  it('TTL expiry: the message is not removed from memory alone', async () => {
    const h = await rig();
    await h.broker.send('q', [msg('a', { ttlMs: 1000 })]);
    await failing(h, () => h.advance(1000));
    await expectAgreement(h);
  });

  it('TTL expiry into the dead-letter queue: not moved in memory alone', async () => {
    const h = await rig();
    await h.broker.send('ttlq', [msg('a', { ttlMs: 1000 })]);
    await failing(h, () => h.advance(1000));
    await expectAgreement(h);
  });

  it('a scheduled message falling due: memory and store agree', async () => {
    const h = await rig();
    await h.broker.send('q', [msg('a', { scheduledAt: h.clock.now() + 1000 })]);
    await failing(h, () => h.advance(1000));
    await expectAgreement(h);
  });

  it('cancel scheduled: StoreUnavailable, the message stays scheduled', async () => {
    const h = await rig();
    const [seq] = await h.broker.send('q', [msg('a', { scheduledAt: h.clock.now() + 60_000 })]);
    expect(await failing(h, () => codeOf(h.broker.cancelScheduled('q', [seq!])))).toBe('StoreUnavailable');
    await expectAgreement(h);
    h.clock.advance(60_000);
    const c = h.attach('q', 1).consumer;
    await flush();
    expect(c.ids()).toEqual(['a']);
  });

  it('cancel scheduled on a topic: StoreUnavailable, every subscription keeps its copy scheduled', async () => {
    const h = await rig();
    const [seq] = await h.broker.send('t', [msg('a', { scheduledAt: h.clock.now() + 60_000, ...RED })]);
    expect(await failing(h, () => codeOf(h.broker.cancelScheduled('t', [seq!])))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('receive deferred (peek-lock): StoreUnavailable, the message stays deferred with its count', async () => {
    const h = await rig();
    const c = await locked(h);
    const seq = c.last().row.seq;
    await h.broker.settle(c.token(), { kind: 'defer' });
    expect(await failing(h, () => codeOf(h.broker.receiveDeferred('q', [seq], 'peekLock')))).toBe('StoreUnavailable');
    await expectAgreement(h);
    const [again] = await h.broker.receiveDeferred('q', [seq], 'peekLock');
    expect(again!.row.deliveryCount).toBe(2);
  });

  it('receive deferred (receive-and-delete): StoreUnavailable, the message stays deferred', async () => {
    const h = await rig();
    const c = await locked(h);
    const seq = c.last().row.seq;
    await h.broker.settle(c.token(), { kind: 'defer' });
    expect(await failing(h, () => codeOf(h.broker.receiveDeferred('q', [seq], 'receiveAndDelete')))).toBe('StoreUnavailable');
    await expectAgreement(h);
    expect((await h.broker.receiveDeferred('q', [seq], 'receiveAndDelete')).map((m) => m.row.messageId)).toEqual(['a']);
  });

  it('session state: StoreUnavailable, the old state stays', async () => {
    const h = await rig();
    await h.broker.send('sq', [msg('a', { sessionId: 'A' })]);
    await h.broker.acceptSession('sq', 'A', 1_000, new FakeConsumer(0));
    await h.broker.setSessionState('sq', 'A', new TextEncoder().encode('old'));
    const code = await failing(h, () => codeOf(h.broker.setSessionState('sq', 'A', new TextEncoder().encode('new'))));
    expect(code).toBe('StoreUnavailable');
    const memory = new TextDecoder().decode(h.broker.getSessionState('sq', 'A') ?? new Uint8Array());
    await expectAgreement(h);
    expect(new TextDecoder().decode(h.broker.getSessionState('sq', 'A') ?? new Uint8Array())).toBe(memory);
  });

  it('session lock with its first message lock: nothing delivered, the message stays available', async () => {
    const h = await rig();
    await h.broker.send('sq', [msg('a', { sessionId: 'A' })]);
    const c = new FakeConsumer(1);
    await failing(h, async () => {
      await h.broker.acceptSession('sq', 'A', 1_000, c);
      attachFake(h.broker, 'sq', c);
      await flush();
    });
    expect(c.deliveries).toHaveLength(0);
    await expectAgreement(h);
  });

  it('session lock: once the store is back, the first delivery under it writes the session lock with it', async () => {
    const h = await rig();
    await h.broker.send('sq', [msg('a', { sessionId: 'A' })]);
    const c = new FakeConsumer(1);
    await failing(h, async () => {
      await h.broker.acceptSession('sq', 'A', 1_000, c);
      attachFake(h.broker, 'sq', c);
      await flush();
    });
    c.push(); // the next flow from the link offers again
    await flush();
    expect(c.ids()).toEqual(['a']);
    // A message delivered under a session lock is never on disk without that lock (docs/durability.md).
    expect(h.store.loadSessions(h.qid('sq')).get('A')?.lockedUntil).toBeGreaterThan(h.clock.now());
  });

  it('session lock renewal: StoreUnavailable, the session and its message keep their stored locked-until', async () => {
    const h = await rig();
    await h.broker.send('sq', [msg('a', { sessionId: 'A' })]);
    const c = new FakeConsumer(1);
    await h.broker.acceptSession('sq', 'A', 1_000, c);
    attachFake(h.broker, 'sq', c);
    await flush();
    expect(c.ids()).toEqual(['a']);
    h.clock.advance(1000);
    expect(await failing(h, () => codeOf(h.broker.renewSessionLock('sq', 'A')))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('transaction commit: StoreUnavailable, nothing of it applied', async () => {
    const h = await rig();
    const c = await locked(h);
    const b = h.broker;
    const owner = { connection: 'c1', link: 'ctl' };
    const id = b.declareTransaction(owner);
    b.stageInTransaction(id, 'c1', { kind: 'send', path: 'q', msgs: [msg('out')] });
    b.stageInTransaction(id, 'c1', { kind: 'settle', token: c.token(), settlement: { kind: 'complete' } });
    expect(await failing(h, () => codeOf(b.dischargeTransaction(id, 'c1', false)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('transaction commit with a cancel-scheduled and a schedule: StoreUnavailable, nothing of it applied', async () => {
    const h = await rig();
    const [seq] = await h.broker.send('q', [msg('s', { scheduledAt: h.clock.now() + 60_000 })]);
    const b = h.broker;
    const id = b.declareTransaction({ connection: 'c1', link: 'ctl' });
    b.stageInTransaction(id, 'c1', { kind: 'cancelScheduled', path: 'q', seqs: [seq!] });
    b.stageInTransaction(id, 'c1', { kind: 'schedule', path: 'q', msgs: [msg('later', { scheduledAt: h.clock.now() + 90_000 })], seqs: [] });
    expect(await failing(h, () => codeOf(b.dischargeTransaction(id, 'c1', false)))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });

  it('send-via whose destination refuses the message (transfer dead-letter): StoreUnavailable, nothing moved', async () => {
    const h = await rig();
    expect(await failing(h, () => codeOf(h.broker.sendVia('q', 'missing', [msg('a')])))).toBe('StoreUnavailable');
    await expectAgreement(h);
  });
});
