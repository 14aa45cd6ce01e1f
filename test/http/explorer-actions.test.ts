// The explorer's actions in a real browser (playwright-core driving Debian's chromium, headless, against a
// broker on 127.0.0.1): a message sent from the page's form is received by the SDK with its typed
// properties; a dead-lettered message resubmitted from its row is received again; one message is deleted
// from its row; a bulk delete on a filter confirms with the count the broker reported; a queue, a topic and a
// subscription are created and deleted from the page. Skipped only on a developer machine without /usr/bin/chromium (CI installs it).

import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServiceBusClient } from '@azure/service-bus';
import type { Page } from 'playwright-core';
import { chromiumAvailable, launchChromium, type LaunchedChromium } from '../helpers/chromium.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import { amqpMessage, deadLetterAll, startHttpBroker, type HttpBroker } from '../helpers/http.js';

/** Set PEEKLOCK_SCREENSHOT=1 to refresh the screenshot of the actions in docs/operations.md (test/http/explorer-actions.png). */
const SCREENSHOT = process.env.PEEKLOCK_SCREENSHOT
  ? fileURLToPath(new URL('./explorer-actions.png', import.meta.url))
  : path.join(os.tmpdir(), `peeklock-explorer-actions-${process.pid}.png`);

let b: HttpBroker;
let client: ServiceBusClient;
let browser: LaunchedChromium | undefined;
let page: Page;
const errors: string[] = [];

