// Small request/response helpers shared by the HTTP routes: JSON replies, a bounded JSON body reader and
// the one error type routes throw (turned into `{"error":{"code","message"}}` with its status).

import type { IncomingMessage, ServerResponse } from 'node:http';

/** Largest request body accepted, in bytes (admin requests are a few hundred bytes). */
export const MAX_BODY_BYTES = 64 * 1024;
/** A request body (JSON or Atom XML) must have arrived within this, whatever Broker.HttpRequestTimeout says. */
export const BODY_TIMEOUT_MS = 10_000;

/** A failure with an HTTP status and a one-line message for the client. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** Sends `body` as JSON with `status`. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

/** Sends an error reply. */
export function sendError(res: ServerResponse, err: HttpError): void {
  sendJson(res, err.status, { error: { code: err.code, message: err.message } });
}

/**
 * Reads a JSON object body (empty = `{}`); refuses bodies over MAX_BODY_BYTES, bodies not complete within
 * BODY_TIMEOUT_MS (408, the socket closed) and anything but an object.
 */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  const slow = setTimeout(() => req.destroy(new HttpError(408, 'RequestTimeout', `The request body did not arrive within ${BODY_TIMEOUT_MS} ms.`)), BODY_TIMEOUT_MS);
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES)
        throw new HttpError(413, 'PayloadTooLarge', `The request body exceeds ${MAX_BODY_BYTES} bytes.`);
      chunks.push(chunk);
    }
  } catch (err) {
    // A client gone (or cut off by the server's requestTimeout) mid-body is not a broker failure.
    if (err instanceof HttpError) throw err;
    throw new HttpError(408, 'RequestTimeout', 'The request body was not completely received.');
  } finally {
    clearTimeout(slow);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'BadRequest', 'The request body is not valid JSON.');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(400, 'BadRequest', 'The request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

/** Parses an integer query or body value in [min, max], or throws a 400 naming the field and the range. */
export function intIn(name: string, raw: unknown, min: number, max: number): number {
  const n = typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw new HttpError(
      400,
      'BadRequest',
      `${name} = ${JSON.stringify(raw)}: must be an integer from ${min} to ${max}.`,
    );
  }
  return n;
}
