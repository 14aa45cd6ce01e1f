// Issue 25, row 12: every HTTP answer tells the browser not to frame it, sniff it or leak its URL, and the explorer
// page may run only its own inline script and style (by hash) and talk only to its own origin.

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPLORER_HTML } from '../../src/http/explorer-page.js';
import { authHeader, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;
beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'q' }]);
});
afterAll(async () => {
  await b?.close();
});

const sha = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('security headers', () => {
  it('the explorer page: a CSP allowing only its own script and style, no framing, no sniffing, no referrer', async () => {
    const res = await fetch(`${b.base}/`);
    const csp = res.headers.get('content-security-policy') ?? '';
    const script = /<script>([\s\S]*?)<\/script>/.exec(EXPLORER_HTML)![1]!;
    const style = /<style>([\s\S]*?)<\/style>/.exec(EXPLORER_HTML)![1]!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src ${sha(script)}`);
    expect(csp).toContain(`style-src ${sha(style)}`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect([res.headers.get('x-frame-options'), res.headers.get('x-content-type-options'), res.headers.get('referrer-policy')]).toEqual(['DENY', 'nosniff', 'no-referrer']);
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
