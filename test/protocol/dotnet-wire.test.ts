// What Microsoft's .NET SDK (Azure.Messaging.ServiceBus 7.21, on azure-amqp) needs on the wire where the JS SDK
// never looks, checked with raw clients so a regression shows here as well as in test/protocol/dotnet-sdk.test.ts:
// - a refused attach carries a null source (azure-amqp takes an empty source for an opened link, and the SDK then
//   reads a session filter that is not there: NullReferenceException instead of ServiceTimeout / SessionCannotBeLocked);
// - a non-exclusive session filter is declined exactly as a namespace without the feature declines it;
// - the coordinator attaches and declares without a put-token (the SDK sends none for it);
// - on a session whose first link is a coordinator (EnableCrossEntityTransactions), the first entity is the
//   send-via entity: a receiver on another entity is refused, senders to others are allowed;
// - AMQP over WebSockets with the subprotocol the .NET client offers ("amqp").

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import WebSocket from 'ws';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawConn, frame, frames, header, loginPrefix } from '../helpers/raw-amqp.js';
import { attach, control, described, descriptor, dispositionOf, t, terminus, txfer, until } from '../helpers/raw-txn.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let broker: TestBroker;
beforeEach(async () => {
  broker = await startTestBroker(
    [
      { Name: 'q' },
      { Name: 'a' },
      { Name: 'b' },
      { Name: 'c' },
      { Name: 's', Properties: { RequiresSession: true } },
    ],
    { store: new MemoryStore() },
  );
});
afterEach(async () => {
  await broker?.dispose();
});

