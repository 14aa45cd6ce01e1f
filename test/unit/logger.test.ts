// The log in both formats: JSON lines for machines and pino-pretty's lines for people carry the same fields,
// and a SAS key, signature or token never reaches either.

import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, redactSas, type LogFormat } from '../../src/log/logger.js';

/** Logs through a logger of `format` into a string. */
function capture(format: LogFormat, write: (log: ReturnType<typeof createLogger>) => void): Promise<string> {
  let out = '';
  const dest = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out += chunk.toString();
      cb();
    },
  });
  write(createLogger('info', dest, format));
  // pino-pretty hands its line to the stream on a later turn.
  return new Promise((r) => setTimeout(() => r(out), 50));
}

const SECRET = 'c2VjcmV0LWtleS12YWx1ZQ==';

function logSecrets(log: ReturnType<typeof createLogger>): void {
  log.warn(
    {
      key: SECRET,
      token: `SharedAccessSignature sr=x&sig=${SECRET}&se=1&skn=Root`,
      broker: { policies: [{ name: 'Root', key: SECRET }] },
      peer: { authorization: SECRET },
    },
    redactSas(`token refused: SharedAccessKey=${SECRET};sig=${SECRET}`),
  );
}

describe('logs', () => {
  it('redact keys, tokens and signatures in JSON lines', async () => {
    const out = await capture('json', logSecrets);
    expect(out).not.toContain(SECRET);
    const line = JSON.parse(out) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 40, key: '[redacted]', token: '[redacted]', peer: { authorization: '[redacted]' } });
    expect(line.msg).toBe('token refused: SharedAccessKey=[redacted];sig=[redacted]');
  });

  it('redact them just the same in pretty lines, which are for people: time, level, message, fields', async () => {
    const out = await capture('pretty', logSecrets);
    expect(out).not.toContain(SECRET);
    expect(out).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] WARN: token refused: SharedAccessKey=\[redacted\];sig=\[redacted\]\n/);
    expect(out).toContain('key: "[redacted]"');
    expect(out).not.toContain('{"level"');
  });
});
