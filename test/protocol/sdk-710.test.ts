// What @azure/service-bus 7.10 (7.10.0-beta.2) adds, through the real beta SDK: batch delete
// (deleteMessages / purgeMessages over com.microsoft:batch-delete-messages), session browsing
// (get-message-sessions, which the SDK's management client sends) and peeking with the body left out.

import { afterEach, describe, expect, it } from 'vitest';
import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus-beta';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

let broker: TestBroker | undefined;
let client: ServiceBusClient | undefined;

afterEach(async () => {
  await client?.close();
  await broker?.dispose();
  client = undefined;
  broker = undefined;
});

const QUEUES = [
  { Name: 'q', Properties: { LockDuration: 'PT1M', MaxDeliveryCount: 5 } },
  { Name: 'sq', Properties: { RequiresSession: true, LockDuration: 'PT1M' } },
];

async function start(clock?: FakeClock): Promise<ServiceBusClient> {
  broker = await startTestBroker(QUEUES, { clock, store: new MemoryStore() });
  client = new ServiceBusClient(broker.connectionString, { retryOptions: { maxRetries: 0, timeoutInMs: 10_000 } });
  return client;
}

const bodies = (ms: ServiceBusReceivedMessage[]): unknown[] => ms.map((m) => m.body);

/** Sends `n` small messages named `${prefix}${i}`, in batches the SDK accepts. */
async function sendMany(c: ServiceBusClient, queue: string, prefix: string, n: number): Promise<void> {
  const sender = c.createSender(queue);
  for (let i = 0; i < n; i += 250) {
    const count = Math.min(250, n - i);
    await sender.sendMessages(Array.from({ length: count }, (_, k) => ({ body: `${prefix}${i + k}` })));
  }
}

