// Messages the admin API makes: one composed by an operator (the explorer's send form, `peeklock messages
// send`) is encoded here exactly as an AMQP client would send it, so receivers see a message no different from
// an SDK's; a stored message is read back into a sendable one for a resubmit. The HTTP layer gets these
// functions from the composition root (app.ts) and never touches AMQP encoding itself.

import rhea from './rhea.js';
import { parseIncoming } from './codec.js';
import { types, type Typed } from './sections.js';
import type { AppPropertyType, IncomingMessage, MessageSpec } from '../broker/types.js';

// Each property travels as the AMQP type named, as the SDKs surface it (a long as a number, a timestamp as a Date).
const WRAP: Record<AppPropertyType, (v: string | number | boolean) => Typed> = {
  string: (v) => types.wrap_string(String(v)),
  int: (v) => types.wrap_int(Number(v)),
  long: (v) => types.wrap_long(Number(v)),
  double: (v) => (types as unknown as { wrap_double(n: number): Typed }).wrap_double(Number(v)),
  boolean: (v) => types.wrap_boolean(v === true || v === 'true'),
  timestamp: (v) => types.wrap_timestamp(Number(v)),
};

/** Encodes an operator's message as a client would (body as one data section) and parses it for sending. */
export function composeMessage(spec: MessageSpec): IncomingMessage {
  const msg: Record<string, unknown> = { body: rhea.message.data_section(Buffer.from(spec.body)) };
  if (spec.messageId !== undefined) msg.message_id = spec.messageId;
  if (spec.contentType !== undefined) msg.content_type = spec.contentType;
  if (spec.subject !== undefined) msg.subject = spec.subject;
  if (spec.correlationId !== undefined) msg.correlation_id = spec.correlationId;
  if (spec.sessionId !== undefined) msg.group_id = spec.sessionId;
  if (spec.ttlMs !== undefined) msg.ttl = spec.ttlMs;
  if (spec.scheduledAt !== undefined) {
    msg.message_annotations = { 'x-opt-scheduled-enqueue-time': types.wrap_timestamp(spec.scheduledAt) };
  }
  if (spec.applicationProperties) {
    msg.application_properties = Object.fromEntries(
      Object.entries(spec.applicationProperties).map(([k, p]) => [k, WRAP[p.type](p.value)]),
    );
  }
  return parseIncoming(rhea.message.encode(msg as never) as Buffer);
}

/** A stored message's bytes read back into a message to send again (a resubmit). */
export function reparseStored(body: Uint8Array): IncomingMessage {
  return parseIncoming(Buffer.from(body));
}
