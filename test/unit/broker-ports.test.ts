// The broker's ports (src/broker/ports.ts): what the transports may ask, answered from the registry without handing
// it out. The HTTP side reads topics, counts and deletions through them; the AMQP side checks attach targets and
// runs transactions through them. The type checks at the end fail to compile if the registry or the transactions'
// internals become reachable again.

import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import type { HttpPort } from '../../src/broker/ports.js';
import { codeOf, flush, Harness, settings } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h?.broker.stop();
});

async function withTopic(): Promise<Harness> {
  h = await Harness.start();
  await h.broker.createTopic('events', {});
  await h.broker.createSubscription('events', 'audit', {});
  await h.broker.createSubscription('events', 'billing', { settings: settings({ requiresSession: true }) });
  return h;
}

describe('broker ports', () => {
  it('lists each topic with the paths of its subscriptions', async () => {
    await withTopic();
    expect(h.broker.topicPaths()).toEqual([{ path: 'events', subscriptions: ['events/Subscriptions/audit', 'events/Subscriptions/billing'] }]);
  });

  it('counts messages by state for every entity, dead-letter queues as entities of their own', async () => {
    h = await Harness.start();
    await h.send('q', 'a', 'b');
    h.attach('q', 1);
    await flush();
    const counts = h.broker.messageCounts();
    expect(counts.find((c) => c.path === 'q')).toEqual({ path: 'q', active: 1, locked: 1, deferred: 0, scheduled: 0 });
    expect(counts.map((c) => c.path)).toContain('q/$DeadLetterQueue');
  });

  it('reports an entity deleted through the management plane as deleted on purpose', async () => {
    await withTopic();
    expect(h.broker.wasDeleted('q')).toBe(false);
    await h.broker.deleteQueue('q');
    expect(h.broker.wasDeleted('q')).toBe(true);
  });

  it('checks attach targets as the registry resolves them', async () => {
    await withTopic();
    expect(() => h.broker.checkSendTarget('events')).not.toThrow();
    expect(await codeOf(() => h.broker.checkSendTarget('events/Subscriptions/audit'))).toBe('InvalidOperation');
    expect(await codeOf(() => h.broker.checkSendTarget('missing'))).toBe('EntityNotFound');
    expect(h.broker.receiveSource('EVENTS/subscriptions/BILLING')).toEqual({ path: 'events/Subscriptions/billing', sessionful: true });
    expect(h.broker.receiveSource('q')).toEqual({ path: 'q', sessionful: false });
    expect(await codeOf(() => h.broker.receiveSource('events'))).toBe('InvalidOperation');
    expect(() => h.broker.checkEntity('events')).not.toThrow();
    expect(() => h.broker.checkEntity('q/$DeadLetterQueue')).not.toThrow();
    expect(await codeOf(() => h.broker.checkEntity('missing'))).toBe('EntityNotFound');
  });

  it('declares, counts and rolls back transactions through the messaging port', async () => {
    h = await Harness.start();
    const id = h.broker.declareTransaction({ connection: 'c1', link: 'l1' });
    expect(h.broker.openTransactions()).toBe(1);
    h.broker.rollbackTransactions('c1');
    expect(h.broker.openTransactions()).toBe(0);
    expect(await codeOf(() => h.broker.stageInTransaction(id, 'c1', { kind: 'send', path: 'q', msgs: [] }))).toBe('TransactionUnknown');
  });
});

// Compile-time: nothing below runs. Each line fails `npm run check` ("Unused '@ts-expect-error' directive") if
// what it reaches becomes public again.
/** Never called: its body only has to type-check. */
export function unreachable(b: Broker, port: HttpPort): void {
  // @ts-expect-error the registry of in-memory indexes is not part of the broker's public face
  void b.entities;
  // @ts-expect-error the transactions collaborator (its staged work) stays inside the broker: only the port is public
  void b.transactions.open;
  // @ts-expect-error the HTTP side cannot open a message stream or settle: it manages and observes only
  void port.attach;
  // @ts-expect-error the HTTP side cannot emit the broker's events, only follow them
  void port.events.emit;
}
