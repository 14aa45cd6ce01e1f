// Property changes a client sends with a settlement (an abandon's or defer's message-annotations, a dead-letter's
// error info, update-disposition's properties-to-modify), with the AMQP type of each value. Service Bus stores them
// as sent; rhea's plain decoding turns every integer into one JS number (so .NET's int came back a long or a uint).

import { toFilterValue } from './filter-view.js';
import { AMQP_VALUE, splitSections, types, type Typed } from './sections.js';
import { RAW, type RheaMessage } from './rhea-types.js';
import { patchOf } from '../broker/messaging-port.js';

/**
 * The entries of a typed AMQP map as stored property changes (`{ $type, value }`, which the codec writes back with
 * that type). Described values (e.g. .NET's com.microsoft:uri) keep their plain value. Undefined if not a map.
 */
export function typedPatch(map: Typed | undefined): Record<string, unknown> | undefined {
  const items = map?.value;
  if (!Array.isArray(items)) return undefined;
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < items.length; i += 2) {
    const [k, v] = [items[i] as Typed, items[i + 1] as Typed];
    out[String(k.value)] = v.descriptor ? types.unwrap(v) : patchOf(toFilterValue(v.type?.name ?? 'Null', v.value));
  }
  return out;
}

/** One map-valued field of a request's amqp-value map body, typed (from the bytes rhea-patches keeps); else undefined. */
export function typedBodyField(request: RheaMessage, key: string): Record<string, unknown> | undefined {
  const raw = (request as { [RAW]?: Buffer })[RAW];
  if (!raw) return undefined;
  try {
    const body = splitSections(raw).find((s) => s.code === AMQP_VALUE)?.value.value;
    if (!Array.isArray(body)) return undefined;
    for (let i = 0; i + 1 < body.length; i += 2) {
      if ((body[i] as Typed).value === key) return typedPatch(body[i + 1] as Typed);
    }
  } catch {
    // Undecodable here means rhea decoded it differently: keep its plain value.
  }
  return undefined;
}
