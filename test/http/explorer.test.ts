// The explorer page in a real browser: playwright-core driving Debian's chromium (headless) against a broker
// on 127.0.0.1. Open the page, sign in with the policy key, see a dead-lettered message with its reason and
// description, redrive it with the confirmation accepted, and see the counts change; see an active message
// under the SDK's property names with its enqueued and expiry times, and when the page last refreshed. Skipped only on a developer machine without
// /usr/bin/chromium; CI installs it (.ci/run), so there it always runs.

import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { chromiumAvailable, launchChromium, type LaunchedChromium } from '../helpers/chromium.js';
import rhea from 'rhea';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import { deadLetterAll, startHttpBroker, type HttpBroker } from '../helpers/http.js';

/** Set PEEKLOCK_SCREENSHOT=1 to refresh the screenshot in docs/operations.md (test/http/explorer.png). */
const SCREENSHOT = process.env.PEEKLOCK_SCREENSHOT
  ? fileURLToPath(new URL('./explorer.png', import.meta.url))
  : path.join(os.tmpdir(), `peeklock-explorer-${process.pid}.png`);
const ACTIVE_SCREENSHOT = path.join(os.tmpdir(), `peeklock-explorer-active-${process.pid}.png`);
const HOUR = 3_600_000;
/** How the page writes a time: ISO 8601 UTC to the second, with a space for the T. */
const shown = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
/** The Properties cell read back: one `name: JSON value` per line. */
const parseProps = (text: string | null): Record<string, unknown> =>
  Object.fromEntries(
    (text ?? '').split('\n').map((line) => {
      const at = line.indexOf(': ');
      return [line.slice(0, at), JSON.parse(line.slice(at + 2))];
    }),
  );

let b: HttpBroker;
let browser: LaunchedChromium | undefined;
let page: Page;
const requested: string[] = [];

