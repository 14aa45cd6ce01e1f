// An incoming message is read once (issue 37, item 5): one walk over its sections, the sections before the
// application properties decoded once, the application properties decoded once and only when a rule filter asks, the
// body never; the message-id insertion, the IncomingMessage's fields and the filter view all read that one view.
// Counted with the scan probe (sections.ts), in parseIncoming alone and through a real transfer to a topic.

import { afterEach, describe, expect, it } from 'vitest';
import rhea from '../../src/amqp/rhea.js';
import clientRhea from 'rhea';
import { patchRhea } from '../../src/amqp/rhea-patches.js';
import { parseIncoming } from '../../src/amqp/codec.js';
import { APPLICATION_PROPERTIES, probeScans, splitSections, type ScanCount } from '../../src/amqp/sections.js';
import type { FilterMessage } from '../../src/filters/message.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker } from '../helpers/broker.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const t = rhea.types as Any;

const message = (extra: Record<string, unknown> = {}): Buffer =>
  rhea.message.encode({
    durable: true,
    ttl: 60_000,
    group_id: 'session-1',
    subject: 'OrderPlaced',
    message_annotations: { 'x-opt-scheduled-enqueue-time': t.wrap_timestamp(1_800_000_000_000), 'x-opt-partition-key': 'pk' },
    application_properties: { region: 'eu', amount: t.wrap_long(1250), big: t.wrap_ulong(7) },
    body: rhea.message.data_section(Buffer.alloc(1024, 0x61)),
    ...extra,
  } as never) as Buffer;

/** The bytes of the body section (the last one: these messages have no footer). */
function bodyBytes(raw: Buffer): number {
  const body = splitSections(raw).at(-1)!;
  return body.end - body.start;
}

/** The bytes before the application properties (header, annotations, properties). */
function prefixBytes(raw: Buffer): number {
  return splitSections(raw).find((s) => s.code === APPLICATION_PROPERTIES)!.start;
}

let count: ScanCount;
const probe = (): ScanCount => {
  count = { walk: 0, decode: 0, bytes: 0 };
  probeScans(count);
  return count;
};
afterEach(() => probeScans(undefined));

describe('parseIncoming reads a message once', () => {
  patchRhea();

  it('walks it once and decodes the sections before the application properties once, the body never', () => {
    const raw = message({ message_id: 'm-1' });
    const bytes = prefixBytes(raw);
    const c = probe();
    const m = parseIncoming(raw);
    expect(c).toEqual({ walk: 1, decode: 1, bytes });
    expect(m).toMatchObject({ messageId: 'm-1', sessionId: 'session-1', ttlMs: 60_000, scheduledAt: 1_800_000_000_000 });
  });

  it('inserts a missing message-id from the view, without walking the bytes again', () => {
    const raw = message();
    const bytes = prefixBytes(raw);
    const c = probe();
    const m = parseIncoming(raw);
    expect(c).toEqual({ walk: 1, decode: 1, bytes });
    expect(m.messageId).toMatch(/^[0-9a-f]{32}$/);
    probeScans(undefined);
    expect((rhea.message.decode(Buffer.from(m.body)) as Any).message_id).toBe(m.messageId);
  });

  it('decodes the application properties once, when the filter view is first built, and never re-reads the rest', () => {
    const raw = message();
    const bytes = raw.length - bodyBytes(raw);
    const c = probe();
    const m = parseIncoming(raw);
    const first = m.view!() as FilterMessage;
    const again = m.view!() as FilterMessage;
    expect(c).toEqual({ walk: 1, decode: 2, bytes });
    expect(again).toEqual(first);
    expect(first.system).toMatchObject({ messageId: m.messageId, label: 'OrderPlaced', sessionId: 'session-1', partitionKey: 'pk', size: m.body.length });
    expect(first.properties.get('amount')).toEqual({ type: 'long', value: 1250n });
    expect(first.properties.get('big')).toEqual({ type: 'ulong', value: 7n });
  });
});

describe('a transfer to a topic', () => {
  it('is walked once and decoded twice by the broker (properties, then application properties for the rules), not by rhea', async () => {
    const broker = await startTestBroker([], {
      clock: new FakeClock(Date.now()),
      store: new MemoryStore(),
      topics: [
        {
          Name: 'orders',
          Subscriptions: [{ Name: 'eu', Rules: [{ Name: 'eu', Properties: { FilterType: 'Sql', SqlFilter: { SqlExpression: "region = 'eu'" } } }] }],
        },
      ],
    });
    const conn: Any = clientRhea.create_container({ id: 'scan-count' }).connect({
      host: '127.0.0.1',
      port: broker.port,
      reconnect: false,
      username: 'RootManageSharedAccessKey',
      password: 'SAS_KEY_VALUE',
    } as Any);
    try {
      await new Promise((r, j) => {
        conn.once('connection_open', r);
        conn.once('connection_error', j);
      });
      const sender = conn.open_sender({ target: { address: 'orders' } });
      await new Promise((r) => sender.once('sendable', r));
      const c = probe();
      sender.send({ message_id: 'x', application_properties: { region: 'eu' }, body: 'b'.repeat(1024) });
      await new Promise((r, j) => {
        sender.once('accepted', r);
        sender.once('rejected', () => j(new Error('rejected')));
      });
      // The prefix (no header, no annotations: the properties) and the application properties; not the body.
      expect(c).toMatchObject({ walk: 1, decode: 2 });
      expect(c.bytes).toBeLessThan(100);
      probeScans(undefined);
      const receiver = conn.open_receiver({ source: { address: 'orders/subscriptions/eu' } });
      const got = await new Promise<Any>((r) => receiver.once('message', (ctx: Any) => r(ctx.message)));
      expect(got).toMatchObject({ message_id: 'x', body: 'b'.repeat(1024) });
    } finally {
      conn.close();
      await broker.dispose();
    }
  });
});
