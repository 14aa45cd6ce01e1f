// A frame that declares billions of zero-width array elements (10 bytes on the wire) must be refused at once:
// rhea would build them one by one and block every other connection (found by the T11 fuzzer).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { connect, sendMany } from '../helpers/amqp-client.js';
import { RawConn, frame, loginPrefix } from '../helpers/raw-amqp.js';

let broker: TestBroker;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'q' }], { store: new MemoryStore() });
});
afterAll(async () => broker.dispose());

/** A flow frame on channel 0 whose first field is an array32 declaring 0xFFFFFFF0 elements of `ctor`. */
function arrayBomb(ctor: number): Buffer {
  const array = Buffer.from([0xf0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xf0, ctor]);
  const listBody = Buffer.concat([Buffer.from([0, 0, 0, 1]), array]); // count 1, then the array
  const list = Buffer.concat([Buffer.from([0xd0]), Buffer.alloc(4), listBody]);
  list.writeUInt32BE(listBody.length, 1);
  const performative = Buffer.concat([Buffer.from([0x00, 0x53, 0x13]), list]);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + performative.length, 0);
  header[4] = 2; // doff
  return Buffer.concat([header, performative]);
}

/** Sends a bomb after logging in; the connection must close within 5 s and another client must still be served. */
async function expectRefusedQuickly(bomb: Buffer, id: string): Promise<void> {
  const raw = new RawConn(broker.port);
  await raw.ready();
  const t0 = Date.now();
  await raw.write(Buffer.concat([loginPrefix(), bomb]));
  while (!raw.closed && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 10));
  raw.destroy();
  expect(raw.closed).toBe(true);
  expect(Date.now() - t0).toBeLessThan(5_000);
  const conn = await connect(broker.port);
  const outcomes = await sendMany(conn, 'q', [id], 1, Buffer.from('x'));
  conn.close();
  expect(outcomes.get(id)).toBe('ok');
}

describe('decode bombs', () => {
  it('closes the connection quickly and keeps serving others (4 billion nulls)', async () => {
    await expectRefusedQuickly(arrayBomb(0x40), 'after-null');
  });

  it('refuses an array declaring more uuids than the frame holds', async () => {
    await expectRefusedQuickly(arrayBomb(0x98), 'after-uuid');
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
});
