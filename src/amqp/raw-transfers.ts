// The bytes of incoming messages. rhea decodes a format-0 transfer inside its session code and drops its bytes; the
// broker stores a message as the bytes the client sent, and on the entity sender's links reads them itself in one
// pass (incoming-view.ts), so there rhea need not decode them at all. Installed once per process by patchRhea
// (rhea-patches.ts).

import rhea, { rheaInternalModule } from './rhea.js';
import { RAW } from './rhea-types.js';
import { countScan } from './sections.js';

let captured = false;

/** rhea's message decoder as rhea ships it, whatever `captureRawMessages` makes of `rhea.message.decode`. */
const rheaDecode = (rhea.message as unknown as { decode(b: Buffer): object }).decode.bind(rhea.message);

/** Decodes message bytes with rhea's own decoder (counted as one decode, sections.ts): for the broker's own reads. */
export function decodeMessage(b: Buffer): object {
  countScan('decode', b.length);
  return rheaDecode(b);
}

/** Links whose transfers the broker reads from their bytes alone: rhea does not decode them (`transfersAsBytes`). */
const bytesOnly = new WeakSet<object>();
/** True while rhea's session code handles a transfer on a link in `bytesOnly`. */
let undecoded = false;

/**
 * Marks `link` (a link the broker receives on) as one whose messages are read from their bytes alone: the entity
 * sender's, whose messages parseIncoming reads in one pass (incoming-view.ts). rhea then hands over the bytes in
 * a message object holding nothing but them (under RAW), instead of decoding the whole message first, body
 * included, for a decoding nothing would read.
 */
export function transfersAsBytes(link: object): void {
  bytesOnly.add(link);
}

/**
 * rhea decodes format-0 transfers inside its session code and drops the bytes. Storing a re-encoded copy
 * would change AMQP types (ulong → uint, symbol → string), so the decoder is wrapped once per process to
 * keep the original bytes beside the decoded message (non-enumerable, so nothing else sees it); on a link
 * marked by `transfersAsBytes` it keeps only the bytes, undecoded.
 */
export function captureRawMessages(): void {
  if (captured) return;
  captured = true;
  const m = rhea.message as unknown as { decode(b: Buffer): object };
  m.decode = (b: Buffer) => {
    if (undecoded) {
      // Consumed by rhea's one call for the transfer: any other decode while it is dispatched decodes as usual.
      undecoded = false;
      const bytes = {};
      Object.defineProperty(bytes, RAW, { value: b, enumerable: false });
      return bytes;
    }
    const msg = decodeMessage(b);
    Object.defineProperty(msg, RAW, { value: b, enumerable: false });
    return msg;
  };
  type Frame = { performative: { handle: number } };
  type Sess = { remote: { handles: Record<number, object | undefined> } };
  const Session = rheaInternalModule<{ prototype: { on_transfer(this: Sess, f: Frame): void } }>('session');
  const onTransfer = Session.prototype.on_transfer;
  Session.prototype.on_transfer = function (this: Sess, frame: Frame) {
    const link = this.remote.handles[frame.performative.handle];
    const outer = undecoded;
    undecoded = link !== undefined && bytesOnly.has(link);
    try {
      return onTransfer.call(this, frame);
    } finally {
      undecoded = outer;
    }
  };
}
