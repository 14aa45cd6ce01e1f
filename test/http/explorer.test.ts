// The explorer page in a real browser: playwright-core driving Debian's chromium (headless) against a broker
// on 127.0.0.1. Open the page, sign in with the policy key, see a dead-lettered message, redrive it with
// the confirmation accepted, and see the counts change. Skipped only on a developer machine without
// /usr/bin/chromium; CI installs it (.ci/run), so there it always runs.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import { amqpMessage, deadLetterAll, startHttpBroker, type HttpBroker } from '../helpers/http.js';

const CHROMIUM = '/usr/bin/chromium';
const available = fs.existsSync(CHROMIUM);
/** Set PEEKLOCK_SCREENSHOT=1 to refresh the README's screenshot (test/http/explorer.png). */
const SCREENSHOT = process.env.PEEKLOCK_SCREENSHOT
  ? fileURLToPath(new URL('./explorer.png', import.meta.url))
  : path.join(os.tmpdir(), `peeklock-explorer-${process.pid}.png`);

let b: HttpBroker;
let context: BrowserContext;
let page: Page;
let profile: string;

describe.skipIf(!available && !process.env.CI)('explorer page (chromium)', () => {
  beforeAll(async () => {
    b = await startHttpBroker([{ Name: 'orders' }, { Name: 'jobs' }]);
    await deadLetterAll(b.broker, 'orders', [
      { id: 'order-42', reason: 'PoisonPayload', props: { tenant: 'contoso' } },
    ]);
    await b.broker.send('jobs', [parseIncoming(amqpMessage('job-1', { task: 'resize' }))]);
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 720 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await b?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  const count = (entity: string, key: string) => page.locator(`tr[data-entity="${entity}"] td[data-count="${key}"]`);

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
    expect(await row.textContent()).toContain('PoisonPayload');
    expect(await row.textContent()).toContain('contoso');
    expect(await row.textContent()).toContain('body of order-42');
    await page.screenshot({ path: SCREENSHOT });

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

  it('shows the API error when the key is wrong and cancels a purge that is not confirmed', async () => {
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
  });
});
