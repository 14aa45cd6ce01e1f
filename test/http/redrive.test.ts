// Redrive through the admin API: filters (dead-letter reason, application property), dry-run, max, another
// target, the rate limit on the broker's fake clock, and a client that goes away mid-redrive.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { api, authHeader, deadLetterAll, startHttpBroker, until, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;
let clock: FakeClock;

beforeEach(async () => {
  clock = new FakeClock();
  b = await startHttpBroker([{ Name: 'orders' }, { Name: 'retry' }], { clock });
  await deadLetterAll(b.broker, 'orders', [
    { id: 'a', reason: 'Poison', props: { tenant: 'x', n: 1 } },
    { id: 'b', reason: 'Timeout', props: { tenant: 'y', n: 2 } },
    { id: 'c', reason: 'Poison', props: { tenant: 'y', n: 3 } },
    { id: 'd', reason: 'Timeout', props: { tenant: 'x', n: 4 } },
  ]);
});
afterEach(() => b.close());

const redrive = (body: Record<string, unknown>) =>
  api(b.base, '/api/entities/orders/redrive', { method: 'POST', body });
const ids = async (entity: string, view: string): Promise<string[]> =>
  (await api(b.base, `/api/entities/${entity}/messages?view=${view}`)).body.messages.map(
    (m: { messageId: string }) => m.messageId,
  );
const counts = (entity: string) => b.broker.listEntities().find((e) => e.path === entity)!;

describe('redrive', () => {
  it('moves only messages with the given dead-letter reason, with a fresh delivery count and no reason', async () => {
    const r = await redrive({ reason: 'Poison' });
    expect(r.body).toEqual({
      from: 'orders/$DeadLetterQueue',
      to: 'orders',
      moved: 2,
      skipped: 2,
      failed: 0,
      dryRun: false,
      aborted: false,
    });
    expect(await ids('orders', 'active')).toEqual(['a', 'c']);
    expect(await ids('orders', 'deadletter')).toEqual(['b', 'd']);
    const [m] = (await api(b.base, '/api/entities/orders/messages')).body.messages;
    expect(m).toMatchObject({ deliveryCount: 0, deadLetterReason: null, bodyPreview: 'body of a' });
    expect(m.applicationProperties).toEqual({ tenant: 'x', n: 1 });
  });

  it('filters on an application property of the stored message', async () => {
    const r = await redrive({ where: 'tenant=x' });
    expect(r.body).toMatchObject({ moved: 2, skipped: 2 });
    expect(await ids('orders', 'active')).toEqual(['a', 'd']);
    expect((await redrive({ where: 'n=3', reason: 'Poison' })).body).toMatchObject({ moved: 1 });
    expect(await ids('orders', 'deadletter')).toEqual(['b']);
    expect((await redrive({ where: 'tenant' })).status).toBe(400);
  });

  it('reports what would move on a dry run and moves nothing', async () => {
    const r = await redrive({ dryRun: true, reason: 'Timeout' });
    expect(r.body).toMatchObject({ moved: 2, skipped: 2, dryRun: true });
    expect(counts('orders')).toMatchObject({ active: 0, deadLettered: 4 });
  });

  it('stops after max moves and can target another queue', async () => {
    const r = await redrive({ max: 3, to: 'retry' });
    expect(r.body).toMatchObject({ to: 'retry', moved: 3 });
    expect(await ids('retry', 'active')).toEqual(['a', 'b', 'c']);
    expect(await ids('orders', 'deadletter')).toEqual(['d']);
    expect((await redrive({ max: 0 })).body.error.message).toMatch(/max = 0: must be an integer from 1/);
  });

  it('keeps to the rate on the broker clock', async () => {
    const pending = redrive({ rate: 10 }); // one move per 100 ms of broker time
    await until(() => counts('orders').active === 1);
    await new Promise((r) => setTimeout(r, 50)); // real time passing does not release the next move
    expect(counts('orders').active).toBe(1);
    clock.advance(99);
    await new Promise((r) => setTimeout(r, 20));
    expect(counts('orders').active).toBe(1);
    clock.advance(1);
    await until(() => counts('orders').active === 2);
    clock.advance(100);
    await until(() => counts('orders').active === 3);
    clock.advance(100);
    await until(() => counts('orders').active === 4);
    clock.advance(100);
    expect((await pending).body).toMatchObject({ moved: 4, aborted: false });
  });

  it('streams progress as NDJSON and stops between moves when the client goes away', async () => {
    const ac = new AbortController();
    const res = await fetch(b.base + '/api/entities/orders/redrive', {
      method: 'POST',
      headers: { authorization: authHeader(), accept: 'application/x-ndjson', 'content-type': 'application/json' },
      body: JSON.stringify({ rate: 1 }),
      signal: ac.signal,
    });
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    await until(() => counts('orders').active === 1);
    ac.abort();
    await new Promise((r) => setTimeout(r, 50)); // let the server see the closed socket
    clock.advance(1000);
    await until(() => b.logs.some((l) => l.msg === 'redrive finished'));
    expect(b.logs.find((l) => l.msg === 'redrive finished')).toMatchObject({ moved: 1, aborted: true });
    expect(counts('orders')).toMatchObject({ active: 1, deadLettered: 3 });
  });
});
