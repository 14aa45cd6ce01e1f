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
  /**
   * For waits measured in the client's real time rather than broker time (a session accept's timeout, redrive
   * pacing); absent = `setTimer`. Only the manual clock tells them apart: moving broker time must not be needed to end
   * a client's wait.
   */
  setWaitTimer?(fn: () => void, delayMs: number): TimerHandle;
  /**
   * For times the client's own clock sets (a SAS token's expiry, which the SDK signs and renews by its wall clock);
   * absent = `now()`. Only the manual clock tells them apart: moving broker time past an hour must not expire the
   * tokens of every client a test has open.
   */
  wallNow?(): number;
}

/** A clock for times the client's clock sets (see `Clock.wallNow`): its time, and its timers. */
export function wallClock(clock: Clock): { now(): number; setTimer(fn: () => void, delayMs: number): TimerHandle } {
  if (!clock.wallNow) return { now: () => clock.now(), setTimer: (fn, ms) => clock.setTimer(fn, ms) };
  return { now: () => clock.wallNow!(), setTimer: (fn, ms) => waitTimer(clock, fn, ms) };
}

/** Starts a wait in real time on `clock` (see `Clock.setWaitTimer`). */
export function waitTimer(clock: Clock, fn: () => void, delayMs: number): TimerHandle {
  return clock.setWaitTimer ? clock.setWaitTimer(fn, delayMs) : clock.setTimer(fn, delayMs);
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

// The pending timers of a clock whose time moves only when told to (FakeClock, ManualClock), fired in time order
// (ties in the order they were set).
class PendingTimers {
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;

  add(at: number, fn: () => void): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ at, fn, id });
    return { cancel: () => (this.timers = this.timers.filter((x) => x.id !== id)) };
  }

  /** Removes and returns the earliest timer due at or before `end`, if any. */
  takeDue(end: number): { at: number; fn: () => void } | undefined {
    this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
    const next = this.timers[0];
    if (!next || next.at > end) return undefined;
    this.timers.shift();
    return next;
  }
}

/** A manual clock for tests: time moves only through `advance()`, which fires due timers in order. */
export class FakeClock implements Clock {
  private readonly timers = new PendingTimers();

  constructor(private t = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    return this.timers.add(this.t + Math.max(0, delayMs), fn);
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (let next = this.timers.takeDue(end); next; next = this.timers.takeDue(end)) {
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }
}

/**
 * The opt-in manual clock (`Broker.Clock: "manual"`): starts at the wall clock and then moves only through
 * `advance()`, so a test can let a five-minute lock lapse at once. Unlike `FakeClock`, `advance` is asynchronous:
 * after each timer it fires it waits for `settle` (the broker's writes and the pumps they start), so what one
 * deadline causes — a redelivery with a fresh lock, a message dead-lettered — happens before the next deadline
 * falls due, as if the time had really passed.
 */
export class ManualClock implements Clock {
  private t: number;
  private readonly timers = new PendingTimers();
  private queue: Promise<unknown> = Promise.resolve();
  /** Waits for the work a fired timer started; the composition root sets it to the broker's. */
  settle: () => Promise<void> = () => new Promise((r) => setImmediate(r));

  constructor(start = Date.now()) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    return this.timers.add(this.t + Math.max(0, delayMs), fn);
  }

  wallNow(): number {
    return Date.now();
  }

  setWaitTimer(fn: () => void, delayMs: number): TimerHandle {
    const t = setTimeout(fn, Math.min(Math.max(0, delayMs), 2 ** 31 - 1));
    t.unref();
    return { cancel: () => clearTimeout(t) };
  }

  /** Moves time forward by `ms` (a finite number ≥ 0), firing due timers in order; resolves with the new time. */
  advance(ms: number): Promise<number> {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      return Promise.reject(new RangeError(`advance(ms): ms must be a finite number of milliseconds ≥ 0, not ${String(ms)}`));
    }
    // Advances run one after another, so two callers never interleave their deadlines.
    const run = this.queue.then(() => this.run(ms));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async run(ms: number): Promise<number> {
    const end = this.t + ms;
    // Bounded: each round fires one timer; a handler re-arming at a time already passed fires in a later round.
    for (let rounds = 0; rounds < 1_000_000; rounds++) {
      await this.settle();
      const next = this.timers.takeDue(end);
      if (!next) break;
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
    await this.settle();
    return this.t;
  }
}
