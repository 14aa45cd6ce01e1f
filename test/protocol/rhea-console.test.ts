// What the broker's rhea writes on the console, and the outgoing-delivery bookkeeping behind its "Next pending
// delivery not found" line (issue 38, item 3). A raw client drives the broker frame by frame; the broker's pino
// logger is captured and so is the console. The broker must never write to the console: a peer's protocol slip is a
// pino `warn` naming the connection.
//
// The slip: a receive-and-delete (pre-settled) delivery was marked remote-settled as the broker handed it to rhea,
// before rhea had written it. When the client had taken its credit back (a flow with less credit), rhea kept the
// delivery pending, then dropped it as "fully settled" at the end of that same pass: the message, already deleted
// from the queue, was never sent, and every later delivery of the AMQP session waited behind the missing one forever,
// rhea printing "Next pending delivery not found: 0" each time it ran.

import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import rhea from 'rhea';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawSession, encode, waitFor } from '../helpers/raw-session.js';
import { frame } from '../helpers/raw-amqp.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const terminus = createRequire(import.meta.url)('rhea/lib/terminus.js') as Any;
const PLAIN = { user: 'RootManageSharedAccessKey', password: 'SAS_KEY_VALUE' };
const STORED = 3;

let broker: TestBroker | undefined;
let logs: Record<string, unknown>[];
let consoleLines: string[];

beforeEach(() => {
  logs = [];
  consoleLines = [];
  for (const m of ['error', 'warn', 'log'] as const) {
    vi.spyOn(console, m).mockImplementation((...a: unknown[]) => void consoleLines.push(a.map(String).join(' ')));
  }
});

afterEach(async () => {
  vi.restoreAllMocks();
  await broker?.dispose();
  broker = undefined;
});

/** A broker whose pino lines (debug and up) are kept in `logs`, with STORED messages in queue `q`. */
async function start(): Promise<TestBroker> {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  broker = await startTestBroker([{ Name: 'q' }], { log: pino({ level: 'debug' }, sink) });
  await broker.broker.send(
    'q',
    Array.from({ length: STORED }, (_, i) => ({ messageId: `m${i}`, body: new Uint8Array(rhea.message.encode({ message_id: `m${i}`, body: 'x' })) })),
  );
  return broker;
}

/** Attach of a client receiver on handle 0 from `q`, receive-and-delete (`snd_settle_mode` 1) or peek-lock. */
function attachReceiver(receiveAndDelete: boolean): Buffer {
  return frame(0, 'attach', {
    name: 'r0',
    handle: 0,
    role: true,
    snd_settle_mode: receiveAndDelete ? 1 : 0,
    rcv_settle_mode: 0,
    source: terminus.source({ address: 'q' }).described(),
    target: terminus.target({ address: 'r0' }).described(),
  });
}

/** A flow on handle 0 that sets the link's credit to `credit` (delivery-count as the client counts it). */
function credit(credit: number, deliveryCount = 0): Buffer {
  return frame(0, 'flow', { next_incoming_id: 0, incoming_window: 65_535, next_outgoing_id: 0, outgoing_window: 65_535, handle: 0, delivery_count: deliveryCount, link_credit: credit });
}

const transfers = (s: RawSession): number => s.conn.seen.filter((f) => f.name.includes('transfer')).length;
const counts = (): { active: number; locked: number } => {
  const e = broker!.broker.listEntities().find((x) => x.path === 'q')!;
  return { active: e.active, locked: e.locked };
};
const rheaLines = (): string[] => consoleLines.filter((l) => /pending delivery|credit was/i.test(l));

/**
 * A receiver on `q` given one credit and, in the same write, none: the broker may already have taken a message for
 * that credit, which rhea then cannot write. Waits a moment for the broker to hand it over.
 */
