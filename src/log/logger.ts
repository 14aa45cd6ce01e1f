// The one pino root logger. SAS keys and signatures are redacted wherever they might appear in a field, and
// `redactSas` scrubs them out of free text (a put-token body, an Authorization header) before it is logged.
// Logs go to stderr (stdout stays free for what a command prints); as JSON lines for machines, or as
// pino-pretty's human-readable lines for a person at a terminal. Redaction happens in pino before either.

import { pino, type Logger, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

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

/** How log lines look: JSON (one object a line) or pretty (time, level, message and fields, for people). */
export type LogFormat = 'json' | 'pretty';

/** The log formats `--log-format` accepts. */
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** Pretty when stderr is a terminal, JSON otherwise (a pipe, a file, a log collector). */
export function defaultLogFormat(): LogFormat {
  return process.stderr.isTTY ? 'pretty' : 'json';
}

/**
 * Creates the root logger; `dest` lets tests capture output, and is written in `format` (JSON by default).
 * Without `dest` lines go to stderr, synchronously, so that a fatal line is out before the process exits.
 */
export function createLogger(level: string, dest?: DestinationStream | NodeJS.WritableStream, format: LogFormat = 'json'): Logger {
  const opts = { level, base: { name: 'peeklock' }, redact: { paths: REDACT, censor: '[redacted]' } };
  if (format === 'pretty') {
    // pino-pretty as a stream in this thread rather than as a transport (a worker thread): a transport can lose
    // the last lines when the process exits right after logging them, which is just when they matter most.
    const stream = pretty({
      destination: dest ?? 2,
      sync: true,
      colorize: dest === undefined && process.stderr.isTTY === true,
      translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
      ignore: 'pid,hostname,name',
    });
    return pino(opts, stream);
  }
  return pino(opts, (dest as DestinationStream | undefined) ?? pino.destination({ dest: 2, sync: true }));
}

/** Replaces `sig=...` and `SharedAccessKey=...` values in free text. */
export function redactSas(text: string): string {
  return text.replace(/(sig=|SharedAccessKey=)[^&;\s"]*/gi, '$1[redacted]');
}
