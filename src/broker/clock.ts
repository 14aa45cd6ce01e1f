// Time for the broker. Lock deadlines must not move when the wall clock jumps (docs/architecture.md, "Deadlines and the
// clock"), so "now" is the wall clock read once at start-up plus monotonic time elapsed since: it reads as epoch
// milliseconds (what `x-opt-locked-until` reports and what survives a restart) but never jumps.

/** A cancellable timer handle. */
export interface TimerHandle {
  cancel(): void;
}

/** Injectable time source and timer factory; tests use `FakeClock`. */
export interface Clock {
  /** Epoch milliseconds, monotonic while the process runs. */
  now(): number;
  /** Calls `fn` once after `delayMs` (on the monotonic clock). */
  setTimer(fn: () => void, delayMs: number): TimerHandle;
}

/** The production clock: wall time anchored at construction, advanced by `performance.now()`. */
export class SystemClock implements Clock {
  private readonly wallAtStart = Date.now();
  private readonly monoAtStart = performance.now();

  now(): number {
    return Math.floor(this.wallAtStart + (performance.now() - this.monoAtStart));
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    // Node caps timers at 2^31-1 ms; the scheduler re-arms, so a shorter wait is harmless.
    const t = setTimeout(fn, Math.min(Math.max(0, delayMs), 2 ** 31 - 1));
    t.unref();
    return { cancel: () => clearTimeout(t) };
  }
}

/** A manual clock for tests: time moves only through `advance()`, which fires due timers in order. */
export class FakeClock implements Clock {
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;

  constructor(private t = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ at: this.t + Math.max(0, delayMs), fn, id });
    return { cancel: () => (this.timers = this.timers.filter((x) => x.id !== id)) };
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }
}
