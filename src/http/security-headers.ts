// The headers every HTTP answer carries, so a browser never runs, frames or sniffs what the broker sends: the
// explorer page may run only its own script and stylesheet (files from this origin, no inline code, so nothing
// injected into a message view can run), must use Trusted Types for any HTML sink (it writes text only), loads
// nothing from elsewhere and talks only to this origin; no page may frame it (clickjacking); no answer is read
// as another content type; no URL leaks in a Referer.

/** The explorer page's Content-Security-Policy. */
export const EXPLORER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  // The page sets text, never HTML: with no policy allowed, a string reaching innerHTML or the like throws.
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** Every other answer (JSON, XML, text, the page's script and stylesheet): nothing in it may run or load. */
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
