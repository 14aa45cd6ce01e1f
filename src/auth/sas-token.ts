// Creating a SAS token the way the Azure SDKs do (HMAC-SHA256 with the key's UTF-8 bytes over the
// URL-encoded resource, a newline and the expiry in seconds). The admin CLI and tests sign with it; the
// broker checks with `verifySas` in src/auth/sas.ts.

import { createHmac } from 'node:crypto';

/** Builds `SharedAccessSignature sr=…&sig=…&se=…&skn=…` for `resource`, valid for `ttlSec` seconds from `nowMs`. */
export function signSas(resource: string, keyName: string, key: string, ttlSec = 3600, nowMs = Date.now()): string {
  const se = Math.floor(nowMs / 1000) + ttlSec;
  const sr = encodeURIComponent(resource);
  const sig = encodeURIComponent(createHmac('sha256', key).update(`${sr}\n${se}`).digest('base64'));
  return `SharedAccessSignature sr=${sr}&sig=${sig}&se=${se}&skn=${encodeURIComponent(keyName)}`;
}
