// Wire-level checks with a raw rhea client: what the broker puts in attach replies, transfers, flows and
// dispositions, where the SDK would hide a mistake (docs/wire-contract.md, "Sender links" to "Settlement").

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { lockTokenToTag, tagToLockToken } from '../../src/amqp/lock-token.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let broker: TestBroker;
let clock: FakeClock;
let conn: Any;

function connect(port: number): Promise<Any> {
  const c = rhea.create_container({ id: 'raw-client' });
  return new Promise((resolve, reject) => {
    const connection = c.connect({ host: '127.0.0.1', port, reconnect: false, username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE' } as Any);
    connection.once('connection_open', () => resolve(connection));
    connection.once('connection_error', reject);
    connection.once('disconnected', (ctx: Any) => reject(ctx.error ?? new Error('disconnected')));
  });
}

function once<T = Any>(emitter: Any, event: string): Promise<T> {
  return new Promise((r) => emitter.once(event, (ctx: T) => r(ctx)));
}

/** The bytes of the next message the client decodes (rhea drops them after decoding). */
function nextMessageBytes(): Promise<Buffer> {
  return new Promise<Buffer>((resolve) => {
    const decode = rhea.message.decode;
    (rhea.message as Any).decode = (b: Buffer) => {
      (rhea.message as Any).decode = decode;
      resolve(b);
      return decode(b);
    };
  });
}

async function send(body: string, extra: Record<string, unknown> = {}): Promise<Any> {
  const sender = conn.open_sender({ target: { address: 'q' } });
  await once(sender, 'sendable');
  const d = sender.send({ body, ...extra });
  const ctx = await new Promise<Any>((r) => {
    sender.once('accepted', r);
    sender.once('rejected', r);
  });
  sender.close();
  return { sender, ctx, delivery: d };
}

beforeEach(async () => {
  clock = new FakeClock(Date.now());
  broker = await startTestBroker([{ Name: 'q', Properties: { LockDuration: 'PT30S' } }], {
    clock,
    store: new MemoryStore(),
  });
  conn = await connect(broker.port);
});

afterEach(async () => {
  conn.close();
  await broker.dispose();
});

describe('raw AMQP', () => {
  it('answers a sender attach with source, target and a positive max-message-size, and grants credit', async () => {
    const sender = conn.open_sender({ target: { address: 'q' }, source: { address: 'me' } });
    await once(sender, 'sendable');
    expect(sender.remote.attach.max_message_size).toBe(262144);
    expect(sender.remote.attach.target.address).toBe('q');
    expect(sender.remote.attach.source.address).toBe('me');
    expect(sender.credit).toBeGreaterThan(0);
  });

  it('announces com.microsoft:max-message-batch-size as a long: the message size, at most 1 MB (Premium’s batch limit)', async () => {
    // The .NET SDK (7.20.2+) sizes a ServiceBusMessageBatch by it, read with TryGetValue<long>.
    const batchLimit = async (port: number): Promise<{ type?: string; value: unknown }> => {
      const c = port === broker.port ? conn : await connect(port);
      const sender = c.open_sender({ target: { address: 'q' } });
      await once(sender, 'sendable');
      // attach field 13 is the properties map, kept typed by rhea as alternating keys and values.
      const items = (sender.remote.attach.value[13]?.value ?? []) as Any[];
      const i = items.findIndex((k: Any) => k.value === 'com.microsoft:max-message-batch-size');
      if (c !== conn) c.close();
      return i < 0 ? { value: undefined } : { type: items[i + 1].type.name, value: items[i + 1].value };
    };
    const standard = await batchLimit(broker.port);
    expect(standard.type).toMatch(/Long/);
    expect(Number(standard.value)).toBe(262144);
    const large = await startTestBroker([{ Name: 'q' }], { store: new MemoryStore(), broker: { MaxMessageSizeBytes: 4 * 1024 * 1024 } });
    try {
      expect(Number((await batchLimit(large.port)).value)).toBe(1024 * 1024);
    } finally {
      await large.dispose();
    }
  });

  it('refuses an unknown address with amqp:not-found and the MessagingEntityNotFound wording', async () => {
    const sender = conn.open_sender({ target: { address: 'missing' } });
    const ctx = await once<Any>(sender, 'sender_error');
    expect(ctx.sender.error.condition).toBe('amqp:not-found');
    expect(ctx.sender.error.description).toMatch(/The messaging entity .* could not be found/);
  });

  it('refuses with null source and target in the attach reply, as Service Bus does, so the client waits for the detach', async () => {
    // azure-amqp (the .NET SDK) counts an attach reply with a terminus as an open link; only a null one makes it
    // wait for the detach's error. An empty terminus made .NET send to a missing queue and fail with MessageSizeExceeded.
    const sender = conn.open_sender({ target: { address: 'missing' }, source: { address: 'me' } });
    await once(sender, 'sender_error');
    // rhea hands a null terminus over as a typed null; an empty one is a described list.
    const value = (t: Any): unknown => (t && 'value' in t ? t.value : t) ?? null;
    expect(value(sender.remote.attach.target)).toBeNull();
    expect(value(sender.remote.attach.source)).toBeNull();
    const receiver = conn.open_receiver({ source: { address: 'missing' }, target: { address: 'me' } });
    await once(receiver, 'receiver_error');
    expect(value(receiver.remote.attach.source)).toBeNull();
    expect(value(receiver.remote.attach.target)).toBeNull();
  });

  it('delivers with a GUID tag in .NET order, typed annotations and a header delivery-count', async () => {
    await send('hello', { message_id: 'm1', application_properties: { big: rhea.types.wrap_ulong(5) } });
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, rcv_settle_mode: 1 });
    receiver.add_credit(1);
    const ctx = await once<Any>(receiver, 'message');
    expect(ctx.delivery.tag.length).toBe(16);
    const token = tagToLockToken(ctx.delivery.tag);
    expect(Buffer.compare(lockTokenToTag(token), ctx.delivery.tag)).toBe(0);
    const row = [...(broker.store as MemoryStore).load(1).rows][0]!;
    expect(row.lock!.token).toBe(token);
    expect(ctx.message.delivery_count).toBe(0);
    expect(ctx.message.message_annotations['x-opt-sequence-number']).toBe(1);
    expect(ctx.message.message_annotations['x-opt-locked-until']).toBeInstanceOf(Date);
    expect(ctx.message.message_annotations['x-opt-locked-until'].getTime()).toBe(row.lock!.until);
    expect(ctx.message.message_annotations['x-opt-enqueued-time']).toBeInstanceOf(Date);
    expect(ctx.message.body).toBe('hello');
  });

  it('keeps AMQP types of the sender’s properties byte for byte', async () => {
    await send('typed', { message_id: 'm2', application_properties: { u: rhea.types.wrap_ulong(7), s: rhea.types.wrap_symbol('sym') } });
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false });
    receiver.add_credit(1);
    const raw = await nextMessageBytes();
    // ulong 7 is encoded as smallulong (0x53 07), symbol "sym" as sym8 (0xa3 03 's' 'y' 'm').
    expect(raw.includes(Buffer.from([0x53, 0x07]))).toBe(true);
    expect(raw.includes(Buffer.from([0xa3, 0x03, 0x73, 0x79, 0x6d]))).toBe(true);
  });

  it('echoes the outcome type and strips the error from a dead-letter echo', async () => {
    await send('dl');
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, autosettle: false, rcv_settle_mode: 1 });
    receiver.add_credit(1);
    const ctx = await once<Any>(receiver, 'message');
    ctx.delivery.update(false, (rhea.message as Any).rejected({ error: { condition: 'com.microsoft:dead-letter', info: { DeadLetterReason: 'r' } } }).described());
    await new Promise<void>((r) => {
      const check = (): void => (ctx.delivery.remote_settled ? r() : void setTimeout(check, 10));
      check();
    });
    expect(ctx.delivery.remote_state.constructor.composite_type).toBe('rejected');
    expect(ctx.delivery.remote_state.error ?? null).toBeNull();
  });

  it('keeps the AMQP types of an abandon’s properties to modify on the next delivery', async () => {
    // .NET sends AbandonMessageAsync(msg, { ["attempt"] = 1 }) as an int; rhea's plain decoding made it a long.
    await send('typed-abandon');
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, autosettle: false, rcv_settle_mode: 1 });
    receiver.add_credit(1);
    const first = await once<Any>(receiver, 'message');
    const raw = nextMessageBytes();
    const annotations = { attempt: rhea.types.wrap_int(1), small: rhea.types.wrap_short(2), big: rhea.types.wrap_long(3) };
    first.delivery.update(false, (rhea.message as Any).modified({ message_annotations: annotations }).described());
    receiver.add_credit(1);
    const bytes = await raw;
    const entry = (key: string, value: number[]): Buffer => Buffer.concat([Buffer.from([0xa1, key.length]), Buffer.from(key), Buffer.from(value)]);
    expect(bytes.includes(entry('attempt', [0x54, 1]))).toBe(true); // smallint
    expect(bytes.includes(entry('small', [0x61, 0, 2]))).toBe(true); // short
    expect(bytes.includes(entry('big', [0x55, 3]))).toBe(true); // smalllong
  });

  it('takes a released message back without counting a delivery', async () => {
    // The .NET receiver releases what arrives into left-over credit while no call waits (AMQP 1.0 §3.4.4:
    // released does not increment the delivery count); counting it ran the count up by the link's credit.
    await send('released');
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, autosettle: false, rcv_settle_mode: 1 });
    receiver.add_credit(1);
    const first = await once<Any>(receiver, 'message');
    expect(first.message.delivery_count).toBe(0);
    first.delivery.update(true, (rhea.message as Any).released().described());
    receiver.add_credit(1);
    const again = await once<Any>(receiver, 'message');
    expect(again.message.body).toBe('released');
    expect(again.message.delivery_count).toBe(0);
  });

  it('answers drain with a flow that uses up the credit', async () => {
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false });
    await once(receiver, 'receiver_open');
    receiver.add_credit(5);
    receiver.drain_credit();
    const ctx = await once<Any>(receiver, 'receiver_drained');
    expect(ctx.receiver.credit).toBe(0);
    expect(ctx.receiver.delivery_count).toBe(5);
  });

  it('answers a settle of a lapsed lock with com.microsoft:message-lock-lost', async () => {
    await send('late');
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, autosettle: false, rcv_settle_mode: 1 });
    receiver.add_credit(1);
    const ctx = await once<Any>(receiver, 'message');
    clock.advance(30_000);
    ctx.delivery.update(false, (rhea.message as Any).accepted().described());
    await new Promise<void>((r) => {
      const check = (): void => (ctx.delivery.remote_settled ? r() : void setTimeout(check, 10));
      check();
    });
    expect(ctx.delivery.remote_state.error.condition).toBe('com.microsoft:message-lock-lost');
  });
});

