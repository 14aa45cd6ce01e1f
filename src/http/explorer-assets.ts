// The explorer page's files as `npm run build` leaves them (vite bundles src/explorer into dist/explorer): the
// page at `/` and its script and stylesheet under /explorer/assets/, read once and served from memory. The
// asset names carry a hash of their content, so a browser may keep them for good; the page itself is never
// cached, so a new build is seen on the next load. The same path resolves from src/http (tests run the
// TypeScript) and from dist/http (the package): both sit two levels under the package root.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the built page lives. */
export const EXPLORER_DIR = fileURLToPath(new URL('../../dist/explorer/', import.meta.url));
/** The URL prefix of the page's script and stylesheet (vite's `--base` in package.json's build). */
export const ASSET_PREFIX = '/explorer/assets/';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** One file to answer with. */
export interface Asset {
  body: Buffer;
  headers: Record<string, string>;
}

/** The built page and its assets, or null for a checkout that was never built. */
export interface ExplorerAssets {
  page: Asset | null;
  assets: Map<string, Asset>;
}

/** Reads the built page from `dir` (once, when the HTTP server is made). */
export function loadExplorer(dir = EXPLORER_DIR): ExplorerAssets {
  const assets = new Map<string, Asset>();
  const index = path.join(dir, 'index.html');
  if (!fs.existsSync(index)) return { page: null, assets };
  const page = { body: fs.readFileSync(index), headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } };
  const assetDir = path.join(dir, 'assets');
  for (const name of fs.existsSync(assetDir) ? fs.readdirSync(assetDir) : []) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    assets.set(ASSET_PREFIX + name, {
      body: fs.readFileSync(path.join(assetDir, name)),
      headers: { 'content-type': type, 'cache-control': 'public, max-age=31536000, immutable' },
    });
  }
  return { page, assets };
}
