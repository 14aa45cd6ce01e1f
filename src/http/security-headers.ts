// The headers every HTTP answer carries, so a browser never runs, frames or sniffs what the broker sends: the
// explorer page may run only its own inline script and style (by hash, so nothing injected into a message view can
// run), load nothing from elsewhere and talk only to this origin; no page may frame it (clickjacking); no answer is
// read as another content type; no URL leaks in a Referer.

import { createHash } from 'node:crypto';
import { EXPLORER_HTML } from './explorer-page.js';

// The sha256 CSP source of every inline `<tag>` element of the page.
function hashes(html: string, tag: 'script' | 'style'): string {
  const out: string[] = [];
  for (const m of html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))) {
    out.push(`'sha256-${createHash('sha256').update(m[1]!, 'utf8').digest('base64')}'`);
  }
  return out.join(' ');
}

/** The explorer page's Content-Security-Policy. */
export const EXPLORER_CSP = [
  "default-src 'none'",
  `script-src ${hashes(EXPLORER_HTML, 'script')}`,
  `style-src ${hashes(EXPLORER_HTML, 'style')}`,
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Every other answer (JSON, XML, text): nothing in it may run or load. */
const DATA_CSP = "default-src 'none'; frame-ancestors 'none'";

const COMMON = {
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** The security headers for an answer to `url` (the explorer page gets its own CSP). */
export function securityHeaders(url: string): Record<string, string> {
  const path = url.split('?')[0];
  const page = path === '/' || path === '/index.html';
  return { ...COMMON, 'content-security-policy': page ? EXPLORER_CSP : DATA_CSP };
}