describe('deleteMessages (batch delete)', () => {
  it('deletes only the messages enqueued before the cut-off, oldest first, and returns the count', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start(clock);
    const sender = c.createSender('q');
    await sender.sendMessages([{ body: 'old1' }, { body: 'old2' }, { body: 'old3' }]);
    const cutoff = new Date(clock.now() + 5_000);
    clock.advance(10_000);
    await sender.sendMessages([{ body: 'new1' }, { body: 'new2' }]);
    const receiver = c.createReceiver('q');

    expect(await receiver.deleteMessages({ maxMessageCount: 2, beforeEnqueueTime: cutoff })).toBe(2);
    const remaining = await receiver.peekMessages(10);
    expect(bodies(remaining)).toEqual(['old3', 'new1', 'new2']);
    expect(await receiver.deleteMessages({ maxMessageCount: 10, beforeEnqueueTime: cutoff })).toBe(1);
    // Nothing left before the cut-off: a count of 0, not an error.
    expect(await receiver.deleteMessages({ maxMessageCount: 10, beforeEnqueueTime: cutoff })).toBe(0);
    // (Peeks on one connection continue where the last one stopped, so start again from old3's number.)
    const left = await receiver.peekMessages(10, { fromSequenceNumber: remaining[0]!.sequenceNumber! });
    expect(bodies(left)).toEqual(['new1', 'new2']);
  });

  it('deletes at most 500 per call and refuses a larger count with Azure\'s ArgumentOutOfRange error', async () => {
    const c = await start();
    await sendMany(c, 'q', 'm', 620);
    const receiver = c.createReceiver('q');
    const err = await receiver.deleteMessages({ maxMessageCount: 501 }).then(
      () => null,
      (e: { code?: string; message?: string; retryable?: boolean }) => e,
    );
    expect(err?.code).toBe('GeneralError');
    expect(err?.retryable).toBe(false);
    expect(err?.message).toContain('ArgumentOutOfRangeError: Invalid Message Count : requested 501. Message count should be between 1 and 500.');
    // The refused call changed nothing.
    expect(await receiver.deleteMessages({ maxMessageCount: 500 })).toBe(500);
    expect(await receiver.deleteMessages({ maxMessageCount: 500 })).toBe(120);
    expect(await c.createReceiver('q').peekMessages(5)).toHaveLength(0);
  });

  it('bad input below the SDK\'s own checks gets a clear, non-retryable error and deletes nothing', async () => {
    const c = await start();
    await c.createSender('q').sendMessages([{ body: 'a' }, { body: 'b' }]);
    const mgmt = managementClient(c, 'q') as {
      _deleteMessages(count: number, cutoff: unknown, sessionId: undefined, options: object): Promise<number>;
    };
    const failure = (p: Promise<unknown>): Promise<{ code?: string; message?: string; retryable?: boolean } | null> =>
      p.then(() => null, (e: { code?: string; message?: string; retryable?: boolean }) => e);
    const zero = await failure(mgmt._deleteMessages(0, new Date(), undefined, {}));
    expect(zero?.message).toContain('Invalid Message Count : requested 0. Message count should be between 1 and 500.');
    expect(zero?.retryable).toBe(false);
    const notADate = await failure(mgmt._deleteMessages(10, 'yesterday', undefined, {}));
    expect(notADate?.code).toBe('GeneralError');
    expect(notADate?.message).toContain("'enqueued-time-utc' must be a timestamp.");
    expect(notADate?.retryable).toBe(false);
    expect(bodies(await c.createReceiver('q').peekMessages(10))).toEqual(['a', 'b']);
  });

  it('leaves locked, deferred and scheduled messages where they are', async () => {
    const c = await start();
    const sender = c.createSender('q');
    await sender.sendMessages([{ body: 'locked' }, { body: 'deferred' }, { body: 'a1' }, { body: 'a2' }]);
    const [scheduledSeq] = await sender.scheduleMessages({ body: 'scheduled' }, new Date(Date.now() + 3_600_000));
    const receiver = c.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const got = await receiver.receiveMessages(2, { maxWaitTimeInMs: 2_000 });
    expect(bodies(got)).toEqual(['locked', 'deferred']);
    await receiver.deferMessage(got[1]!);

    expect(await receiver.deleteMessages({ maxMessageCount: 500, beforeEnqueueTime: new Date(Date.now() + 7_200_000) })).toBe(2);
    // The lock holder can still settle; the deferred message can still be fetched; the scheduled one is still due.
    await receiver.completeMessage(got[0]!);
    const [deferred] = await receiver.receiveDeferredMessages(got[1]!.sequenceNumber!);
    expect(deferred!.body).toBe('deferred');
    await receiver.completeMessage(deferred!);
    const left = await c.createReceiver('q').peekMessages(10);
    expect(left.map((m) => [m.body, m.state])).toEqual([['scheduled', 'scheduled']]);
    expect(left[0]!.sequenceNumber!.toNumber()).toBe(scheduledSeq!.toNumber());
  });

  it('works on the dead-letter subqueue without touching the queue', async () => {
    const c = await start();
    await c.createSender('q').sendMessages([{ body: 'd1' }, { body: 'd2' }, { body: 'd3' }, { body: 'live' }]);
    const receiver = c.createReceiver('q', { maxAutoLockRenewalDurationInMs: 0 });
    const got = await receiver.receiveMessages(3, { maxWaitTimeInMs: 2_000 });
    for (const m of got) await receiver.deadLetterMessage(m, { deadLetterReason: 'test', deadLetterErrorDescription: 'test' });
    const dlq = c.createReceiver('q', { subQueueType: 'deadLetter' });

    expect(await dlq.deleteMessages({ maxMessageCount: 2 })).toBe(2);
    expect(bodies(await dlq.peekMessages(10))).toEqual(['d3']);
    expect(bodies(await c.createReceiver('q').peekMessages(10))).toEqual(['live']);
  });

  it('a session receiver deletes only its own session\'s messages', async () => {
    const c = await start();
    await c.createSender('sq').sendMessages([
      { body: 'a1', sessionId: 'A' },
      { body: 'b1', sessionId: 'B' },
      { body: 'a2', sessionId: 'A' },
    ]);
    const a = await c.acceptSession('sq', 'A', { maxAutoLockRenewalDurationInMs: 0 });
    expect(await a.deleteMessages({ maxMessageCount: 10 })).toBe(2);
    await a.close();
    const b = await c.acceptSession('sq', 'B', { maxAutoLockRenewalDurationInMs: 0 });
    expect(bodies(await b.receiveMessages(5, { maxWaitTimeInMs: 1_000 }))).toEqual(['b1']);
  });
});

describe('purgeMessages', () => {
  it('empties a queue of 1,200 messages in calls of 500 and returns the total', async () => {
    const c = await start();
    await sendMany(c, 'q', 'p', 1_200);
    const receiver = c.createReceiver('q');
    expect(await receiver.purgeMessages()).toBe(1_200);
    expect(await receiver.peekMessages(5)).toHaveLength(0);
    // A new message after the purge is delivered normally.
    await c.createSender('q').sendMessages({ body: 'after' });
    expect(bodies(await c.createReceiver('q', { receiveMode: 'receiveAndDelete' }).receiveMessages(1, { maxWaitTimeInMs: 2_000 }))).toEqual(['after']);
  });

  it('with beforeEnqueueTime keeps what was enqueued at or after it', async () => {
    const clock = new FakeClock(Date.now() - 60_000);
    const c = await start(clock);
    await sendMany(c, 'q', 'old', 510);
    clock.advance(30_000);
    const cutoff = new Date(clock.now());
    await c.createSender('q').sendMessages([{ body: 'keep1' }, { body: 'keep2' }]);
    const receiver = c.createReceiver('q');
    expect(await receiver.purgeMessages({ beforeEnqueueTime: cutoff })).toBe(510);
    expect(bodies(await receiver.peekMessages(10))).toEqual(['keep1', 'keep2']);
  });
});

