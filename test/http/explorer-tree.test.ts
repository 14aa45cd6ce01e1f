// The explorer's tree and charts in a real browser (playwright-core driving Debian's chromium, headless) against
// brokers on 127.0.0.1: a topic with two subscriptions shows their rules; the filter and the selection live in
// the URL and survive a reload; the charts' lines carry the sampled numbers and follow a burst of sends; and a
// namespace of 1,000 queues loads and refreshes (timed and reported; only a generous bound is asserted, the
// benchmark owns performance). Skipped only on a developer machine without /usr/bin/chromium.

import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { chromiumAvailable, launchChromium, type LaunchedChromium } from '../helpers/chromium.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import rhea from 'rhea';
import { amqpMessage, CollectingConsumer, deadLetterAll, startHttpBroker, until, type HttpBroker } from '../helpers/http.js';
import { EVENTS_TOPIC } from '../helpers/topics.js';

const KEY = 'SAS_KEY_VALUE';
const BIG = 1000;
/** With PEEKLOCK_SCREENSHOT=1 the tree-and-detail screenshot of docs/operations.md is refreshed. */
const DETAIL_SCREENSHOT = process.env.PEEKLOCK_SCREENSHOT ? fileURLToPath(new URL('./explorer-detail.png', import.meta.url)) : null;

let browser: LaunchedChromium | undefined;
let page: Page;
let b: HttpBroker;
let many: HttpBroker;
const errors: string[] = [];

async function connect(url: string): Promise<void> {
  await page.goto(url);
  if ((await page.inputValue('#key')) === '') {
    await page.fill('#key', KEY);
    await page.click('#connect');
  }
}

/** The numbers a chart line plots, read from the DOM. */
const values = (chart: string, series: string): Promise<number[]> =>
  page
    .locator(`#${chart} polyline[data-series="${series}"]`)
    .getAttribute('data-values')
    .then((v) => JSON.parse(v ?? '[]') as number[]);