describe('$management replies', () => {
  it('name the error condition under both keys as symbols, with an int status code', async () => {
    // .NET reads `errorCondition` (camelCase) cast to a symbol, JS reads `error-condition`; without the former .NET
    // derives the condition from the status, and 410 became MessageLockLost for a missing deferred message.
    const replies = conn.open_receiver({ source: { address: 'q/$management' }, target: { address: 'reply-1' }, credit_window: 10 });
    const requests = conn.open_sender({ target: { address: 'q/$management' }, source: { address: 'mgmt-1' } });
    await once(requests, 'sendable');
    const raw = nextMessageBytes();
    requests.send({
      message_id: 'request1',
      reply_to: 'reply-1',
      application_properties: { operation: 'com.microsoft:receive-by-sequence-number' },
      body: rhea.types.wrap_map({ 'sequence-numbers': (rhea.types as Any).wrap_array([42], 0x81), 'receiver-settle-mode': rhea.types.wrap_uint(1) }),
    });
    const ctx = await once<Any>(replies, 'message');
    const props = ctx.message.application_properties;
    expect(props.statusCode).toBe(410);
    expect(props.errorCondition).toBe('com.microsoft:message-not-found');
    expect(props['error-condition']).toBe('com.microsoft:message-not-found');
    const bytes = await raw;
    const sym = (key: string, value: string): Buffer =>
      Buffer.concat([Buffer.from([0xa1, key.length]), Buffer.from(key), Buffer.from([0xa3, value.length]), Buffer.from(value)]);
    expect(bytes.includes(sym('errorCondition', 'com.microsoft:message-not-found'))).toBe(true);
    expect(bytes.includes(sym('error-condition', 'com.microsoft:message-not-found'))).toBe(true);
    // statusCode 410 as an AMQP int (0x71), not a uint.
    expect(bytes.includes(Buffer.concat([Buffer.from([0xa1, 10]), Buffer.from('statusCode'), Buffer.from([0x71, 0, 0, 0x01, 0x9a])]))).toBe(true);
  });
  it('keep the AMQP types of update-disposition’s properties-to-modify', async () => {
    // .NET settles a deferred message through $management; an int sent there came back a uint.
    await send('deferred', { message_id: 'd1' });
    const receiver = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, autosettle: false, rcv_settle_mode: 1 });
    receiver.add_credit(1);
    const got = await once<Any>(receiver, 'message');
    got.delivery.update(false, (rhea.message as Any).modified({ undeliverable_here: true }).described());
    const replies = conn.open_receiver({ source: { address: 'q/$management' }, target: { address: 'reply-2' }, credit_window: 10 });
    const requests = conn.open_sender({ target: { address: 'q/$management' }, source: { address: 'mgmt-2' } });
    await once(requests, 'sendable');
    const t = rhea.types as Any;
    const request = (id: string, operation: string, body: Any): Promise<Any> => {
      requests.send({ message_id: id, reply_to: 'reply-2', application_properties: { operation }, body });
      return new Promise((resolve) => {
        const on = (ctx: Any): void => {
          if (ctx.message.correlation_id !== id) return;
          replies.removeListener('message', on);
          resolve(ctx);
        };
        replies.on('message', on);
      });
    };
    const bySeq = t.wrap_map({ 'sequence-numbers': t.wrap_array([1], 0x81), 'receiver-settle-mode': t.wrap_uint(1) });
    const first = await request('r1', 'com.microsoft:receive-by-sequence-number', bySeq);
    const token = first.message.body.messages[0]['lock-token'];
    const abandon = await request('r2', 'com.microsoft:update-disposition', t.wrap_map({
      'lock-tokens': t.wrap_array([token], 0x98),
      'disposition-status': 'abandoned',
      'properties-to-modify': t.wrap_map({ tries: t.wrap_int(2), big: t.wrap_long(5) }),
    }));
    expect(abandon.message.application_properties.statusCode).toBe(200);
    const again = await request('r3', 'com.microsoft:receive-by-sequence-number', bySeq);
    const bytes: Buffer = again.message.body.messages[0].message;
    const entry = (key: string, value: number[]): Buffer => Buffer.concat([Buffer.from([0xa1, key.length]), Buffer.from(key), Buffer.from(value)]);
    expect(bytes.includes(entry('tries', [0x54, 2]))).toBe(true); // smallint
    expect(bytes.includes(entry('big', [0x55, 5]))).toBe(true); // smalllong
  });
});

