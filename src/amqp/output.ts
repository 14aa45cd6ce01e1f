// How frames leave the broker. rhea writes every frame with its own socket.write() (transport.js), so a burst of
// deliveries or dispositions released by one store commit became one syscall per frame (native writeBuffer was
// 7 % of the broker's time in the benchmark's CPU profile). Corking the socket on a turn's first write and
// uncorking on process.nextTick hands the kernel every frame of the turn in one writev (53,500 → 10,600 socket
// syscalls for the `--quick` run). nextTick runs once the current microtask queue drains, so the frames written
// from the promise callbacks of one commit share the flush and nothing waits past the turn that produced it.

import type { Duplex } from 'node:stream';

/** Makes `socket` flush the frames written during one turn of the event loop as one writev; `gate` sees each write. */
export function batchWrites(socket: Duplex, gate?: OutboundGate): void {
  let corked = false;
  const uncork = (): void => {
    corked = false;
    // The turn's frames are all buffered now: the most this socket holds before the kernel takes some.
    gate?.buffered();
    socket.uncork();
  };
  const write = socket.write;
  socket.write = function (this: Duplex, ...args: unknown[]): boolean {
    if (!corked && !socket.destroyed) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    const chunk = args[0];
    if (gate && (Buffer.isBuffer(chunk) || typeof chunk === 'string')) gate.written(chunk.length);
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as Duplex['write'];
}

/**
 * Bytes of outgoing deliveries one connection may hold before the broker offers it nothing more: deliveries being
 * committed for it, transfers handed to rhea this turn, and the socket's unsent buffer. Credit a client grants is
 * a promise to take messages, not to read them: a consumer that grants 100,000 credits and stops reading would
 * otherwise have the broker buffer its whole queue. In Service Bus's Peek-Lock a message is locked when it is taken
 * for a receiver and stays available to every receiver until then, so a message held back here is not taken: it
 * stays in the queue unlocked, its lock clock not started, free for a faster receiver.
 */
export const OUTBOUND_HIGH_WATER = 4 * 1024 * 1024;

/** Outgoing buffering across a server's connections, as the metrics report it. */
export interface OutboundStats {
  /** Bytes all connections hold now (committing, handed to rhea, or in the socket's buffer). */
  bufferedBytes: number;
  /** The most any one connection has held at once since start. */
  peakConnectionBytes: number;
}

/** The part of a socket the gate reads. */
type DrainingSocket = Pick<Duplex, 'writableLength' | 'writableNeedDrain' | 'once' | 'destroyed'>;

/**
 * One connection's budget for outgoing deliveries (see {@link OUTBOUND_HIGH_WATER}). A link asks {@link open} when it
 * computes its credit figure, accounts what the broker reserves for it and what it hands to rhea, and is woken when
 * the socket drains. The budget is shared by every link of the connection and the broker spends their credit without
 * asking: the reservation that reaches the mark tells each link holding credit ({@link watch}) to push its figure
 * again, now 0, so a connection still holds at most the mark plus one message.
 */
export class OutboundGate {
  /** Bytes of deliveries reserved for this connection whose lock (or delete) is still being committed. */
  private committing = 0;
  /** Bytes handed to rhea this turn: rhea writes them to the socket on its next processing tick. */
  private handed = 0;
  private waiting = false;
  private readonly waiters = new Set<() => void>();
  /** Links of this connection holding credit with the broker, told when the mark is reached. */
  private readonly watchers = new Set<() => void>();

  constructor(
    private readonly socket: DrainingSocket,
    private readonly stats: { peakConnectionBytes: number },
    readonly highWater = OUTBOUND_HIGH_WATER,
  ) {}

  /** Bytes this connection holds for outgoing deliveries now (noted toward the peak: rhea's frame headers show up here). */
  buffered(): number {
    const now = this.committing + this.handed + this.socket.writableLength;
    if (now > this.stats.peakConnectionBytes) this.stats.peakConnectionBytes = now;
    return now;
  }

  /**
   * True while another message may be taken for this connection. Checked per message, so a connection holds at
   * most the high-water mark plus one message; when closed, `wake` runs once the socket has drained.
   */
  open(wake: () => void): boolean {
    if (this.buffered() < this.highWater) return true;
    this.waiters.add(wake);
    this.armResume();
    return false;
  }

  /** A delivery of `bytes` (stored size) was reserved for this connection (positive) or has landed (negative). */
  reserve(bytes: number): void {
    this.committing = Math.max(0, this.committing + bytes);
    if (bytes > 0) this.checkMark();
    else this.notePeak();
  }

  /** `bytes` of transfer were handed to rhea; they reach the socket's buffer on rhea's next tick. */
  handedOver(bytes: number): void {
    this.handed += bytes;
    this.checkMark();
  }

  /** `wake` (a link's) holds credit with the broker: it runs once when the connection reaches the mark. */
  watch(wake: () => void): void {
    this.watchers.add(wake);
  }

  /** `wake` holds no credit any more. */
  unwatch(wake: () => void): void {
    this.watchers.delete(wake);
  }

  /** rhea wrote `bytes` to the socket: what it was handed is now counted in the socket's buffer instead. */
  written(bytes: number): void {
    this.handed = Math.max(0, this.handed - bytes);
  }

  /** Forgets a link that has gone (waiting for the drain, or holding credit). */
  forget(wake: () => void): void {
    this.waiters.delete(wake);
    this.watchers.delete(wake);
  }

  private notePeak(): void {
    this.buffered();
  }

  // At the mark every link holding credit recomputes its figure (0 while the gate is closed) and pushes it.
  private checkMark(): void {
    if (this.buffered() < this.highWater || this.watchers.size === 0) return;
    const told = [...this.watchers];
    this.watchers.clear();
    for (const f of told) f();
  }

  // Resume on 'drain' when the socket's buffer is what holds us back (Node emits it once a write was refused and
  // the buffer emptied); otherwise the bytes are rhea's or still committing, so look again a turn later.
  private armResume(): void {
    if (this.waiting || this.socket.destroyed) return;
    this.waiting = true;
    const resume = (): void => {
      this.waiting = false;
      if (this.buffered() >= this.highWater) return this.armResume();
      const wake = [...this.waiters];
      this.waiters.clear();
      for (const f of wake) f();
    };
    if (this.socket.writableNeedDrain) this.socket.once('drain', resume);
    else setTimeout(resume, 1);
  }
}

const GATES = new WeakMap<object, OutboundGate>();

/** Gives a connection (rhea's connection object) its outgoing budget; links find it with {@link gateOf}. */
export function setGate(conn: object, gate: OutboundGate): void {
  GATES.set(conn, gate);
}

/** The outgoing budget of a connection, if it has one (every accepted connection does). */
export function gateOf(conn: object): OutboundGate | undefined {
  return GATES.get(conn);
}
