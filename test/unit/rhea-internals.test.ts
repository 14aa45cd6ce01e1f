// The broker runs on a copy of rhea of its own (src/amqp/rhea.ts), patches it (src/amqp/rhea-patches.ts) and
// reaches past its public API in a few named places. These tests fail loudly when a new rhea changes any function
// the broker patches or reaches into, and they check that the patches never reach the rhea that clients in the
// same process load — the SDK under test here, or an application that embeds the broker.

import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import stockRhea from 'rhea';
import brokerRhea, {
  drainRequested,
  grantedLimit,
  holdAttachReply,
  receiverCredit,
  releaseAttachReply,
  remoteLink,
  saslComplete,
  saslServerState,
  sessionOutgoingRoom,
} from '../../src/amqp/rhea.js';
import { patchRhea, RHEA_LOG } from '../../src/amqp/rhea-patches.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const require = createRequire(import.meta.url);

/** Short fingerprint of a function's source. */
const fingerprint = (f: unknown): string =>
  createHash('sha256').update(String(f)).digest('hex').slice(0, 16);

/**
 * Every rhea function the broker replaces or calls past the public API, with its source fingerprint in the pinned
 * rhea version. A mismatch means rhea changed under a patch: re-read the function, re-check the patch or the call
 * in src/amqp (rhea-patches.ts, rhea.ts), then update the fingerprint here.
 */
const TOUCHED: Record<string, [file: string, get: (m: Any) => unknown, fingerprint: string]> = {
  'Session.prototype.create_link': ['session', (m) => m.prototype.create_link, '8ce621e0b8427381'],
  'Session.prototype.remove_link': ['session', (m) => m.prototype.remove_link, 'faf1c74d416a5955'],
  'Session.prototype.on_attach': ['session', (m) => m.prototype.on_attach, 'a10ae8b8f1cbf95e'],
  'Session.prototype.on_disposition': ['session', (m) => m.prototype.on_disposition, '25467aa239f70d69'],
  'Session.prototype._process': ['session', (m) => m.prototype._process, '281e6bcdb56719c4'],
  'Session.prototype.on_flow': ['session', (m) => m.prototype.on_flow, '2d88d2967adc432d'],
  'Session.prototype.on_transfer': ['session', (m) => m.prototype.on_transfer, '3d6ebe3dfdd17751'],
  'Session.prototype._get_link': ['session', (m) => m.prototype._get_link, 'afd07a63b3f1848a'],
  'Reader.prototype.read_array_items': ['types', (m) => m.Reader.prototype.read_array_items, '7e6c4b968d6d0cf8'],
  'Reader.prototype.read_n': ['types', (m) => m.Reader.prototype.read_n, '2704dad4629626d3'],
  'message.decode': ['message', (m) => m.decode, 'cc318fd63b1006d3'],
  'util.allocate_buffer': ['util', (m) => m.allocate_buffer, '713b6326d8d3a02c'],
  'Sender.prototype._get_drain': ['link', (m) => m.Sender.prototype._get_drain, 'aee5d41c44d317c3'],
  'Connection.prototype._register': ['connection', (m) => m.prototype._register, '2d46c76564826ac8'],
  'Connection.prototype._process': ['connection', (m) => m.prototype._process, '699b4e56ed51a3f3'],
  // routeRheaConsole: rhea's synchronous entry points for a peer's bytes (and _process above for its own).
  'Connection.prototype.input': ['connection', (m) => m.prototype.input, 'caeea0e2e5425f15'],
  // offerMssbcbs: the SASL server lists and looks up mechanisms by the keys of the map it is given.
  'sasl.Server': ['sasl', (m) => m.Server, 'fbab15e4b65f8610'],
  'sasl.Selective': ['sasl', (m) => m.Selective, '5bbf6ecf2d60f7a3'],
  'sasl.Server.prototype.on_sasl_init': ['sasl', (m) => m.Server.prototype.on_sasl_init, '5c7924c11a93ded8'],
  // amqpInt: types.wrap encodes an object with toRheaTyped() as the Typed it returns.
  'types.wrap': ['types', (m) => m.wrap, '5ae3878914b66b14'],
  // installTransactionTypes (coordinator.ts): the coordinator terminus, transactional-state, transactional flows.
  'terminus.unwrap': ['terminus', (m) => m.unwrap, '320afa7643af9562'],
  'message.unwrap_outcome': ['message', (m) => m.unwrap_outcome, '23254c12f23f13ef'],
  'Sender.prototype.on_flow': ['link', (m) => m.Sender.prototype.on_flow, '490f99075dc70432'],
  // The credit figure of a delivery link (grantedLimit, drainRequested, sessionOutgoingRoom) and the admission rule's
  // receiverCredit: the fields these set and read. rhea's Outgoing is not exported; a bare Session has one.
  'Outgoing.prototype.transfer_window': ['session', (m) => outgoingOf(m).transfer_window, '64b0b6d6b128bc27'],
  'Outgoing.prototype.send': ['session', (m) => outgoingOf(m).send, '55bccaf8cbc40cdd'],
  'Outgoing.prototype.process': ['session', (m) => outgoingOf(m).process, '1bdf8b4b5f7b9f83'],
  'CircularBuffer.prototype.available': ['session', (m) => Object.getPrototypeOf(new m({}, 0).outgoing.deliveries).available, '247928eceb5abc61'],
  // guardUnsentDeliveries: rhea applies a peer's disposition to any buffered delivery, sent or not, and its send
  // loop prints "Next pending delivery not found" when the next one left the buffer (popped when fully settled).
  'Outgoing.prototype.on_disposition': ['session', (m) => outgoingOf(m).on_disposition, '123a9407250e1d7d'],
  'CircularBuffer.prototype.by_id': ['session', (m) => Object.getPrototypeOf(new m({}, 0).outgoing.deliveries).by_id, 'fe9c1528a5509e87'],
  'CircularBuffer.prototype.get_head': ['session', (m) => Object.getPrototypeOf(new m({}, 0).outgoing.deliveries).get_head, '85be947923b7c663'],
  'CircularBuffer.prototype.pop_if': ['session', (m) => Object.getPrototypeOf(new m({}, 0).outgoing.deliveries).pop_if, 'c7a420f36a6c2983'],
  // markTransfersBeyondCredit: where rhea prints "Received transfer when credit was 0" and takes the credit.
  'Incoming.prototype.on_transfer': ['session', (m) => Object.getPrototypeOf(new m({}, 0).incoming).on_transfer, '27be78791479c5bb'],
  'Receiver.prototype.flow': ['link', (m) => m.Receiver.prototype.flow, 'a1654b89a6d6a605'],
};