describe.skipIf(!chromiumAvailable && !process.env.CI)('explorer page (chromium)', () => {
  beforeAll(async () => {
    b = await startHttpBroker([{ Name: 'orders' }, { Name: 'jobs' }]);
    await deadLetterAll(b.broker, 'orders', [
      { id: 'order-42', reason: 'PoisonPayload', props: { tenant: 'contoso' } },
    ]);
    const job = rhea.message.encode({
      message_id: 'job-1',
      correlation_id: 'corr-7',
      content_type: 'application/json',
      subject: 'resize',
      reply_to: 'results',
      ttl: HOUR,
      application_properties: { tenant: 'fabrikam' },
      body: { task: 'resize' },
    } as never) as Buffer;
    await b.broker.send('jobs', [parseIncoming(job)]);
    browser = await launchChromium(720);
    page = browser.page;
    page.on('request', (r) => requested.push(r.url()));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await b?.close();
  });

  const count = (entity: string, key: string) => page.locator(`tr[data-entity="${entity}"] td[data-count="${key}"]`);
  const headers = () => page.locator('#messages thead th').allTextContents();
  const field = (row: ReturnType<Page['locator']>, col: string) => row.locator(`td[data-col="${col}"]`).textContent();

  it('shows a dead-lettered message, redrives it after confirmation, and the counts change', async () => {
    await page.goto(b.base + '/');
    await expect(page.title()).resolves.toBe('peeklock explorer');
    await page.fill('#key', 'SAS_KEY_VALUE');
    await page.click('#connect');
    await count('orders', 'deadLettered').filter({ hasText: /^1$/ }).waitFor({ timeout: 10_000 });
    expect(await count('orders', 'active').textContent()).toBe('0');

    await page.click('nav button[data-view="deadletter"]');
    const row = page.locator('#messages tbody tr.message', { hasText: 'order-42' });
    await row.waitFor({ timeout: 10_000 });
    expect(await headers()).toEqual([
      '', // the check-all box of the bulk actions
      'Seq',
      'Message id',
      'State',
      'Deliveries',
      'Enqueued (UTC)',
      'Expires (UTC)',
      'Locked until (UTC)',
      'Dead-letter reason',
      'Dead-letter description',
      'Properties',
      'Body',
      'Actions',
    ]);
    expect(await field(row, 'deadLetterReason')).toBe('PoisonPayload');
    expect(await field(row, 'deadLetterErrorDescription')).toBe('because PoisonPayload');
    const [dead] = b.broker.browse('orders/$DeadLetterQueue');
    expect(await field(row, 'enqueuedTimeUtc')).toBe(shown(dead!.row.enqueuedAt));
    expect(await field(row, 'expiresAtUtc')).toBe('never'); // Service Bus never expires a dead letter
    const props = parseProps(await field(row, 'properties'));
    expect(props).toEqual({ applicationProperties: { tenant: 'contoso' } }); // reason and description have columns
    expect(await field(row, 'body')).toBe('body of order-42');
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    let dialogText = '';
    page.once('dialog', (d) => {
      dialogText = d.message();
      void d.accept();
    });
    await page.click('#redrive-button');
    await page.locator('#status', { hasText: 'Redrive: moved 1, skipped 0, failed 0.' }).waitFor({ timeout: 10_000 });
    expect(dialogText).toMatch(/idempotent/);
    await count('orders', 'deadLettered').filter({ hasText: /^0$/ }).waitFor({ timeout: 10_000 });
    expect(await count('orders', 'active').textContent()).toBe('1');
    expect(b.broker.listEntities()[0]).toMatchObject({ active: 1, deadLettered: 0 });
    await page.locator('#messages tbody', { hasText: 'No messages.' }).waitFor({ timeout: 10_000 });
  });

  it('shows an active message under SDK names with enqueued and expiry times, no dead-letter columns, and the last refresh', async () => {
    await page.click('tr[data-entity="jobs"]');
    await page.click('nav button[data-view="active"]');
    const row = page.locator('#messages tbody tr.message', { hasText: 'job-1' });
    await row.waitFor({ timeout: 10_000 });
    await page.locator('#messages thead th', { hasText: 'Enqueued (UTC)' }).waitFor({ timeout: 10_000 });
    const cols = await headers();
    expect(cols).toEqual([
      '',
      'Seq',
      'Message id',
      'State',
      'Deliveries',
      'Enqueued (UTC)',
      'Expires (UTC)',
      'Locked until (UTC)',
      'Properties',
      'Body',
      'Actions',
    ]);
    expect(await page.locator('#messages td[data-col^="deadLetter"]').count()).toBe(0);

    const [stored] = b.broker.browse('jobs');
    expect(await field(row, 'enqueuedTimeUtc')).toBe(shown(stored!.row.enqueuedAt));
    expect(await field(row, 'expiresAtUtc')).toBe(shown(stored!.row.enqueuedAt + HOUR));
    const propsText = (await field(row, 'properties'))!;
    expect(parseProps(propsText)).toEqual({
      correlationId: 'corr-7',
      contentType: 'application/json',
      subject: 'resize',
      replyTo: 'results',
      timeToLive: HOUR,
      applicationProperties: { tenant: 'fabrikam' },
    });
    for (const amqp of ['message_id', 'correlation_id', 'content_type', 'reply_to', 'application_properties', 'ttl'])
      expect(propsText).not.toContain(amqp);

    // The refresh time is the browser's clock, in UTC, and moves with the 2 s auto-refresh.
    const refreshed = page.locator('#refreshed');
    expect(await refreshed.textContent()).toMatch(/^Last refreshed \d\d:\d\d:\d\d UTC$/);
    const at = (await refreshed.getAttribute('data-at'))!;
    expect(Math.abs(Date.now() - Date.parse(at))).toBeLessThan(5_000);
    await page.waitForFunction((prev) => document.querySelector('#refreshed')?.getAttribute('data-at') !== prev, at, {
      timeout: 10_000,
    });
    await page.screenshot({ path: ACTIVE_SCREENSHOT, fullPage: true });
    // Works offline: everything the page loads comes from the broker itself.
    expect(requested.length).toBeGreaterThan(3);
    expect(requested.filter((u) => !u.startsWith(b.base + '/'))).toEqual([]);
  });

  it('shows the API error when the key is wrong and cancels a purge that is not confirmed', async () => {
    await page.click('tr[data-entity="orders"]');
    let asked = '';
    page.once('dialog', (d) => {
      asked = d.message();
      void d.dismiss();
    });
    await page.click('nav button[data-view="active"]');
    await page.click('#purge');
    await new Promise((r) => setTimeout(r, 200)); // a purge that went ahead would have landed by now
    expect(asked).toBe('Delete every message of orders for good?');
    expect(b.broker.listEntities()[0]).toMatchObject({ active: 1 });

    await page.fill('#key', 'wrong');
    await page.click('#connect');
    await page
      .locator('#status.error', { hasText: 'The token signature does not match.' })
      .waitFor({ timeout: 10_000 });
    // A failed refresh leaves the last good time: it says how old the figures on the page are.
    const before = await page.locator('#refreshed').getAttribute('data-at');
    await new Promise((r) => setTimeout(r, 2_500)); // one more auto-refresh, which fails too
    expect(await page.locator('#refreshed').getAttribute('data-at')).toBe(before);
    await page.locator('#status.error').waitFor({ timeout: 1_000 });
  });
});