function connect(): Promise<Any> {
  const c = rhea.create_container({ id: 'dotnet-wire' });
  return new Promise((resolve, reject) => {
    const connection = c.connect({ host: '127.0.0.1', port: broker.port, reconnect: false, username: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE' } as Any);
    connection.once('connection_open', () => resolve(connection));
    connection.once('connection_error', reject);
  });
}

/** Opens a receiver and waits for the broker's attach reply and detach; returns both as rhea saw them. */
async function refusedReceiver(conn: Any, opts: Any): Promise<{ source: unknown; error: Any }> {
  const receiver = conn.open_receiver(opts);
  let source: unknown = 'no attach seen';
  const error = await new Promise<Any>((r) => {
    receiver.once('receiver_error', (ctx: Any) => r(ctx.receiver.error));
    receiver.once('receiver_close', (ctx: Any) => r(ctx.receiver.error));
  });
  // rhea hands an encoded null field over as a typed Null.
  const raw = receiver.remote.attach?.source ?? null;
  source = raw !== null && raw?.type?.name === 'Null' ? null : raw;
  return { source, error };
}

describe('attach refusals as azure-amqp reads them', () => {
  it('a refused receiver attach carries a null source (missing entity)', async () => {
    const conn = await connect();
    const { source, error } = await refusedReceiver(conn, { source: { address: 'missing' }, credit_window: 0 });
    expect(error.condition).toBe('amqp:not-found');
    expect(source).toBeNull();
    conn.close();
  });

  it('an accept-next with no session available: null source, then com.microsoft:timeout', async () => {
    const conn = await connect();
    const { source, error } = await refusedReceiver(conn, {
      source: { address: 's', filter: { 'com.microsoft:session-filter': null } },
      properties: { 'com.microsoft:timeout': rhea.types.wrap_uint(300) },
      credit_window: 0,
    });
    expect(error.condition).toBe('com.microsoft:timeout');
    expect(source).toBeNull();
    conn.close();
  });

  it('declines a non-exclusive session filter as a namespace without the feature does', async () => {
    await broker.broker.send('s', [{ body: rhea.message.encode({ message_id: 'm', group_id: 'ne', body: 'x' }), messageId: 'm', sessionId: 'ne' } as Any]);
    const conn = await connect();
    const name = 'net;0:1:2:source(address:/s,filter:[com.microsoft:non-exclusive-session-filter:...])';
    const filter = rhea.types.described(rhea.types.wrap_ulong(0x137000000e), rhea.types.wrap_list([rhea.types.wrap_string('ne'), null]));
    const { source, error } = await refusedReceiver(conn, {
      name,
      source: { address: '/s', filter: { 'com.microsoft:non-exclusive-session-filter': filter } },
      credit_window: 0,
    });
    expect(error.condition).toBe('amqp:not-allowed');
    expect(error.description).toBe(`The link '${name}' contains invalid filter type. System only support Jms or Apache selector filter type.`);
    expect(source).toBeNull();
    // The session was not locked by the declined attach: an exclusive receiver takes it at once.
    const ok = conn.open_receiver({ source: { address: 's', filter: { 'com.microsoft:session-filter': 'ne' } }, credit_window: 0 });
    await new Promise((r) => ok.once('receiver_open', r));
    expect(ok.remote.attach.source.filter['com.microsoft:session-filter']).toBe('ne');
    conn.close();
  });
});

describe('the request/response pair as azure-amqp opens it', () => {
  it('echoes snd-settle-mode = settled on the $cbs and $management links, and sends replies settled', async () => {
    const conn = await connect();
    const opened = (link: Any, event: string): Promise<Any> => new Promise((r) => link.once(event, () => r(link)));
    const cbsSender = await opened(conn.open_sender({ target: { address: '$cbs' }, snd_settle_mode: 1 }), 'sendable');
    const mgmtReceiver = await opened(
      conn.open_receiver({ source: { address: 'q/$management' }, target: { address: 'reply-1' }, snd_settle_mode: 1, credit_window: 10 }),
      'receiver_open',
    );
    expect(cbsSender.remote.attach.snd_settle_mode).toBe(1);
    expect(mgmtReceiver.remote.attach.snd_settle_mode).toBe(1);
    const mgmtSender = await opened(conn.open_sender({ target: { address: 'q/$management' }, snd_settle_mode: 1 }), 'sendable');
    expect(mgmtSender.remote.attach.snd_settle_mode).toBe(1);
    mgmtSender.send({ message_id: 'request1', reply_to: 'reply-1', application_properties: { operation: 'com.microsoft:peek-message' }, body: { 'message-count': rhea.types.wrap_int(1) } });
    const reply = await new Promise<Any>((r) => mgmtReceiver.once('message', r));
    expect(reply.message.correlation_id).toBe('request1');
    expect(reply.delivery.remote_settled).toBe(true);
    conn.close();
  });
});

/** ANONYMOUS SASL, then open and begin: a connection that has sent no token (the .NET SDK before its first link). */
function anonymousPrefix(): Buffer {
  return Buffer.concat([
    header(3),
    frames.write_frame(frames.sasl_frame(frames.sasl_init({ mechanism: 'ANONYMOUS' }))),
    header(0),
    frame(0, 'open', { container_id: 'net', max_frame_size: 65536 }),
    frame(0, 'begin', { next_outgoing_id: 1, incoming_window: 5000, outgoing_window: 5000 }),
  ]);
}

const coordinatorTarget = (): Any => described(0x30, []);

describe('transactions as the .NET SDK opens them', () => {
  let raw: RawConn;
  afterEach(() => raw?.destroy());

  it('attaches the coordinator and declares before any put-token', async () => {
    raw = new RawConn(broker.port);
    await raw.ready();
    await raw.write(anonymousPrefix());
    await raw.write(attach(0, false, terminus.source({ address: '0123456789abcdef0123456789abcdef' }).described(), coordinatorTarget()));
    const reply = await until(() => raw.seen.find((s) => s.name.includes('attach')), 'attach reply');
    expect(descriptor(reply.fields.target)).toBe(0x30);
    await raw.write(txfer(0, 0, control(0x31, [])));
    const d = await until(() => dispositionOf(raw, 0), 'declared');
    expect(descriptor(d.fields.state)).toBe(0x33);
  });

  it('cross-entity: the first entity on a coordinator session is the send-via entity; a receiver elsewhere is refused', async () => {
    raw = new RawConn(broker.port);
    await raw.ready();
    await raw.write(loginPrefix());
    await raw.write(attach(0, false, terminus.source({ address: 'ctl' }).described(), coordinatorTarget()));
    await until(() => raw.seen.find((s) => s.name.includes('attach') && s.fields.handle === 0), 'coordinator reply');
    await raw.write(attach(1, false, terminus.source({ address: 'snd-b' }).described(), terminus.target({ address: '/b' }).described()));
    await raw.write(attach(2, false, terminus.source({ address: 'snd-c' }).described(), terminus.target({ address: '/c' }).described()));
    await raw.write(attach(3, true, terminus.source({ address: '/a' }).described(), terminus.target({ address: 'rcv-a' }).described()));
    await raw.write(attach(4, true, terminus.source({ address: '/b' }).described(), terminus.target({ address: 'rcv-b' }).described()));
    const detach = await until(() => raw.seen.find((s) => s.name.includes('detach') && s.fields.handle === 3), 'detach of the receiver on a');
    expect(detach.fields.error.condition).toBe('amqp:not-allowed');
    // The senders (b first, then c routed via b) and the receiver on b itself stay attached.
    await new Promise((r) => setTimeout(r, 100));
    const detached = raw.seen.filter((s) => s.name.includes('detach')).map((s) => s.fields.handle);
    expect(detached).toEqual([3]);
    // A transaction declared there works on b and on c (sent via b), committed together.
    await raw.write(txfer(0, 0, control(0x31, [])));
    const id = (await until(() => dispositionOf(raw, 0), 'declared')).fields.state.value[0].value as Buffer;
    const inTxn = described(0x34, [t.wrap_binary(id)]);
    await raw.write(txfer(1, 1, rhea.message.encode({ message_id: 'to-b', body: 'b' }), inTxn));
    await raw.write(txfer(2, 2, rhea.message.encode({ message_id: 'to-c', body: 'c' }), inTxn));
    for (const n of [1, 2]) {
      const d = await until(() => dispositionOf(raw, n), `transfer ${n}`);
      expect(descriptor(d.fields.state.value[1])).toBe(0x24); // accepted inside transactional-state
    }
    await raw.write(txfer(0, 3, control(0x32, [t.wrap_binary(id), t.wrap_boolean(false)])));
    expect(descriptor((await until(() => dispositionOf(raw, 3), 'discharge')).fields.state)).toBe(0x24);
    expect(broker.broker.peek('b', 1, 10)).toHaveLength(1);
    expect(broker.broker.peek('c', 1, 10)).toHaveLength(1);
  });

  it('a coordinator attached after an entity link is no group: its transactions keep to one entity', async () => {
    raw = new RawConn(broker.port);
    await raw.ready();
    await raw.write(loginPrefix());
    await raw.write(attach(1, false, terminus.source({ address: 'snd-b' }).described(), terminus.target({ address: 'b' }).described()));
    await raw.write(attach(2, false, terminus.source({ address: 'snd-c' }).described(), terminus.target({ address: 'c' }).described()));
    await raw.write(attach(0, false, terminus.source({ address: 'ctl' }).described(), coordinatorTarget()));
    await raw.write(txfer(0, 0, control(0x31, [])));
    const id = (await until(() => dispositionOf(raw, 0), 'declared')).fields.state.value[0].value as Buffer;
    const inTxn = described(0x34, [t.wrap_binary(id)]);
    await raw.write(txfer(1, 1, rhea.message.encode({ message_id: 'to-b', body: 'b' }), inTxn));
    await raw.write(txfer(2, 2, rhea.message.encode({ message_id: 'to-c', body: 'c' }), inTxn));
    const second = await until(() => dispositionOf(raw, 2), 'transfer to c');
    const outcome = second.fields.state.value[1];
    expect(descriptor(outcome)).toBe(0x25); // rejected
    expect(outcome.value[0].value[0].value).toBe('amqp:not-allowed');
  });
});

describe('AMQP over WebSockets as .NET offers it', () => {
  it('upgrades with the subprotocol "amqp"', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${broker.port}/$servicebus/websocket/`, ['amqp']);
    const protocol = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => resolve(ws.protocol));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
    expect(protocol).toBe('amqp');
    ws.close();
  });
});