/** The management client the beta keeps per entity on its connection (session browsing has no public wrapper). */
function managementClient(c: ServiceBusClient, entity: string): unknown {
  const context = (c as unknown as { _connectionContext: { getManagementClient(p: string): unknown } })._connectionContext;
  return context.getManagementClient(entity);
}

/** The beta's session browsing, `listMessageSessions` of its management client. */
function listSessions(c: ServiceBusClient, entity: string, skip: number, top: number, lastUpdatedTime?: Date): Promise<string[]> {
  const mgmt = managementClient(c, entity) as {
    listMessageSessions(skip: number, top: number, lastUpdatedTime?: Date): Promise<string[]>;
  };
  return mgmt.listMessageSessions(skip, top, lastUpdatedTime);
}

describe('session browsing (get-message-sessions)', () => {
  it('lists sessions whose state was set after a time, pages with skip/top, and DateTime.MaxValue lists sessions with messages or state', async () => {
    const clock = new FakeClock(Date.now());
    const c = await start(clock);
    await c.createSender('sq').sendMessages([
      { body: 'a', sessionId: 'A' },
      { body: 'b', sessionId: 'B' },
      { body: 'c', sessionId: 'C' },
    ]);
    // Session C: its message is consumed but it keeps state, so it still exists without messages.
    const cr = await c.acceptSession('sq', 'C', { receiveMode: 'receiveAndDelete', maxAutoLockRenewalDurationInMs: 0 });
    expect(await cr.receiveMessages(1, { maxWaitTimeInMs: 1_000 })).toHaveLength(1);
    await cr.setSessionState('progress');
    await cr.close();

    // DateTime.MaxValue (as the Java client sends it): every session that has messages or state, whatever its age
    // (.NET SDK 7.21's GetMessageSessionsAsync documents exactly that for the no-filter call); pages by skip/top.
    const all = new Date(253_402_300_800_000);
    expect(await listSessions(c, 'sq', 0, 10, all)).toEqual(['A', 'B', 'C']);
    expect(await listSessions(c, 'sq', 0, 2, all)).toEqual(['A', 'B']);
    expect(await listSessions(c, 'sq', 2, 2, all)).toEqual(['C']);
    expect(await listSessions(c, 'sq', 3, 2, all)).toEqual([]);
    // Any other time (the beta's default: three days ago) lists the sessions whose STATE was set or updated since
    // then (.NET 7.21, JS listMessageSessions' sessionStateUpdatedAfter, Java 3.x getMessageSessions): messages
    // arriving, and a session lock taken or released, do not count.
    expect(await listSessions(c, 'sq', 0, 10)).toEqual(['C']);
    clock.advance(60_000);
    const later = new Date(clock.now());
    await c.createSender('sq').sendMessages({ body: 'b2', sessionId: 'B' });
    const ar = await c.acceptSession('sq', 'A', { maxAutoLockRenewalDurationInMs: 0 });
    await ar.renewSessionLock();
    expect(await listSessions(c, 'sq', 0, 10, later)).toEqual([]);
    await ar.setSessionState('a-state');
    expect(await listSessions(c, 'sq', 0, 10, later)).toEqual(['A']);
    await ar.close();
    expect(await listSessions(c, 'sq', 0, 10, later)).toEqual(['A']);
  });
});

describe('peekMessages with omitMessageBody', () => {
  it('returns every message without its body, properties and sequence numbers intact', async () => {
    const c = await start();
    await c.createSender('q').sendMessages([
      { body: 'x'.repeat(10_000), messageId: 'M1', applicationProperties: { kind: 'big' } },
      { body: { json: true }, messageId: 'M2', subject: 's2' },
    ]);
    const receiver = c.createReceiver('q');
    const peeked = await receiver.peekMessages(2, { omitMessageBody: true } as Parameters<typeof receiver.peekMessages>[1]);
    expect(peeked.map((m) => [m.messageId, m.body, Number(m.sequenceNumber)])).toEqual([
      ['M1', undefined, 1],
      ['M2', undefined, 2],
    ]);
    expect(peeked[0]!.applicationProperties).toEqual({ kind: 'big' });
    expect(peeked[1]!.subject).toBe('s2');
    // Without the option the bodies are there, and the stored messages are unchanged.
    const full = await receiver.peekMessages(2, { fromSequenceNumber: peeked[0]!.sequenceNumber! });
    expect(full.map((m) => m.body)).toEqual(['x'.repeat(10_000), { json: true }]);
  });
});
