// Small frames that make rhea loop or allocate by a count the peer chose must be refused at once: a decode or a
// delivery-id walk that runs for seconds blocks every other connection (found by the frame fuzzer,
// fuzz-frames.test.ts).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { connect, sendMany } from '../helpers/amqp-client.js';
import { RawConn, attachSender, frame, loginPrefix } from '../helpers/raw-amqp.js';

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q' }], { store: new MemoryStore() });
});
afterAll(async () => broker.dispose());

const FLOW = 0x13;
const DISPOSITION = 0x15;
const NULL = Buffer.from([0x40]);
const TRUE = Buffer.from([0x41]);
const uint = (n: number): Buffer => Buffer.from([0x70, n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
/** An array32 declaring `count` elements of the zero-width or fixed-width type `ctor` (no element bytes). */
const array32 = (count: number, ctor: number): Buffer => {
  const b = Buffer.from([0xf0, 0, 0, 0, 5, 0, 0, 0, 0, ctor]);
  b.writeUInt32BE(count, 5);
  return b;
};

/**
 * An AMQP frame on channel 0 whose performative is a list32 of `fields` (raw encoded values), described by
 * the small-ulong `code`, or by any raw descriptor bytes (e.g. the symbol "amqp:disposition:list").
 */
function performative(code: number | Buffer, fields: Buffer[]): Buffer {
  const body = Buffer.concat(fields);
  const list = Buffer.alloc(9);
  list[0] = 0xd0;
  list.writeUInt32BE(body.length + 4, 1);
  list.writeUInt32BE(fields.length, 5);
  const descriptor = typeof code === 'number' ? Buffer.from([0x53, code]) : code;
  const perf = Buffer.concat([Buffer.from([0x00]), descriptor, list, body]);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + perf.length, 0);
  header[4] = 2; // doff
  return Buffer.concat([header, perf]);
}

/** A symbol descriptor, which rhea resolves like the numeric one but a byte-level guard may not. */
function symbol(name: string): Buffer {
  return Buffer.concat([Buffer.from([0xa3, name.length]), Buffer.from(name, 'latin1')]);
}

/**
 * Sends a bomb after logging in; the connection must close within 5 s (with an AMQP close carrying
 * `condition`, when given) and another client must still be served.
 */
async function expectRefusedQuickly(bomb: Buffer, id: string, condition?: string): Promise<void> {
  const raw = new RawConn(broker.port);
  await raw.ready();
  const t0 = Date.now();
  await raw.write(Buffer.concat([loginPrefix(), bomb]));
  while (!raw.closed && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 10));
  raw.destroy();
  expect(raw.closed).toBe(true);
  expect(Date.now() - t0).toBeLessThan(5_000);
  if (condition) expect(raw.find('close')?.fields?.error?.condition).toBe(condition);
  const conn = await connect(broker.port);
  const outcomes = await sendMany(conn, 'q', [id], 1, Buffer.from('x'));
  conn.close();
  expect(outcomes.get(id)).toBe('ok');
}

describe('decode bombs', () => {
  it('closes the connection quickly and keeps serving others (4 billion nulls)', async () => {
    await expectRefusedQuickly(performative(FLOW, [array32(0xfffffff0, 0x40)]), 'after-null', 'amqp:decode-error');
  });

  it('refuses an array declaring more uuids than the frame holds', async () => {
    await expectRefusedQuickly(performative(FLOW, [array32(0xfffffff0, 0x98)]), 'after-uuid', 'amqp:decode-error');
  });

  it('bounds zero-width elements per frame, not only per array (200 arrays of 65,536 nulls in 2 KB)', async () => {
    const arrays = Array.from({ length: 200 }, () => array32(65_536, 0x40));
    await expectRefusedQuickly(performative(FLOW, arrays), 'after-many-arrays', 'amqp:decode-error');
  });
});

describe('disposition ranges', () => {
  it('a disposition naming 4 billion delivery ids does not stall the broker', async () => {
    const raw = new RawConn(broker.port);
    await raw.ready();
    const disposition = frame(0, 'disposition', { role: true, first: 0, last: 0xfffffff0, settled: true });
    await raw.write(Buffer.concat([loginPrefix(), disposition]));
    // Other clients are served at once while that frame is handled.
    const t0 = Date.now();
    const conn = await connect(broker.port);
    const outcomes = await sendMany(conn, 'q', ['during-range'], 1, Buffer.from('x'));
    conn.close();
    raw.destroy();
    expect(outcomes.get('during-range')).toBe('ok');
    expect(Date.now() - t0).toBeLessThan(3_000);
  });

  // rhea walks `for (i = first; i <= last; i++)`: a null first counts from 0 (found by the frame fuzzer, seed 541995).
  it('refuses a disposition whose first is null', async () => {
    const bomb = performative(DISPOSITION, [TRUE, NULL, uint(0xfffffff0), TRUE]);
    await expectRefusedQuickly(bomb, 'after-null-first', 'amqp:decode-error');
  });

  it('refuses a disposition whose last is a timestamp (coerced to a number past any uint)', async () => {
    const timestamp = Buffer.from([0x83, 0, 0, 0, 1, 0, 0, 0, 0]); // 2^32 ms
    const bomb = performative(DISPOSITION, [TRUE, uint(0), timestamp, TRUE]);
    await expectRefusedQuickly(bomb, 'after-date-last', 'amqp:decode-error');
  });

  it('refuses a null first behind a symbolic descriptor', async () => {
    const bomb = performative(symbol('amqp:disposition:list'), [TRUE, NULL, uint(0xfffffff0), TRUE]);
    await expectRefusedQuickly(bomb, 'after-symbolic', 'amqp:decode-error');
  });

  it('refuses a descriptor written as a uint, which rhea resolves but the spec does not allow', async () => {
    const bomb = performative(Buffer.from([0x52, DISPOSITION]), [TRUE, NULL, uint(0xfffffff0), TRUE]);
    await expectRefusedQuickly(bomb, 'after-uint-descriptor', 'amqp:decode-error');
  });
});

describe('transfers the guard must be able to count', () => {
  // rhea takes any truthy `more` as "more to come", so a uint more escaped the frame guard's transfer caps.
  it('refuses a transfer whose more is a uint or a ulong', async () => {
    const tag = Buffer.from([0xa0, 1, 0]);
    for (const [more, id] of [[uint(1), 'after-uint-more'], [Buffer.from([0x53, 1]), 'after-ulong-more']] as const) {
      const bomb = performative(0x14, [uint(0), uint(0), tag, uint(0), NULL, more]);
      await expectRefusedQuickly(Buffer.concat([attachSender(0, 'q'), bomb]), id, 'amqp:decode-error');
    }
  });
});
