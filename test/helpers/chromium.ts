// Debian's chromium driven by playwright-core for the explorer page tests: one headless browser with a throwaway
// profile, launched offline-friendly (no background networking, updates or sync) so the page's own requests are
// the only ones made.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';

/** Where Debian's chromium package puts the browser. */
export const CHROMIUM = '/usr/bin/chromium';
/** Whether the browser is installed (the page tests are skipped outside CI when it is not). */
export const chromiumAvailable = fs.existsSync(CHROMIUM);

/** A launched browser: its first page, and a close that also removes the profile. */
export interface LaunchedChromium {
  page: Page;
  close(): Promise<void>;
}

/** Launches headless chromium with a fresh profile and a 1280 × `height` viewport. */
export async function launchChromium(height: number): Promise<LaunchedChromium> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height },
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
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    page,
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
