// Issue 25, row 12: every HTTP answer tells the browser not to frame it, sniff it or leak its URL, and the explorer
// page may run only its own script and stylesheet (files from its origin, nothing inline), must use Trusted Types
// for HTML sinks and talks only to its own origin. The page's files are the build's (dist/explorer: npm run build).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authHeader, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;
beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'q' }]);
});
afterAll(async () => {
  await b?.close();
});

describe('security headers', () => {
  it('the explorer page: a CSP allowing only its own script and style files, no framing, no sniffing, no referrer', async () => {
    const res = await fetch(`${b.base}/`);
    const html = await res.text();
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(res.status).toBe(200);
    // Nothing inline for the CSP to allow: one module script and one stylesheet, both from this origin.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("style-src 'self';");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("require-trusted-types-for 'script'");
    expect(csp).not.toContain('unsafe');
    expect([res.headers.get('x-frame-options'), res.headers.get('x-content-type-options'), res.headers.get('referrer-policy')]).toEqual(['DENY', 'nosniff', 'no-referrer']);
  });

  it("the page's script and stylesheet: served with their content types, cached for good, nosniff", async () => {
    const html = await (await fetch(`${b.base}/`)).text();
    const script = /<script type="module" crossorigin src="([^"]+)"><\/script>/.exec(html)?.[1];
    const style = /<link rel="stylesheet" crossorigin href="([^"]+)">/.exec(html)?.[1];
    expect([script, style]).toEqual([expect.stringMatching(/^\/explorer\/assets\/.+\.js$/), expect.stringMatching(/^\/explorer\/assets\/.+\.css$/)]);
    for (const [url, type] of [[script!, 'text/javascript; charset=utf-8'], [style!, 'text/css; charset=utf-8']] as const) {
      const res = await fetch(b.base + url);
      expect([url, res.status, res.headers.get('content-type'), res.headers.get('x-content-type-options'), res.headers.get('cache-control')]).toEqual([
        url,
        200,
        type,
        'nosniff',
        'public, max-age=31536000, immutable',
      ]);
      expect((await res.text()).length).toBeGreaterThan(1000);
    }
    expect((await fetch(`${b.base}/explorer/assets/nothing.js`)).status).toBe(404);
  });

  it('API, health and error answers carry them too', async () => {
    for (const [p, auth] of [['/api/entities', authHeader()], ['/health', ''], ['/nothing-here', '']] as const) {
      const res = await fetch(`${b.base}${p}`, { headers: auth ? { authorization: auth } : {} });
      expect([p, res.headers.get('content-security-policy'), res.headers.get('x-frame-options'), res.headers.get('x-content-type-options')]).toEqual([
        p,
        "default-src 'none'; frame-ancestors 'none'",
        'DENY',
        'nosniff',
      ]);
    }
  });
});
