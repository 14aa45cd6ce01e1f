// Dead-letter depth alerts: one warn line on the rising edge and one when it clears (never one per
// message), per-queue thresholds with 0 = off, the alert gauge, and the config keys' validation.

import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { testConfig } from '../helpers/config.js';
import { api, deadLetterAll, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});

const alertLines = (h: HttpBroker) =>
  h.logs
    .filter((l) => l.level === 40 && String(l.msg).startsWith('dead-letter queue depth'))
    .map((l) => ({ msg: l.msg, entity: l.entity, depth: l.depth, threshold: l.threshold }));

async function alertGauge(h: HttpBroker, entity: string): Promise<string | undefined> {
  const text = await (await fetch(h.base + '/metrics')).text();
  return text
    .split('\n')
    .find((l) => l.startsWith(`peeklock_dead_letter_alert{entity="${entity}"}`))
    ?.split(' ')[1];
}

describe('dead-letter alerts', () => {
  it('logs once on the rising edge and once when the depth clears', async () => {
    b = await startHttpBroker([{ Name: 'orders' }, { Name: 'quiet' }, { Name: 'other' }], {
      broker: { DeadLetterAlerts: { Default: 1, Entities: { orders: 3, QUIET: 0 } } },
    });
    await deadLetterAll(b.broker, 'orders', [
      { id: '1', reason: 'r' },
      { id: '2', reason: 'r' },
    ]);
    expect(alertLines(b)).toEqual([]);
    expect(await alertGauge(b, 'orders')).toBe('0');
    await deadLetterAll(b.broker, 'orders', [
      { id: '3', reason: 'r' },
      { id: '4', reason: 'r' },
      { id: '5', reason: 'r' },
    ]);
    expect(alertLines(b)).toEqual([
      { msg: 'dead-letter queue depth reached its threshold', entity: 'orders', depth: 3, threshold: 3 },
    ]);
    expect(await alertGauge(b, 'orders')).toBe('1');

    // Threshold 0 turns a queue off; the default applies to queues not listed.
    await deadLetterAll(b.broker, 'quiet', [{ id: 'q', reason: 'r' }]);
    await deadLetterAll(b.broker, 'other', [{ id: 'o', reason: 'r' }]);
    expect(alertLines(b).map((l) => l.entity)).toEqual(['orders', 'other']);
    expect(await alertGauge(b, 'quiet')).toBe('0');

    // Still above after a partial redrive: no new line. Below: one clearing line.
    await api(b.base, '/api/entities/orders/redrive', { method: 'POST', body: { max: 2 } });
    expect(alertLines(b)).toHaveLength(2);
    await api(b.base, '/api/entities/orders/redrive', { method: 'POST', body: { max: 1 } });
    expect(alertLines(b).slice(2)).toEqual([
      { msg: 'dead-letter queue depth back below its threshold', entity: 'orders', depth: 2, threshold: 3 },
    ]);
    expect(await alertGauge(b, 'orders')).toBe('0');
    const listed = (await api(b.base, '/api/entities')).body.entities;
    expect(listed.map((e: { deadLetterAlert: boolean }) => e.deadLetterAlert)).toEqual([false, false, true]);
  });

  it('notices a dead-letter queue drained by a consumer on the periodic check', async () => {
    b = await startHttpBroker([{ Name: 'orders' }]);
    await deadLetterAll(b.broker, 'orders', [{ id: '1', reason: 'r' }]);
    expect(alertLines(b)).toHaveLength(1);
    // Purge straight through the broker (as a DLQ consumer's completes would): no HTTP call to trigger a check.
    await b.broker.purge('orders/$DeadLetterQueue');
    b.http.alerter.check();
    expect(alertLines(b).map((l) => l.msg)).toEqual([
      'dead-letter queue depth reached its threshold',
      'dead-letter queue depth back below its threshold',
    ]);
  });
});

describe('config', () => {
  const cfg = (broker: Record<string, unknown>) =>
    JSON.stringify({ UserConfig: { Namespaces: [{ Name: 'ns', Queues: [{ Name: 'orders' }] }] }, Broker: broker });

  it('accepts HttpPort and DeadLetterAlerts and resolves queue names case-insensitively', () => {
    const c = parseConfig(cfg({ HttpPort: 8080, DeadLetterAlerts: { Default: 5, Entities: { ORDERS: 10 } } }), 't');
    expect(c.broker.httpPort).toBe(8080);
    expect(c.broker.deadLetterAlerts).toEqual({ default: 5, entities: { orders: 10 } });
    expect(testConfig([{ Name: 'q' }]).broker.deadLetterAlerts).toBeUndefined();
  });

  it('refuses bad values with one line naming the path and the range', () => {
    expect(() => parseConfig(cfg({ HttpPort: 70000 }), 't')).toThrow(
      'Broker.HttpPort = 70000: must be an integer from 0 to 65535',
    );
    expect(() => parseConfig(cfg({ DeadLetterAlerts: { Default: -1 } }), 't')).toThrow(
      'Broker.DeadLetterAlerts.Default = -1: must be an integer from 0 to 2147483647',
    );
    expect(() => parseConfig(cfg({ DeadLetterAlerts: { Entities: { orders: 'x' } } }), 't')).toThrow(
      'Broker.DeadLetterAlerts.Entities.orders = "x": must be an integer from 0 to 2147483647',
    );
    expect(() => parseConfig(cfg({ DeadLetterAlerts: { Entities: { jobs: 2 } } }), 't')).toThrow(
      'Broker.DeadLetterAlerts.Entities.jobs = 2: must be keyed by a queue declared in Queues[]',
    );
  });
});