describe.skipIf(!chromiumAvailable && !process.env.CI)('explorer actions (chromium)', () => {
  beforeAll(async () => {
    b = await startHttpBroker([{ Name: 'orders' }, { Name: 'jobs' }, { Name: 'audit' }]);
    client = new ServiceBusClient(
      `Endpoint=sb://127.0.0.1:${b.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
      { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } },
    );
    browser = await launchChromium(900);
    page = browser.page;
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(b.base + '/');
    await page.fill('#key', 'SAS_KEY_VALUE');
    await page.click('#connect');
    await page.locator('tr[data-entity="orders"]').waitFor({ timeout: 10_000 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await client?.close();
    await b?.close();
  });

  const counts = (p: string) => b.broker.listEntities().find((e) => e.path === p);
  /** Accepts the next confirmation and resolves with its text. */
  const acceptNext = () =>
    new Promise<string>((resolve) =>
      page.once('dialog', (d) => {
        resolve(d.message());
        void d.accept();
      }),
    );
  async function receiveOne(queue: string) {
    const receiver = client.createReceiver(queue);
    try {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
      if (m) await receiver.completeMessage(m);
      return m;
    } finally {
      await receiver.close();
    }
  }

  it('sends a message from the form that the SDK receives with its properties', async () => {
    await page.click('tr[data-entity="audit"]');
    await page.click('#send-panel summary');
    expect(await page.inputValue('#send-to')).toBe('audit'); // the selection is the default target
    await page.fill('#send-body', '{"order":42}');
    await page.fill('#send-content-type', 'application/json');
    await page.fill('#send-subject', 'order.created');
    await page.fill('#send-message-id', 'from-the-page');
    await page.click('#send-add-prop');
    await page.fill('#send-props .p-name', 'tenant');
    await page.fill('#send-props .p-value', 'contoso');
    await page.click('#send-add-prop');
    await page.locator('#send-props .p-name').nth(1).fill('attempt');
    await page.locator('#send-props .p-type').nth(1).selectOption('long');
    await page.locator('#send-props .p-value').nth(1).fill('3');
    await page.click('#send-button');
    await page.locator('#status', { hasText: 'Sent message from-the-page to audit.' }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    const m = await receiveOne('audit');
    expect(m).toMatchObject({ messageId: 'from-the-page', body: { order: 42 }, contentType: 'application/json', subject: 'order.created' });
    expect(m?.applicationProperties).toEqual({ tenant: 'contoso', attempt: 3 });
  });

  it('resubmits a dead-lettered message from its row, and the SDK receives it again', async () => {
    await deadLetterAll(b.broker, 'orders', [{ id: 'order-7', reason: 'PoisonPayload' }]);
    await page.click('tr[data-entity="orders"]');
    await page.click('nav button[data-view="deadletter"]');
    const row = page.locator('#messages tbody tr.message', { hasText: 'order-7' });
    await row.waitFor({ timeout: 10_000 });
    const dialog = acceptNext();
    await row.locator('button[data-action="resubmit"]').click();
    expect(await dialog).toMatch(/^Resubmit 1 message\(s\) number \d+ of orders to orders\?$/);
    await page.locator('#status', { hasText: 'Resubmit: 1 message(s) from orders/$DeadLetterQueue to orders.' }).waitFor({ timeout: 10_000 });
    expect(counts('orders')).toMatchObject({ active: 1, deadLettered: 0 });
    const m = await receiveOne('orders');
    expect(m).toMatchObject({ messageId: 'order-7', body: 'body of order-7', deliveryCount: 0 });
  });

  it('deletes one message from its row', async () => {
    await b.broker.send('jobs', ['keep', 'drop'].map((id) => parseIncoming(amqpMessage(id, id))));
    await page.click('tr[data-entity="jobs"]');
    await page.click('nav button[data-view="active"]');
    const row = page.locator('#messages tbody tr.message', { hasText: 'drop' });
    await row.waitFor({ timeout: 10_000 });
    const dialog = acceptNext();
    await row.locator('button[data-action="delete"]').click();
    expect(await dialog).toMatch(/^Delete 1 message\(s\) number \d+ of jobs for good\?$/);
    await page.locator('#status', { hasText: 'Delete: 1 message(s) from jobs.' }).waitFor({ timeout: 10_000 });
    expect(b.broker.browse('jobs').map((x) => x.row.messageId)).toEqual(['keep']);
  });

  it('bulk-deletes the dead letters matching a reason after a confirmation that shows their count', async () => {
    await deadLetterAll(b.broker, 'orders', [
      { id: 'p1', reason: 'Poison' },
      { id: 'p2', reason: 'Poison' },
      { id: 't1', reason: 'Timeout' },
    ]);
    await page.click('tr[data-entity="orders"]');
    await page.click('nav button[data-view="deadletter"]');
    await page.locator('#messages tbody tr.message', { hasText: 't1' }).waitFor({ timeout: 10_000 });
    await page.fill('#f-reason', 'Poison');
    const dialog = acceptNext();
    await page.click('#bulk-delete');
    expect(await dialog).toBe('Delete 2 message(s) matching {"reason":"Poison"} of orders for good?');
    await page.locator('#status', { hasText: 'Delete: 2 message(s) from orders/$DeadLetterQueue.' }).waitFor({ timeout: 10_000 });
    expect(b.broker.browse('orders/$DeadLetterQueue').map((x) => x.row.messageId)).toEqual(['t1']);
    await page.fill('#f-reason', '');
  });

  it('creates a queue from the page and deletes it again', async () => {
    await page.click('#entity-panel summary');
    await page.selectOption('#new-kind', 'queue');
    await page.fill('#new-name', 'made-here');
    await page.click('#create-button');
    await page.locator('tr[data-entity="made-here"]').waitFor({ timeout: 10_000 });
    expect(b.broker.getQueue('made-here')).toBeDefined();
    expect(await page.evaluate(() => location.hash)).toContain('entity=made-here');
    const dialog = acceptNext();
    await page.click('#delete-entity');
    expect(await dialog).toMatch(/^Delete the queue made-here/);
    await page.locator('#status', { hasText: 'Deleted queue made-here.' }).waitFor({ timeout: 10_000 });
    await page.locator('tr[data-entity="made-here"]').waitFor({ state: 'detached', timeout: 10_000 });
    expect(b.broker.getQueue('made-here')).toBeUndefined();
  });

  it('creates a topic and a subscription from the page, and deleting the topic removes both', async () => {
    await page.selectOption('#new-kind', 'topic');
    await page.fill('#new-name', 'news');
    await page.click('#create-button');
    await page.locator('#status', { hasText: 'Created topic news.' }).waitFor({ timeout: 10_000 });
    await page.selectOption('#new-kind', 'subscription');
    await page.fill('#new-name', 'all');
    await page.fill('#new-topic', 'news');
    await page.click('#create-button');
    await page.locator('tr[data-entity="news/Subscriptions/all"]').waitFor({ timeout: 10_000 });
    // Created with the service's default rule: a send to the topic reaches it.
    expect(await page.locator('tr[data-entity="news/Subscriptions/all"] .rules').textContent()).toBe('$Default: 1=1');
    await page.click('tr[data-topic="news"]');
    const dialog = acceptNext();
    await page.click('#delete-entity');
    expect(await dialog).toMatch(/^Delete the topic news/);
    await page.locator('tr[data-topic="news"]').waitFor({ state: 'detached', timeout: 10_000 });
    expect(b.broker.getTopic('news')).toBeUndefined();
    expect(errors).toEqual([]);
  });
});
