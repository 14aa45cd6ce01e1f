// Hand-written frames for transaction tests (the coordinator, transactional transfers and dispositions), on top
// of raw-amqp.ts: the client-side rhea codec, since rhea has no types for the transactions chapter of AMQP 1.0.

import { createRequire } from 'node:module';
import { frame, type RawConn } from './raw-amqp.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const require = createRequire(import.meta.url);
/** The client-side rhea (message encoding); stock rhea, never the broker's copy. */
export const rhea = require('rhea') as Any;
/** rhea's terminus module (source and target builders). */
export const terminus = require('rhea/lib/terminus.js') as Any;
/** rhea's type codec. */
export const t = rhea.types;
// rhea's frame codec has no wrapper for a transfer's delivery state; the tests hand it an encoded value.
t.wrap_delivery_state ??= (v: Any): Any => v;

/** A described list with a ulong descriptor (declare 0x31, discharge 0x32, transactional-state 0x34 ...). */
export const described = (code: number, fields: Any[]): Any => t.described(t.wrap_ulong(code), t.wrap_list(fields));

/** An amqp-value section holding the described control body, written by hand: rhea keeps one descriptor per value. */
export function control(code: number, fields: Any[]): Buffer {
  const w = new t.Writer();
  w.write(described(code, fields));
  return Buffer.concat([Buffer.from([0x00, 0x53, 0x77]), w.toBuffer()]);
}

/** The numeric descriptor of a decoded described value. */
export const descriptor = (v: Any): number => Number(v?.descriptor?.value);

/** Polls `f` every 10 ms until it returns a value (at most 2 s). */
export async function until<T>(f: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The broker's disposition (role receiver) that settles delivery `first`, if it came. */
export const dispositionOf = (raw: RawConn, first: number): Any =>
  raw.seen.find((s) => s.name.includes('disposition') && s.fields.first === first && s.fields.role === true);

/** An attach frame on channel 0. */
export function attach(handle: number, role: boolean, source: Any, target: Any): Buffer {
  return frame(0, 'attach', { name: `l${handle}`, handle, role, snd_settle_mode: 0, rcv_settle_mode: 0, source, target, initial_delivery_count: 0 });
}

/** An unsettled transfer on channel 0, with an optional delivery state (transactional-state). */
export function txfer(handle: number, id: number, payload: Buffer, state?: Any): Buffer {
  const fields: Any = { handle, delivery_id: id, delivery_tag: Buffer.from([id]), message_format: 0, settled: false };
  if (state) fields.state = state;
  return frame(0, 'transfer', fields, payload);
}
