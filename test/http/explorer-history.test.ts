// The explorer's delivery history in a real browser (issue 39): a message whose first holder's lock lapsed while
// it was still attached, taken by a second receiver, then settled late by the first. The tree shows the entity's
// overlap badge; the message detail shows both attempts as a timeline, who held each, the late complete, the
// overlap badge and the overlap's line. Skipped only on a developer machine without /usr/bin/chromium.

import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseIncoming } from '../../src/amqp/codec.js';
import type { AttemptHolder } from '../../src/broker/ports.js';
import { chromiumAvailable, launchChromium, type LaunchedChromium } from '../helpers/chromium.js';
import { amqpMessage, CollectingConsumer, startHttpBroker, until, type HttpBroker } from '../helpers/http.js';

/** A collecting consumer that says who it is, as a protocol link does. */
class NamedConsumer extends CollectingConsumer {
  constructor(readonly client: AttemptHolder) {
    super(1, `${client.connection}/${client.link}`);
  }
}

let b: HttpBroker;
let browser: LaunchedChromium | undefined;
let page: Page;
const errors: string[] = [];

describe.skipIf(!chromiumAvailable && !process.env.CI)('explorer delivery history (chromium)', () => {
  beforeAll(async () => {
    b = await startHttpBroker([{ Name: 'slow', Properties: { LockDuration: 'PT5M' } }]);
    await b.broker.send('slow', [parseIncoming(amqpMessage('invoice-1', 'body'))]);
    const first = new NamedConsumer({ container: 'worker-a', connection: 'c1', link: 'l1', receiver: 'receiver-A' });
    const h1 = b.broker.attach('slow', first);
    h1.setCredit(1);
    await until(() => first.got.length === 1);
    const lapsed = first.got[0]!.row.lock!.token;
    b.broker.expireLock(lapsed);
    const second = new NamedConsumer({ container: 'worker-b', connection: 'c2', link: 'l2', receiver: 'receiver-B' });
    const h2 = b.broker.attach('slow', second);
    h2.setCredit(1);
    await until(() => second.got.length === 1);
    await expect(b.broker.settle(lapsed, { kind: 'complete' })).rejects.toMatchObject({ code: 'LockLost' });
    await until(() => (b.broker.messageHistory('slow', 1)?.deliveries[0]?.late?.length ?? 0) === 1);
    browser = await launchChromium(900);
    page = browser.page;
    page.on('pageerror', (e) => errors.push(e.message));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await b?.close();
  });

  it('shows the overlap badge on the entity and the message, and both attempts as a timeline', async () => {
    await page.goto(b.base + '/#entity=slow');
    if ((await page.inputValue('#key')) === '') {
      await page.fill('#key', 'SAS_KEY_VALUE');
      await page.click('#connect');
    }
    const entityBadge = page.locator('tr[data-entity="slow"] .badge.overlap');
    await entityBadge.waitFor({ state: 'visible', timeout: 10_000 });
    expect(await entityBadge.textContent()).toBe('1 overlapping');
    await page.click('#messages tr.message[data-seq="1"]');
    await page.locator('#detail:not([hidden])').waitFor({ timeout: 10_000 });
    expect(await page.locator('#detail-overlap').isVisible()).toBe(true);
    expect(await page.locator('#detail-overlap').textContent()).toBe('1 overlap');
    const rows = await page
      .locator('#detail-timeline tbody tr')
      .evaluateAll((trs) => trs.map((tr) => ({ attempt: (tr as HTMLElement).dataset.attempt, cls: tr.className, cells: [...tr.querySelectorAll('td')].slice(0, 5).map((td) => td.textContent) })));
    expect(rows).toEqual([
      { attempt: '1', cls: 'attempt overlapping', cells: ['#1', 'receiver-A · worker-a · l1', expect.any(String), 'lockExpired', '0'] },
      { attempt: '2', cls: 'attempt overlapping', cells: ['#2', 'receiver-B · worker-b · l2', expect.any(String), 'holding', '0'] },
    ]);
    expect(await page.locator('#detail-timeline tr[data-attempt="1"] .late').textContent()).toMatch(/^late complete at /);
    expect(await page.locator('#detail-timeline tr[data-attempt="2"] .bar.open').count()).toBe(1);
    expect(await page.locator('#detail-events').textContent()).toMatch(/overlap: attempts #1 and #2 held at once from .*; #1's complete came late/);
    expect(errors).toEqual([]);
    await page.locator('#detail').screenshot({ path: path.join(os.tmpdir(), `peeklock-explorer-history-${process.pid}.png`) });
  });
});
