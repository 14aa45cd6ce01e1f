// How frames leave the broker. Two costs of rhea's output path showed in the benchmark's CPU profile of the
// broker (100 in flight, 1 KiB messages, and 100,000 outstanding locks):
// - rhea writes every frame with its own socket.write() (transport.js), so a burst of deliveries or
//   dispositions released by one store commit became one syscall per frame (native writeBuffer was 7 % of the
//   broker's time). Corking the socket on a turn's first write and uncorking on process.nextTick hands the
//   kernel every frame of the turn in one writev (53,500 → 10,600 socket syscalls for the `--quick` run).
//   nextTick runs once the current microtask queue drains, so the frames written from the promise callbacks
//   of one commit share the flush and nothing waits past the turn that produced it.
// - rhea's encoder allocates every frame and section buffer with Buffer.alloc, zero-filling 1 KiB or more that
//   it then overwrites (2.4 s of 116 s in the lock-expiry run, mostly inside event-loop stalls).

import { createRequire } from 'node:module';
import type net from 'node:net';

const require = createRequire(import.meta.url);

/** Makes `socket` flush the frames written during one turn of the event loop as one writev. */
export function batchWrites(socket: net.Socket): void {
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  const write = socket.write;
  socket.write = function (this: net.Socket, ...args: unknown[]): boolean {
    if (!corked && !socket.destroyed) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as net.Socket['write'];
}

/**
 * Lets rhea allocate its buffers without zero-filling. Safe because every user overwrites what it exposes:
 * types.Writer hands out only `buffer.slice(0, position)`, and its placeholders (frame size, compound size and
 * count) are backfilled before that; the protocol header, uuid4 and SASL responses write every byte.
 */
export function unzeroedRheaBuffers(): void {
  const util = require('rhea/lib/util.js') as { allocate_buffer: (size: number) => Buffer };
  util.allocate_buffer = (size: number): Buffer => Buffer.allocUnsafe(size);
}
