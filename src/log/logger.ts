// The one pino root logger. SAS keys and signatures are redacted wherever they might appear in a field, and
// `redactSas` scrubs them out of free text (a put-token body, an Authorization header) before it is logged.

import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/** Field paths whose values are never written to a log. */
const REDACT = [
  'key',
  'sharedAccessKey',
  'token',
  'signature',
  'password',
  'authorization',
  '*.key',
  '*.sharedAccessKey',
  '*.token',
  '*.signature',
  '*.password',
  '*.authorization',
  'policies[*].key',
  'broker.policies[*].key',
];

/** Creates the root logger; `dest` lets tests capture output. */
export function createLogger(level: string, dest?: DestinationStream): Logger {
  const opts = { level, base: { name: 'peeklock' }, redact: { paths: REDACT, censor: '[redacted]' } };
  return dest ? pino(opts, dest) : pino(opts);
}

/** Replaces `sig=...` and `SharedAccessKey=...` values in free text. */
export function redactSas(text: string): string {
  return text.replace(/(sig=|SharedAccessKey=)[^&;\s"]*/gi, '$1[redacted]');
}
