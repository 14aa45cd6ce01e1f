// A `$cbs` or `$management` request's disposition reaches the client before its reply (docs/wire-contract.md,
// "Request and reply order"). uamqp, under Microsoft's Python SDK 7.x, opens its request and reply links on one
// session and cancels a request whose reply comes first; the disposition that then follows lands in freed memory
// and crashes the client (issue 38). This checks the order frame by frame, on one session as uamqp opens it, with
// credit already granted on the reply link (the case in which the reply could overtake the disposition).

import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSas } from '../../src/auth/sas-token.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { RawSession, encode, waitFor } from '../helpers/raw-session.js';

const require = createRequire(import.meta.url);
/** Stock rhea's AMQP types (the client side), for the typed numbers of a `$management` request. */
const t = (require('rhea') as { types: Record<string, (v: unknown) => unknown> }).types;

let broker: TestBroker;
let s: RawSession;
beforeAll(async () => {
  broker = await startTestBroker([{ Name: 'orders' }], { store: new MemoryStore() });
  s = new RawSession(broker.port);
  await s.conn.ready();
  // As uamqp does: both `$cbs` links, then both `$management` links, all on one session, with credit for replies.
  await s.conn.write(
    Buffer.concat([
      s.start({ anonymous: true }),
      s.attachSender(0, '$cbs', 'cbs-requests'),
      s.attachReceiver(1, '$cbs', 'cbs-replies', 'cbs-replies'),
      s.flow(1, 100),
      s.attachSender(2, 'orders/$management', 'mgmt-requests'),
      s.attachReceiver(3, 'orders/$management', 'mgmt-replies', 'mgmt-replies'),
      s.flow(3, 100),
    ]),
  );
  // A barrier: the last attach's answer proves the broker read the flows before any request is sent.
  await waitFor(() => s.brokerHandle('mgmt-replies') !== undefined);
});
afterAll(async () => {
  s?.conn.destroy();
  await broker?.dispose();
});

/** Where in the broker's frames the disposition of our delivery `id` and the reply on link `name` number `n` are. */
function positions(id: number, name: string, n: number): { disposition: number; reply: number } {
  const handle = s.brokerHandle(name);
  const disposition = s.conn.seen.findIndex((f) => f.name.includes('disposition') && f.fields.first <= id && (f.fields.last ?? f.fields.first) >= id);
  const replies = s.conn.seen.map((f, i) => ({ f, i })).filter(({ f }) => f.name.includes('transfer') && f.fields.handle === handle);
  return { disposition, reply: replies[n]?.i ?? -1 };
}

/** Sends a request, waits for reply number `n` on `name`, and returns its status code and the two positions. */
async function exchange(request: { bytes: Buffer; id: number }, name: string, n: number): Promise<{ status: unknown; disposition: number; reply: number }> {
  await s.conn.write(request.bytes);
  await waitFor(() => s.replies(name).length > n);
  const props = s.replies(name)[n] ?? {};
  return { status: props['status-code'] ?? props.statusCode, ...positions(request.id, name, n) };
}

describe('the disposition of a request comes before its reply, on one session', () => {
  it('for refused put-tokens, again and again, and then for an accepted one', async () => {
    const audience = `sb://localhost/orders`;
    const wrong = signSas(audience, 'RootManageSharedAccessKey', 'not-the-key');
    const right = signSas(audience, 'RootManageSharedAccessKey', 'SAS_KEY_VALUE');
    const seen = [];
    for (const [n, token] of [wrong, wrong, wrong, right].entries()) {
      seen.push(await exchange(s.putToken(0, token, audience, 'cbs-replies'), 'cbs-replies', n));
    }
    expect(seen.map((x) => x.status)).toEqual([401, 401, 401, 202]);
    for (const x of seen) {
      expect(x.disposition).toBeGreaterThanOrEqual(0);
      expect(x.disposition).toBeLessThan(x.reply);
    }
  });

  it('for $management requests', async () => {
    const seen = [];
    for (let n = 0; n < 3; n++) {
      const body = t.wrap_map!({ 'from-sequence-number': t.wrap_long!(1), 'message-count': t.wrap_int!(10) });
      const msg = encode({ message_id: `peek-${n}`, reply_to: 'mgmt-replies', application_properties: { operation: 'com.microsoft:peek-message' }, body });
      seen.push(await exchange(s.transfer(2, msg), 'mgmt-replies', n));
    }
    expect(seen.map((x) => x.status)).toEqual([204, 204, 204]);
    for (const x of seen) expect(x.disposition).toBeLessThan(x.reply);
  });
});
