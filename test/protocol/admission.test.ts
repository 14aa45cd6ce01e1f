// Nothing gets in without its right, whatever order the frames come in (docs/wire-contract.md, "Attach errors";
// Service Bus AMQP guide: a link needs a token with the right for its entity, and "when a token expires, Service Bus
// promptly drops all links on the connection to the respective entity"). A client that writes its transfers in the
// same socket write as its attach, before it reads the broker's answer, must get them rejected and none stored:
// - refused for want of a token on an entity, or refused on the coordinator (which, as Service Bus, needs no token);
// - after its token expired by the broker clock;
// - beyond the credit the broker granted;
// and the credit and bytes the broker holds for a connection are bounded (credit comes back as sends are stored).

import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { signSas } from '../../src/auth/sas-token.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawSession, outcomeOf, waitFor } from '../helpers/raw-session.js';
import { described, t } from '../helpers/raw-txn.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = 'RootManageSharedAccessKey';
const KEY = 'SAS_KEY_VALUE';
const PLAIN = { user: ROOT, password: KEY };
const ANONYMOUS = { anonymous: true } as const;
/** The broker's credit window for a client sender (src/amqp/admission.ts). */
const CREDIT_WINDOW = 1000;

let broker: TestBroker | undefined;
const sessions: RawSession[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) s.conn.destroy();
  await broker?.dispose();
  broker = undefined;
});

async function session(): Promise<RawSession> {
  const s = new RawSession(broker!.port);
  sessions.push(s);
  await s.conn.ready();
  return s;
}

const stored = (queue = 'orders'): number => broker!.broker.peek(queue, 1, 10_000).length;

/** Logs in anonymously, attaches the `$cbs` links and puts `token`; resolves with the put-token reply's status. */
async function withToken(s: RawSession, token: string, audience: string): Promise<unknown> {
  const put = s.putToken(0, token, audience, 'cbs-reply');
  await s.conn.write(Buffer.concat([s.start(ANONYMOUS), s.attachReceiver(1, '$cbs', 'cbs-reply'), s.attachSender(0, '$cbs'), s.flow(1, 10), put.bytes]));
  const reply = await waitFor(() => s.replies('r1')[0]);
  return reply?.['status-code'];
}

