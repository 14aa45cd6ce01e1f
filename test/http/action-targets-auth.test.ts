// Issue 25, row 5: resubmit and redrive write to a second entity (`to`, or a subscription's topic), so the token
// must cover that entity too, not only the one in the path: a token scoped to one queue moves nothing elsewhere.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, authHeader, deadLetterAll, ROOT, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;
beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'src' }, { Name: 'dst' }], {
    topics: [{ Name: 'events', Subscriptions: [{ Name: 'all' }] }],
  });
  await deadLetterAll(b.broker, 'src', [{ id: 'm1', reason: 'Poison' }]);
});
afterAll(async () => {
  await b?.close();
});

const scoped = (path: string): string => authHeader(ROOT, `http://127.0.0.1/${path}`);
const post = (path: string, body: unknown, auth: string) => api(b.base, path, { method: 'POST', body, auth });
const depth = (path: string) => b.broker.listEntities().find((e) => e.path === path)!;

describe('message actions that write to another entity', () => {
  it('refuses a resubmit to a queue the token does not cover (403), moving nothing', async () => {
    const r = await post('/api/entities/src/resubmit', { view: 'deadletter', filter: {}, to: 'dst' }, scoped('src'));
    expect([r.status, r.body.error?.code]).toEqual([403, 'Forbidden']);
    expect(r.body.error.message).toContain("'dst'");
    expect(depth('dst').active).toBe(0);
  });

  it('refuses a redrive to a queue the token does not cover (403), moving nothing', async () => {
    const r = await post('/api/entities/src/redrive', { to: 'dst' }, scoped('src'));
    expect([r.status, r.body.error?.code]).toEqual([403, 'Forbidden']);
    expect(depth('dst').active).toBe(0);
  });

  it("refuses a subscription's resubmit (to its topic) with a token for the subscription only", async () => {
    const r = await post('/api/entities/events%2Fsubscriptions%2Fall/resubmit', { view: 'active', filter: {} }, scoped('events/subscriptions/all'));
    expect([r.status, r.body.error?.code]).toEqual([403, 'Forbidden']);
  });

  it('allows both when the token covers source and destination', async () => {
    const dry = await post('/api/entities/src/resubmit', { view: 'deadletter', filter: {}, to: 'dst', dryRun: true }, authHeader());
    expect([dry.status, dry.body.count]).toEqual([200, 1]);
    const r = await post('/api/entities/src/redrive', { to: 'dst' }, authHeader());
    expect([r.status, r.body.moved]).toEqual([200, 1]);
    expect(depth('dst').active).toBe(1);
  });
});