describe('many links on one AMQP session', () => {
  it('never overruns the session’s 2,048-delivery buffer when several receivers share it', async () => {
    const sender = conn.open_sender({ target: { address: 'q' } });
    await once(sender, 'sendable');
    let accepted = 0;
    const total = 4000;
    await new Promise<void>((resolve) => {
      sender.on('accepted', () => (++accepted === total ? resolve() : undefined));
      const pump = (): void => {
        while (sender.sendable() && sender.tag < total) sender.send({ body: 'x' });
      };
      sender.on('sendable', pump);
      pump();
    });
    // Three receivers on the connection's default session, 1,000 credit each, none settling yet.
    const got: Any[] = [];
    const receivers = [0, 1, 2].map(() => {
      const r = conn.open_receiver({ source: { address: 'q' }, credit_window: 0, autoaccept: false, rcv_settle_mode: 1 });
      r.on('message', (ctx: Any) => got.push(ctx.delivery));
      r.add_credit(1000);
      return r;
    });
    const deadline = Date.now() + 10_000;
    while (got.length < 2000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // The session buffer holds 2,048 unsettled deliveries: the broker stops there instead of breaking rhea.
    expect(got.length).toBeGreaterThanOrEqual(2000);
    expect(got.length).toBeLessThanOrEqual(2048);
    for (const d of got.splice(0)) d.accept();
    while (got.length < 1000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(got.length).toBeGreaterThan(900);
    void receivers;
  });
});
