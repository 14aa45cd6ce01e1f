// The shipped monitoring files against a running broker: config/prometheus-alerts.yml (parsed as YAML, each
// rule with an expression) and config/grafana-dashboard.json (parsed as JSON, each panel with a query) may use
// only metrics that /metrics exports, so renaming a metric without updating them fails here. The oldest
// message age gauge the age alert reads follows the broker's clock and ignores deferred messages.

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseIncoming } from '../../src/amqp/codec.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { amqpMessage, CollectingConsumer, startHttpBroker, until, type HttpBroker } from '../helpers/http.js';

const read = (file: string) => fs.readFileSync(fileURLToPath(new URL(`../../config/${file}`, import.meta.url)), 'utf8');
/** Metric names in a PromQL expression; a histogram's series name the histogram. */
const metricsIn = (expr: string) => (expr.match(/peeklock_[a-z_]+/g) ?? []).map((m) => m.replace(/_(bucket|sum|count)$/, ''));

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  annotations: { summary: string; description: string };
}
interface Panel {
  title: string;
  targets: { expr: string }[];
}

let b: HttpBroker;
let exported: Set<string>;
const clock = new FakeClock();

beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'orders' }, { Name: 'idle' }], { clock });
  const text = await (await fetch(b.base + '/metrics')).text();
  exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
});
afterAll(() => b.close());

describe('shipped monitoring files', () => {
  it('alert rules cover dead-letter depth, oldest message age and lock expiries, using only exported metrics', () => {
    const doc = parse(read('prometheus-alerts.yml')) as { groups: { name: string; rules: Rule[] }[] };
    const rules = doc.groups.flatMap((g) => g.rules);
    const used = new Set(rules.flatMap((r) => metricsIn(r.expr)));
    for (const name of ['peeklock_dead_letter_alert', 'peeklock_oldest_message_age_seconds', 'peeklock_lock_expiries_total'])
      expect(used, name).toContain(name);
    for (const r of rules) {
      expect(r.expr, r.alert).toBeTruthy();
      expect(r.annotations.summary, r.alert).toBeTruthy();
      for (const name of [...metricsIn(r.expr), ...metricsIn(r.annotations.description)])
        expect(exported.has(name), `${r.alert} uses ${name}`).toBe(true);
    }
  });

  it('the Grafana dashboard queries only exported metrics, and its entity variable reads a label they carry', () => {
    const dash = JSON.parse(read('grafana-dashboard.json')) as {
      panels: Panel[];
      templating: { list: { name: string; definition: string }[] };
    };
    expect(dash.panels.length).toBeGreaterThanOrEqual(8);
    const exprs = [...dash.panels.flatMap((p) => p.targets.map((t) => t.expr)), ...dash.templating.list.map((v) => v.definition)];
    const used = new Set(exprs.flatMap(metricsIn));
    expect(used.size).toBeGreaterThanOrEqual(12);
    for (const name of used) expect(exported.has(name), name).toBe(true);
    for (const p of dash.panels) expect(p.targets.length, p.title).toBeGreaterThan(0);
    expect(dash.templating.list.find((v) => v.name === 'entity')?.definition).toBe('label_values(peeklock_messages, entity)');
  });
});

describe('peeklock_oldest_message_age_seconds', () => {
  const age = async (entity: string) => {
    const text = await (await fetch(b.base + '/metrics')).text();
    const line = text.split('\n').find((l) => l.startsWith(`peeklock_oldest_message_age_seconds{entity="${entity}"} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };

  it('is the age of the oldest waiting message, locked ones included, deferred ones not, and 0 when none waits', async () => {
    await b.broker.send('orders', [parseIncoming(amqpMessage('first', 'a'))]);
    clock.advance(120_000);
    await b.broker.send('orders', [parseIncoming(amqpMessage('second', 'b'))]);
    clock.advance(30_000);
    expect(await age('orders')).toBe(150);
    expect(await age('idle')).toBe(0);
    const consumer = new CollectingConsumer(1);
    const h = b.broker.attach('orders', consumer);
    h.setCredit(consumer.credit);
    await until(() => consumer.got.length === 1);
    h.detach();
    expect(await age('orders')).toBe(150); // locked: still waiting to be completed
    await b.broker.settle(consumer.got[0]!.row.lock!.token, { kind: 'defer' });
    expect(await age('orders')).toBe(30); // deferred on purpose: the next one is the oldest
  });
});