/** The prototype of rhea's (unexported) session Outgoing, from a session built on a stand-in connection. */
function outgoingOf(Session: Any): Any {
  return Object.getPrototypeOf(new Session({}, 0).outgoing);
}

/** The rhea that a client in this process loads: the one the SDK's rhea-promise resolves. */
function clientRheaDir(): string {
  const fromPromise = createRequire(require.resolve('rhea-promise'));
  return fromPromise.resolve('rhea/package.json').replace(/package\.json$/, '');
}
const clientModule = (file: string): Any => createRequire(clientRheaDir() + 'package.json')(`./lib/${file}.js`);

describe('the rhea the broker runs on', () => {
  it('is its own copy of the pinned rhea version', () => {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    const pinned = /^npm:rhea@(\d+\.\d+\.\d+)$/.exec(pkg.dependencies['broker-rhea'])?.[1];
    expect(pinned, 'broker-rhea must be pinned to one exact rhea version').toBeDefined();
    expect(require('broker-rhea/package.json').version).toBe(pinned);
    expect(require.resolve('broker-rhea')).not.toBe(require.resolve('rhea'));
    expect(brokerRhea).not.toBe(stockRhea);
  });

  it('has every function the broker patches or reaches into unchanged', () => {
    // Read from the client's (unpatched) copy of the same version: the broker's copy carries the patches.
    expect(require(clientRheaDir() + 'package.json').version).toBe(require('broker-rhea/package.json').version);
    const changed: string[] = [];
    for (const [name, [file, get, want]] of Object.entries(TOUCHED)) {
      const f = get(clientModule(file));
      if (typeof f !== 'function') changed.push(`${name} is gone`);
      else if (fingerprint(f) !== want) changed.push(`${name} changed (now ${fingerprint(f)})`);
    }
    expect(changed).toEqual([]);
  });
});