describe('admission on every frame', () => {
  it('rejects, and never stores, five transfers pipelined behind the attach of a sender that has no token', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore() });
    const s = await session();
    const sends = s.sends(0, 5, 'smuggled');
    await s.conn.write(Buffer.concat([s.start(ANONYMOUS), s.attachSender(0, 'orders'), sends.bytes]));
    const detach = await waitFor(() => s.detached('s0'));
    expect(detach?.fields.error?.condition).toBe('amqp:unauthorized-access');
    await waitFor(() => s.disposition(sends.ids[4]!), 1_000);
    // A later, authorised receiver gets nothing.
    const reader = await session();
    await reader.conn.write(Buffer.concat([reader.start(PLAIN), reader.attachReceiver(0, 'orders', 'r'), reader.flow(0, 10)]));
    await waitFor(() => reader.conn.find('attach'));
    await new Promise((r) => setTimeout(r, 300));
    expect(reader.conn.seen.filter((f) => f.name.includes('transfer'))).toHaveLength(0);
    expect(stored()).toBe(0);
    for (const id of sends.ids) expect(outcomeOf(s.disposition(id))).toEqual({ outcome: 'rejected', condition: 'amqp:unauthorized-access' });
  });

  it('refuses, and stores none of, the transfers that follow the expiry of the token by the broker clock', async () => {
    const clock = new FakeClock(Date.now());
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), clock });
    const s = await session();
    const token = signSas(`sb://localhost/orders`, ROOT, KEY, 60, clock.now());
    expect(await withToken(s, token, 'sb://localhost/orders')).toBe(202);
    const first = s.sends(2, 1, 'in-time');
    await s.conn.write(Buffer.concat([s.attachSender(2, 'orders'), first.bytes]));
    expect(outcomeOf(await waitFor(() => s.disposition(first.ids[0]!)))).toEqual({ outcome: 'accepted' });
    clock.advance(61_000);
    const late = s.sends(2, 5, 'late');
    await s.conn.write(late.bytes);
    await waitFor(() => s.disposition(late.ids[4]!), 1_000);
    expect(stored()).toBe(1);
    expect(outcomeOf(s.disposition(late.ids[0]!))?.condition).toBe('amqp:unauthorized-access');
    expect(s.detached('s2')?.fields.error?.condition).toBe('amqp:unauthorized-access');
  });

  it('does not declare a transaction on a coordinator link refused for another reason (the link cap)', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), broker: { MaxLinksPerConnection: 1 } });
    const s = await session();
    const coordinator = described(0x30, [t.wrap_array(['amqp:local-transactions'], 0xa3)]);
    const declare = s.transfer(1, Buffer.concat([Buffer.from([0x00, 0x53, 0x77]), controlBytes(0x31)]));
    await s.conn.write(Buffer.concat([s.start(PLAIN), s.attachSender(0, 'orders'), s.attachSender(1, coordinator), declare.bytes]));
    expect((await waitFor(() => s.detached('s1')))?.fields.error?.condition).toBe('amqp:resource-limit-exceeded');
    const answer = await waitFor(() => s.disposition(declare.id), 1_000);
    expect(outcomeOf(answer)).toEqual({ outcome: 'rejected', condition: 'amqp:resource-limit-exceeded' });
  });

  // The .NET SDK attaches its coordinator before any put-token (EnableCrossEntityTransactions opens it first), and
  // Service Bus accepts that: a declared transaction holds nothing until an admitted link stages work in it.
  it('lets a coordinator declare without a token, stages nothing from a link without Send, and still ends the connection at the authentication deadline', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), broker: { AuthTimeout: 'PT1S' } });
    const s = await session();
    const coordinator = described(0x30, [t.wrap_array(['amqp:local-transactions'], 0xa3)]);
    const declare = s.transfer(0, Buffer.concat([Buffer.from([0x00, 0x53, 0x77]), controlBytes(0x31)]));
    await s.conn.write(Buffer.concat([s.start(ANONYMOUS), s.attachSender(0, coordinator), declare.bytes]));
    expect(outcomeOf(await waitFor(() => s.disposition(declare.id), 2_000))?.outcome).toBe('declared');
    const sends = s.sends(2, 3, 'unauthorised');
    await s.conn.write(Buffer.concat([s.attachSender(2, 'orders'), sends.bytes]));
    expect((await waitFor(() => s.detached('s2')))?.fields.error?.condition).toBe('amqp:unauthorized-access');
    expect(stored()).toBe(0);
    expect(await waitFor(() => s.conn.closed || s.closed(), 3_000)).toBeTruthy();
    expect(stored()).toBe(0);
  });

  it('closes a connection whose only token expired before the authentication deadline', async () => {
    const clock = new FakeClock(Date.now());
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), clock, broker: { AuthTimeout: 'PT1S' } });
    const s = await session();
    expect(await withToken(s, signSas('sb://localhost/orders', ROOT, KEY, 60, clock.now()), 'sb://localhost/orders')).toBe(202);
    clock.advance(61_000);
    expect(await waitFor(() => s.conn.closed || s.closed(), 3_000)).toBeTruthy();
  });

  it('answers a client without a token unauthorized-access, not not-found, for an entity that does not exist', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore() });
    const s = await session();
    await s.conn.write(Buffer.concat([s.start(ANONYMOUS), s.attachSender(0, 'no-such-queue'), s.attachReceiver(1, 'no-such-queue', 'r')]));
    expect((await waitFor(() => s.detached('s0')))?.fields.error?.condition).toBe('amqp:unauthorized-access');
    expect((await waitFor(() => s.detached('r1')))?.fields.error?.condition).toBe('amqp:unauthorized-access');
  });

  it('rejects, and never stores, transfers pipelined on a link refused for another reason (the link cap)', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), broker: { MaxLinksPerConnection: 1 } });
    const s = await session();
    const sends = s.sends(1, 3, 'over-cap');
    await s.conn.write(Buffer.concat([s.start(PLAIN), s.attachSender(0, 'orders'), s.attachSender(1, 'orders'), sends.bytes]));
    expect((await waitFor(() => s.detached('s1')))?.fields.error?.condition).toBe('amqp:resource-limit-exceeded');
    await waitFor(() => s.disposition(sends.ids[2]!), 1_000);
    expect(stored()).toBe(0);
    expect(outcomeOf(s.disposition(sends.ids[0]!))).toEqual({ outcome: 'rejected', condition: 'amqp:resource-limit-exceeded' });
  });

  it('rejects, and never stores, transfers beyond the credit it granted', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), broker: { Faults: true } });
    // Held sends: no credit can come back while the transfers arrive.
    broker.faults!.addSendFault({ count: CREDIT_WINDOW + 10, delayMs: 1_500 });
    const s = await session();
    const sends = s.sends(0, CREDIT_WINDOW + 5, 'm');
    await s.conn.write(Buffer.concat([s.start(PLAIN), s.attachSender(0, 'orders'), sends.bytes]));
    const last = await waitFor(() => s.disposition(sends.ids.at(-1)!), 5_000);
    expect(outcomeOf(last)).toEqual({ outcome: 'rejected', condition: 'amqp:link:transfer-limit-exceeded' });
    await waitFor(() => sends.ids.every((id) => s.disposition(id)), 5_000);
    expect(stored()).toBe(CREDIT_WINDOW);
    expect(s.detached('s0')?.fields.error?.condition).toBe('amqp:link:transfer-limit-exceeded');
  });

  it('grants credit as sends are stored, not as they arrive', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), broker: { Faults: true } });
    broker.faults!.addSendFault({ count: 1_000, delayMs: 1_000 });
    const s = await session();
    const sends = s.sends(0, 400, 'm');
    await s.conn.write(Buffer.concat([s.start(PLAIN), s.attachSender(0, 'orders'), sends.bytes]));
    await new Promise((r) => setTimeout(r, 400));
    // Before any send is stored, the credit the broker granted never reaches past the first window.
    expect(s.disposition(sends.ids[0]!)).toBeUndefined();
    const flows = s.flows('s0');
    const reach = Math.max(...flows.map((f) => Number(f.fields.delivery_count) + Number(f.fields.link_credit)));
    expect(reach).toBe(CREDIT_WINDOW);
    await waitFor(() => s.disposition(sends.ids[399]!), 5_000);
    expect(stored()).toBe(400);
  });

  it('bounds the bytes waiting to be stored per connection (Broker.MaxPendingSendBytes): the rest is told server-busy', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore(), broker: { Faults: true, MaxPendingSendBytes: 1_048_576 } });
    broker.faults!.addSendFault({ count: 100, delayMs: 1_000 });
    const s = await session();
    const body = Buffer.alloc(100_000, 1);
    const sends = s.sends(0, 20, 'big', body);
    // The frame guard takes at most one frame's worth of bytes before the SASL outcome: log in, then pipeline.
    await s.conn.write(Buffer.concat([s.start(PLAIN), s.attachSender(0, 'orders')]));
    await waitFor(() => s.brokerHandle('s0') !== undefined);
    await s.conn.write(sends.bytes);
    await waitFor(() => sends.ids.every((id) => s.disposition(id)), 5_000);
    const outcomes = sends.ids.map((id) => outcomeOf(s.disposition(id)));
    const accepted = outcomes.filter((o) => o?.outcome === 'accepted').length;
    expect(accepted).toBe(10);
    expect(outcomes.slice(10)).toEqual(Array(10).fill({ outcome: 'rejected', condition: 'com.microsoft:server-busy' }));
    expect(stored()).toBe(10);
  });

  it('forgets $management and $cbs reply links when they close', async () => {
    broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore() });
    const s = await session();
    await s.conn.write(s.start(PLAIN));
    for (let i = 0; i < 50; i++) {
      const handle = 1 + (i % 2);
      const source = i % 2 ? '$cbs' : 'orders/$management';
      await s.conn.write(s.attachReceiver(handle, source, `reply-${i}`, `reply-${i}`));
      await waitFor(() => s.conn.seen.filter((f) => f.name.includes('attach')).length > i);
      await s.conn.write(s.detach(handle));
      await waitFor(() => s.conn.seen.filter((f) => f.name.includes('detach')).length > i);
    }
    const records = broker.amqpRecords();
    expect(records.connections).toBe(1);
    expect(records.replyLinks + records.cbsLinks).toBe(0);
  });
});

/** An empty declare (or discharge) body: a described list with the ulong descriptor `code`. */
function controlBytes(code: number): Buffer {
  const w = new (t as Any).Writer();
  w.write(described(code, []));
  return w.toBuffer() as Buffer;
}