async function creditTakenBack(receiveAndDelete: boolean): Promise<RawSession> {
  const s = new RawSession((await start()).port);
  await s.conn.write(Buffer.concat([s.start(PLAIN), attachReceiver(receiveAndDelete)]));
  await waitFor(() => s.brokerHandle('r0') !== undefined);
  await s.conn.write(Buffer.concat([credit(1), credit(0)]));
  await new Promise((r) => setTimeout(r, 300));
  return s;
}

describe('outgoing deliveries while the client takes its credit back', () => {
  it('sends a receive-and-delete delivery once credit returns: nothing deleted goes unsent, nothing on the console', async () => {
    const s = await creditTakenBack(true);
    await s.conn.write(credit(STORED));
    await waitFor(() => transfers(s) + counts().active === STORED && counts().active === 0, 3_000);
    const removed = STORED - counts().active;
    expect({ removed, sent: transfers(s) }).toEqual({ removed: STORED, sent: STORED });
    expect(rheaLines()).toEqual([]);
    s.conn.destroy();
  });

  it('does not settle a peek-lock delivery the client disposes of before it was sent, and logs the slip through pino', async () => {
    const s = await creditTakenBack(false);
    // Delivery 0 was never written: a disposition of it names nothing the client has.
    const accepted = (rhea.message as Any).accepted().described();
    await s.conn.write(frame(0, 'disposition', { role: true, first: 0, last: 0, settled: true, state: accepted }));
    await new Promise((r) => setTimeout(r, 300));
    await s.conn.write(credit(STORED));
    await waitFor(() => transfers(s) === STORED, 3_000);
    expect({ sent: transfers(s), ...counts() }).toEqual({ sent: STORED, active: 0, locked: STORED });
    expect(rheaLines()).toEqual([]);
    const slip = logs.find((l) => l.level === 40 && String(l.msg).includes('disposition'));
    expect(slip, JSON.stringify(logs.filter((l) => Number(l.level) >= 40))).toMatchObject({ conn: expect.any(String) });
    s.conn.destroy();
  });
});

describe("rhea's console lines go through pino", () => {
  it("logs any other line rhea prints while reading a peer's frames as a warn with the connection id", async () => {
    const s = new RawSession((await start()).port);
    await s.conn.write(Buffer.concat([s.start(PLAIN), s.attachSender(0, 'q')]));
    await waitFor(() => s.brokerHandle('s0') !== undefined);
    // A sender answering with drain set and credit left: rhea's Receiver.on_flow prints "received flow with drain
    // set, but non zero credit".
    await s.conn.write(frame(0, 'flow', { next_incoming_id: 0, incoming_window: 65_535, next_outgoing_id: 0, outgoing_window: 65_535, handle: 0, delivery_count: 0, link_credit: 5, drain: true }));
    const line = await waitFor(() => logs.find((l) => String(l.msg).includes('drain set')), 2_000);
    expect(consoleLines).toEqual([]);
    expect(line, JSON.stringify(logs.filter((l) => Number(l.level) >= 40))).toMatchObject({ level: 40, conn: expect.any(String) });
    s.conn.destroy();
  });

  it('logs a transfer beyond the link credit as a warn with the connection id, not on the console', async () => {
    const b = await start();
    const s = new RawSession(b.port);
    // No token: the link is never admitted, so it never gets credit, and the pipelined transfer comes beyond it.
    const send = s.transfer(0, encode({ message_id: 'beyond', body: 'x' }));
    await s.conn.write(Buffer.concat([s.start({ anonymous: true }), s.attachSender(0, 'q'), send.bytes]));
    expect(await waitFor(() => s.disposition(send.id))).toBeTruthy();
    expect(rheaLines()).toEqual([]);
    const open = logs.find((l) => l.msg === 'connection open');
    const line = logs.find((l) => l.level === 40 && String(l.msg).includes('credit'));
    expect(line, JSON.stringify(logs.filter((l) => Number(l.level) >= 40))).toMatchObject({ conn: open?.conn, handle: 0 });
    s.conn.destroy();
  });
});