describe('the reach into rhea', () => {
  it('is in rhea.ts (and the patches that replace its methods) only: no other amqp file reads its credit, session or private fields', () => {
    const dir = new URL('../../src/amqp/', import.meta.url);
    const internals = /\._[a-z]|\.outgoing\b|\.incoming\b|(?<![a-z_])delivery_count|\.credit\b/;
    const found: string[] = [];
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      if (file === 'rhea.ts' || file === 'rhea-patches.ts') continue;
      fs.readFileSync(new URL(file, dir), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (internals.test(line) && !line.trimStart().startsWith('//') && !line.trimStart().startsWith('*')) found.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });
});

describe('the broker patches its own rhea and no other', () => {
  beforeAll(() => patchRhea());

  it('leaves the rhea that clients in the process load untouched', () => {
    for (const [name, [file, get, want]] of Object.entries(TOUCHED)) {
      const client = get(clientModule(file));
      expect(`${name}: ${fingerprint(client)}`).toBe(`${name}: ${want}`);
    }
  });

  it('has patched the broker copy', () => {
    const session = require('broker-rhea/lib/session.js');
    expect(fingerprint(session.prototype.on_disposition)).not.toBe(TOUCHED['Session.prototype.on_disposition']![2]);
    expect(fingerprint(session.prototype.on_attach)).not.toBe(TOUCHED['Session.prototype.on_attach']![2]);
  });

  it('silences the loggers DEBUG leaves off in the broker copy only', () => {
    // The names the broker's rhea calls log.<name>() with; each must be a logger the patch can see.
    const names = ['config', 'frames', 'raw', 'reconnect', 'events', 'message', 'flow', 'io'];
    const client = clientModule('log');
    expect(Object.keys(client).sort()).toEqual([...names].sort());
    const broker = require('broker-rhea/lib/log.js');
    for (const name of names) {
      expect(typeof broker[name]).toBe('function');
      expect(client[name].namespace, name).toBe(`rhea:${name}`);
      // A debug logger carries its namespace; the no-op that replaced a disabled one does not.
      expect(broker[name].namespace, name).toBe(client[name].enabled ? `rhea:${name}` : undefined);
    }
  });
});

describe("the broker's rhea reports what rhea would print through the connection's logger", () => {
  beforeAll(() => patchRhea());

  it('moves past outgoing deliveries dropped before they were sent, reporting them as an error, not on the console', () => {
    const Session = require('broker-rhea/lib/session.js');
    const reported: unknown[][] = [];
    const printed = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const conn = { options: { id: 'c9' }, _register: () => undefined, [RHEA_LOG]: (...a: unknown[]) => void reported.push(a) };
    const session = new Session(conn, 0);
    const written: number[] = [];
    const link = {
      credit: 5,
      delivery_count: 0,
      local: { handle: 0 },
      has_credit: () => true,
      session: { output: (f: Any) => void written.push(f.delivery_id) },
    };
    const out = session.outgoing;
    out.on_begin({ incoming_window: 100 });
    out.on_flow({ next_incoming_id: 0, incoming_window: 100 });
    const first = out.send(link, Buffer.from('a'), Buffer.from('x'), 0);
    out.send(link, Buffer.from('b'), Buffer.from('y'), 0);
    // A slip: delivery 0 marked settled on both ends before it was written, and dropped as rhea drops those.
    first.settled = first.remote_settled = true;
    out.deliveries.pop_if((d: Any) => d.settled && d.remote_settled);
    try {
      out.process();
      expect(printed).not.toHaveBeenCalled();
    } finally {
      printed.mockRestore();
    }
    expect(reported).toEqual([['error', { lost: '0…0' }, 'outgoing deliveries dropped before they were sent']]);
    expect({ nextPending: out.next_pending_delivery, written }).toEqual({ nextPending: 2, written: [1] });
  });
});

describe('the internals the broker reaches into still behave', () => {
  // A bare server on the broker's rhea, a stock rhea client: what the named functions in rhea.ts read and do.
  let server: Any;
  let port = 0;
  const opened: { conn?: Any; senders: Any[]; receivers: Any[] } = { senders: [], receivers: [] };
  let hold = false;

  beforeAll(async () => {
    const container: Any = brokerRhea.create_container({ id: 'internals-test' });
    container.sasl_server_mechanisms.enable_anonymous();
    container.on('connection_open', (ctx: Any) => (opened.conn = ctx.connection));
    container.on('receiver_open', (ctx: Any) => opened.receivers.push(ctx.receiver));
    container.on('sender_open', (ctx: Any) => {
      opened.senders.push(ctx.sender);
      if (hold) holdAttachReply(ctx.sender);
    });
    server = container.listen({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((r) => server.once('listening', r));
    port = server.address().port;
  });
  afterAll(() => server?.close());

  const connect = async (): Promise<Any> => {
    const client: Any = (stockRhea as Any).create_container({ id: 'client' });
    const conn = client.connect({ port, host: '127.0.0.1', reconnect: false, username: 'anonymous' });
    await new Promise<void>((r) => conn.once('connection_open', () => r()));
    return conn;
  };

  it('reads the SASL outcome of a connection', async () => {
    const conn = await connect();
    try {
      expect(saslComplete(opened.conn)).toBe(true);
      expect(saslServerState(opened.conn)?.outcome).toBe(0);
    } finally {
      conn.close();
    }
  });

  it('finds the link a peer attached by channel and handle', async () => {
    const conn = await connect();
    try {
      const receiver = conn.open_receiver({ source: { address: 'q' } });
      await new Promise<void>((r) => receiver.once('receiver_open', () => r()));
      const sender = opened.senders.at(-1);
      let found = false;
      for (let ch = 0; ch < 4; ch++) for (let h = 0; h < 4; h++) found ||= remoteLink(opened.conn, ch, h) === sender;
      expect(found).toBe(true);
    } finally {
      conn.close();
    }
  });

  it("reads a sender's granted limit, its drain and its session's room, and a receiver's credit", async () => {
    const conn = await connect();
    try {
      const receiver = conn.open_receiver({ source: { address: 'credit' }, credit_window: 0 });
      await new Promise<void>((r) => receiver.once('receiver_open', () => r()));
      const sender = opened.senders.at(-1);
      expect([grantedLimit(sender), drainRequested(sender)]).toEqual([0, false]);
      receiver.drain = true;
      receiver.add_credit(5);
      for (let i = 0; i < 100 && grantedLimit(sender) === 0; i++) await new Promise((r) => setTimeout(r, 5));
      expect([grantedLimit(sender), drainRequested(sender)]).toEqual([5, true]);
      // A delivery handed to rhea takes one of the session's slots before it is written.
      const room = sessionOutgoingRoom(sender.session);
      expect(room).toBeGreaterThan(0);
      sender.send({ body: 'x' });
      expect(sessionOutgoingRoom(sender.session)).toBe(room - 1);

      const link = conn.open_sender({ target: { address: 'credit' } });
      await new Promise<void>((r) => link.once('sender_open', () => r()));
      const ours = opened.receivers.at(-1);
      const before = receiverCredit(ours);
      ours.flow(7);
      expect(receiverCredit(ours)).toBe(before + 7);
    } finally {
      conn.close();
    }
  });

  it('holds an attach reply until it is released', async () => {
    const conn = await connect();
    hold = true;
    try {
      const receiver = conn.open_receiver({ source: { address: 'held' } });
      let answered = false;
      receiver.once('receiver_open', () => (answered = true));
      await new Promise((r) => setTimeout(r, 200));
      expect(answered).toBe(false);
      releaseAttachReply(opened.senders.at(-1));
      await new Promise<void>((r) => (answered ? r() : receiver.once('receiver_open', () => r())));
      expect(answered).toBe(true);
    } finally {
      hold = false;
      conn.close();
    }
  });
});
