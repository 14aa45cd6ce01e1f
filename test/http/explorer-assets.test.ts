// The built explorer as the HTTP server loads it (src/http/explorer-assets.ts): nothing when the checkout was
// never built (the server then answers / with 503), else the page uncached and only .js and .css assets, under
// /explorer/assets/, cached for good (their names carry a content hash).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ASSET_PREFIX, EXPLORER_DIR, loadExplorer } from '../../src/http/explorer-assets.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-explorer-assets-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('explorer assets', () => {
  it('a directory without a built page gives no page and no assets', () => {
    expect(loadExplorer(dir)).toEqual({ page: null, assets: new Map() });
  });

  it('a built page: index.html uncached, its .js and .css immutable, anything else left out', () => {
    fs.mkdirSync(path.join(dir, 'assets'));
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html>');
    fs.writeFileSync(path.join(dir, 'assets', 'index-abc.js'), 'console.log(1)');
    fs.writeFileSync(path.join(dir, 'assets', 'index-abc.css'), 'body{}');
    fs.writeFileSync(path.join(dir, 'assets', 'index-abc.js.map'), '{}');
    const { page, assets } = loadExplorer(dir);
    expect([page?.body.toString(), page?.headers]).toEqual(['<!doctype html>', { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }]);
    expect([...assets].map(([url, a]) => [url, a.body.toString(), a.headers['content-type'], a.headers['cache-control']]).sort()).toEqual([
      [`${ASSET_PREFIX}index-abc.css`, 'body{}', 'text/css; charset=utf-8', 'public, max-age=31536000, immutable'],
      [`${ASSET_PREFIX}index-abc.js`, 'console.log(1)', 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable'],
    ]);
  });

  it('finds the build under the package root from the sources too', () => {
    expect(EXPLORER_DIR).toBe(path.join(fileRoot(), 'dist', 'explorer') + path.sep);
  });
});

function fileRoot(): string {
  return path.resolve(new URL('../..', import.meta.url).pathname);
}
