// How frames leave the broker. rhea writes every frame with its own socket.write() (transport.js), so a burst of
// deliveries or dispositions released by one store commit became one syscall per frame (native writeBuffer was
// 7 % of the broker's time in the benchmark's CPU profile). Corking the socket on a turn's first write and
// uncorking on process.nextTick hands the kernel every frame of the turn in one writev (53,500 → 10,600 socket
// syscalls for the `--quick` run). nextTick runs once the current microtask queue drains, so the frames written
// from the promise callbacks of one commit share the flush and nothing waits past the turn that produced it.

import type { Duplex } from 'node:stream';

/** Makes `socket` flush the frames written during one turn of the event loop as one writev. */
export function batchWrites(socket: Duplex): void {
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  const write = socket.write;
  socket.write = function (this: Duplex, ...args: unknown[]): boolean {
    if (!corked && !socket.destroyed) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as Duplex['write'];
}