describe.skipIf(!chromiumAvailable && !process.env.CI)('explorer tree and charts (chromium)', () => {
  beforeAll(async () => {
    b = await startHttpBroker([{ Name: 'orders' }, { Name: 'details', Properties: { LockDuration: 'PT5M' } }], {
      topics: [EVENTS_TOPIC],
    });
    await deadLetterAll(b.broker, 'orders', [{ id: 'bad-1', reason: 'Poison' }]);
    many = await startHttpBroker(Array.from({ length: BIG }, (_, i) => ({ Name: `q-${String(i).padStart(4, '0')}` })));
    browser = await launchChromium(900);
    page = browser.page;
    page.on('pageerror', (e) => errors.push(e.message));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await b?.close();
    await many?.close();
  });

  it('shows a topic with its two subscriptions and their rules as text, beside the queues', async () => {
    await connect(b.base + '/');
    await page.locator('tr[data-topic="events"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('tr[data-topic="events"]').textContent()).toContain('2 subscription(s)');
    expect(await page.locator('#shown').textContent()).toBe('sbemulatorns: 4 of 4 entities');
    const big = page.locator('tr[data-entity="events/Subscriptions/big"]');
    const eu = page.locator('tr[data-entity="events/Subscriptions/eu"]');
    expect(await big.locator('.rules').textContent()).toBe("over-1000: amount > 1000 | SET priority = 'high'");
    expect(await eu.locator('.rules').textContent()).toBe('eu-only: correlation(label="OrderPaid", region="eu")');
    // Tree order: queues, then the topic followed by its subscriptions.
    const order = await page
      .locator('#entities tbody tr')
      .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.entity ?? 'topic:' + (r as HTMLElement).dataset.topic));
    expect(order).toEqual(['orders', 'details', 'topic:events', 'events/Subscriptions/big', 'events/Subscriptions/eu']);

    // A send to the topic reaches the subscription whose rule matches; its counts follow.
    await b.broker.send('events', [parseIncoming(amqpMessage('e1', 'x', { amount: 5000 }))]);
    await big.locator('td[data-count="active"]').filter({ hasText: /^1$/ }).waitFor({ timeout: 10_000 });
    expect(await eu.locator('td[data-count="active"]').textContent()).toBe('0');
    expect(await page.locator('tr[data-entity="orders"] td[data-count="deadLettered"]').textContent()).toBe('1');
  });

  it('keeps the filter and the selection in the URL, so a reload or a shared link shows the same view', async () => {
    await page.fill('#filter', 'eu');
    await page.waitForFunction(() => location.hash.includes('filter=eu'), null, { timeout: 5_000 });
    await page.locator('tr[data-entity="orders"]').waitFor({ state: 'detached', timeout: 5_000 });
    expect(await page.locator('#entities tbody tr').count()).toBe(2); // the topic and its matching subscription
    await page.click('tr[data-entity="events/Subscriptions/eu"]');
    await page.waitForFunction(() => location.hash.includes('entity=events%2FSubscriptions%2Feu'), null, { timeout: 5_000 });

    await page.reload();
    await page.locator('tr.selected[data-entity="events/Subscriptions/eu"]').waitFor({ timeout: 10_000 });
    expect(await page.inputValue('#filter')).toBe('eu');
    expect(await page.locator('#selected').textContent()).toBe('events/Subscriptions/eu');

    // A shared link straight to a dead-letter queue; clicking a dead-letter count opens it too.
    await connect(b.base + '/#entity=orders&view=deadletter');
    await page.locator('#messages tbody tr.message', { hasText: 'bad-1' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('nav button.on').getAttribute('data-view')).toBe('deadletter');
    await page.click('nav button[data-view="active"]');
    await page.waitForFunction(() => !location.hash.includes('view='), null, { timeout: 5_000 });
    await page.click('tr[data-entity="orders"] td[data-count="deadLettered"]');
    await page.waitForFunction(() => location.hash.includes('view=deadletter'), null, { timeout: 5_000 });
    await page.locator('#messages tbody tr.message', { hasText: 'bad-1' }).waitFor({ timeout: 10_000 });
  });

  it('draws the sampled depth and rates, and the lines follow a burst of sends', async () => {
    await connect(b.base + '/#entity=orders');
    b.http.history.sample(); // takes up the events before this test (the dead-lettering in beforeAll)
    b.http.history.sample(); // a quiet interval before the burst
    await b.broker.send('orders', Array.from({ length: 25 }, (_, i) => parseIncoming(amqpMessage(`burst-${i}`, 'x'))));
    b.http.history.sample(); // the burst's interval
    b.http.history.sample(); // a quiet one after it
    // The page redraws on its 2 s refresh; wait for the burst's sample and the quiet one after it. (The
    // broker's own 10 s timer may sample too, so the burst is found in the series rather than by position.)
    await page.waitForFunction(
      () => {
        const v = JSON.parse(document.querySelector('#entity-rates polyline[data-series="sent"]')?.getAttribute('data-values') ?? '[]');
        // The namespace is fetched just before the entity: wait until both show the same samples.
        const times = (id: string) => document.querySelector(id)?.getAttribute('data-times');
        return v.indexOf(25) >= 1 && v.indexOf(25) < v.length - 1 && times('#ns-depth') === times('#entity-depth');
      },
      null,
      { timeout: 10_000 },
    );
    const sent = await values('entity-rates', 'sent');
    const active = await values('entity-depth', 'active');
    const at = sent.indexOf(25);
    expect(sent.slice(at - 1)).toEqual([0, 25, ...sent.slice(at + 1).map(() => 0)]); // quiet, the burst, quiet
    expect(active.slice(at - 1)).toEqual([0, 25, ...active.slice(at + 1).map(() => 25)]); // the depth stays up
    expect(sent.slice(at + 1).length).toBeGreaterThanOrEqual(1);
    expect((await values('entity-depth', 'deadLettered')).slice(-1)).toEqual([1]);
    const points = await page.locator('#entity-rates polyline[data-series="sent"]').getAttribute('points');
    expect(points!.trim().split(' ')).toHaveLength((await values('entity-rates', 'sent')).length);
    // The namespace sums every entity (the topic's send earlier included) and ranks the busiest.
    expect((await values('ns-depth', 'active')).at(-1)).toBe(26); // orders' 25 and the subscription's 1
    expect(await page.locator('#busiest li').first().getAttribute('data-entity')).toBe('orders');
    expect(await page.locator('#entity-title').textContent()).toBe('orders');
  });

  it('shows a message in full: system properties by SDK name, typed application properties, the body as JSON or hex, and its lock', async () => {
    const json = rhea.message.encode({
      message_id: 'order-7',
      correlation_id: 'corr-7',
      content_type: 'application/json',
      subject: 'OrderPlaced',
      application_properties: { tenant: 'contoso', count: 3, ratio: 1.5, urgent: true },
      body: JSON.stringify({ id: 7, lines: [{ sku: 'A', qty: 2 }] }),
    } as never) as Buffer;
    const binary = rhea.message.encode({ message_id: 'blob-1', body: rhea.message.data_section(Buffer.from([0, 1, 2, 0xff])) } as never) as Buffer;
    await b.broker.send('details', [parseIncoming(json), parseIncoming(binary)]);
    const consumer = new CollectingConsumer(1, 'conn-9/receiver-1');
    const handle = b.broker.attach('details', consumer);
    handle.setCredit(consumer.credit);
    await until(() => consumer.got.length === 1);
    handle.detach();

    await connect(b.base + '/#entity=details');
    await page.click('#messages tr.message[data-seq="1"]');
    await page.locator('#detail:not([hidden])').waitFor({ timeout: 10_000 });
    const sys = (k: string) => page.locator(`#detail-system tr[data-field="${k}"] td`).textContent();
    expect(await sys('messageId')).toBe('order-7');
    expect(await sys('correlationId')).toBe('corr-7');
    expect(await sys('subject')).toBe('OrderPlaced');
    expect(await sys('deliveryCount')).toBe('1');
    expect(await sys('sessionId')).toBe('null'); // every system property is listed, unset ones as null
    expect(await sys('deadLetterSource')).toBe('null');
    const types = await page
      .locator('#detail-app tbody tr')
      .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    expect(types).toEqual([
      ['tenant', 'string', '"contoso"'],
      ['count', 'integer', '3'],
      ['ratio', 'double', '1.5'],
      ['urgent', 'boolean', 'true'],
    ]);
    expect(await page.locator('#detail-body').getAttribute('data-format')).toBe('json');
    expect(JSON.parse((await page.locator('#detail-body').textContent())!)).toEqual({ id: 7, lines: [{ sku: 'A', qty: 2 }] });
    expect(await page.locator('#detail-body').textContent()).toContain('\n  "lines": [');
    const lock = (await page.locator('#detail-lock').textContent())!;
    expect(lock).toMatch(/^Locked by conn-9\/receiver-1 for \d+ s more/);
    const remaining = Number(await page.locator('#detail-lock').getAttribute('data-remaining-ms'));
    expect(remaining).toBeGreaterThan(200_000); // a five-minute lock taken moments ago
    expect(remaining).toBeLessThanOrEqual(300_000);
    await page.waitForFunction(() => location.hash.includes('seq=1'), null, { timeout: 5_000 });
    if (DETAIL_SCREENSHOT) await page.screenshot({ path: DETAIL_SCREENSHOT, fullPage: true });

    await page.click('#messages tr.message[data-seq="2"]');
    await page.locator('#detail-title', { hasText: 'Message 2 of details' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('#detail-body').getAttribute('data-format')).toBe('hex');
    expect(await page.locator('#detail-body').textContent()).toBe('00000000  ' + '00 01 02 ff'.padEnd(48) + ' ....'); // offset, bytes, printable text
    expect(await page.locator('#detail-lock').textContent()).toBe('Not locked.');
    await page.selectOption('#detail-format', 'text');
    expect(await page.locator('#detail-body').textContent()).toBe('The body is binary; choose hex.');
  });

  it(`loads and refreshes a namespace of ${BIG} queues`, async () => {
    const t0 = Date.now();
    await connect(many.base + '/'); // another origin: the key is asked for again
    await page.locator(`tr[data-entity="q-${String(BIG - 1).padStart(4, '0')}"]`).waitFor({ timeout: 20_000 });
    const loadMs = Date.now() - t0;
    expect(await page.locator('#entities tbody tr.entity').count()).toBe(BIG);
    // One refresh (tree, charts and messages) as the page times it (a User Timing measure): the next one to start.
    const refreshMs = await page.evaluate(async () => {
      const since = performance.now();
      for (let i = 0; i < 300; i++) {
        const m = performance.getEntriesByName('explorer refresh').find((e) => e.startTime >= since);
        if (m) return m.duration;
        await new Promise((r) => setTimeout(r, 50));
      }
      return Infinity;
    });
    // A count change shows up on the next refresh, in place.
    await many.broker.send('q-0500', [parseIncoming(amqpMessage('m', 'x'))]);
    await page.locator('tr[data-entity="q-0500"] td[data-count="active"]').filter({ hasText: /^1$/ }).waitFor({ timeout: 10_000 });
    console.info(`explorer with ${BIG} queues: first load ${loadMs} ms, one refresh ${refreshMs.toFixed(0)} ms`);
    expect(await page.locator('#status.error').count()).toBe(0);
    expect(refreshMs).toBeLessThan(10_000); // generous: a hang, not a slow machine, fails this
    expect(errors).toEqual([]);
  });
});
