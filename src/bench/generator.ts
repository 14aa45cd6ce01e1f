// The load generator: rhea clients over real sockets, sharing no code with the broker. Each run opens its own
// connection(s), measures, and closes them. Bodies are encoded once per run (encoding a 1 KiB message costs
// ~40 µs, which would otherwise be taken from the broker on this shared 2-core machine).

import rhea from 'rhea';
import WebSocket from 'ws';

/** rhea's objects are untyped; the generator only touches a few well-known fields. */
export type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A broker to drive: where it listens, how to log in, how it names queues, and its process for /proc stats. */
export interface Target {
  name: string;
  host: string;
  port: number;
  username?: string;
  password?: string;
  /** The broker process whose CPU and RSS are read from /proc (absent for an external broker). */
  pid?: number;
  /** Maps a queue name to this broker's address (RabbitMQ: `/queue/NAME`). */
  address(queue: string): string;
  /** RabbitMQ needs a durable terminus on both links, or it ends the session with precondition-failed. */
  durableTerminus: boolean;
  /** 1 = the broker settles our accept (peek-lock complete as the SDK does it); RabbitMQ refuses 1. */
  rcvSettleMode: 0 | 1;
  /** Connect over TLS (amqps), trusting this CA certificate (PEM). */
  tlsCa?: string;
  /** Connect with AMQP over WebSockets (plain ws, `/$servicebus/websocket`, AMQPWSB10) to `port`. */
  webSocket?: boolean;
  /** peeklock's /metrics URL and data directory, for the commit round trip beside the disk's own fdatasync. */
  commitProbe?: { metricsUrl: string; dataDir: string };
  stop(): Promise<void>;
}

/** Fails a run that makes no progress for this long, so every run ends. */
const STALL_MS = 60_000;

/** Tracks progress and turns a stalled run into an error instead of a hang. */
export class Watchdog {
  private last = Date.now();
  private timer: NodeJS.Timeout | undefined;

  /** Records progress. */
  tick(): void {
    this.last = Date.now();
  }

  /** Races `work` against a stall of `stallMs` without any tick. */
  guard<T>(label: string, work: Promise<T>, stallMs = STALL_MS): Promise<T> {
    const stalled = new Promise<never>((_, reject) => {
      this.timer = setInterval(() => {
        if (Date.now() - this.last > stallMs) reject(new Error(`${label}: no progress for ${stallMs / 1000} s`));
      }, 500);
    });
    return Promise.race([work, stalled]).finally(() => clearInterval(this.timer));
  }
}

/** Opens a connection to the target (SASL PLAIN when it has credentials, else ANONYMOUS). */
export function connect(t: Target, id = 'bench'): Promise<Any> {
  const c = rhea.create_container({ id });
  return new Promise((resolve, reject) => {
    const auth = t.username ? { username: t.username, password: t.password } : {};
    const tls = t.tlsCa ? { transport: 'tls', ca: t.tlsCa, servername: 'localhost' } : {};
    // Over WebSockets rhea dials through the `ws` client, as the Azure SDKs do (subprotocol AMQPWSB10).
    const ws = t.webSocket
      ? { connection_details: c.websocket_connect(WebSocket)(`ws://${t.host}:${t.port}/$servicebus/websocket`, ['AMQPWSB10'], {}) }
      : {};
    const conn = c.connect({ host: t.host, port: t.port, reconnect: false, tcp_no_delay: true, idle_time_out: 0, ...auth, ...tls, ...ws } as Any);
    conn.once('connection_open', () => resolve(conn));
    conn.once('disconnected', (ctx: Any) => reject(ctx.error ?? new Error(`${t.name}: disconnected`)));
    conn.on('error', () => undefined);
  });
}

/** Closes a connection and waits for the peer's close (so it has processed every frame we sent before). */
export function closeConn(conn: Any, ms = 5000): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, ms);
    conn.once('connection_close', done);
    conn.once('disconnected', done);
    conn.close();
  });
}

/** Sender link options for a queue on this target. */
export function senderOpts(t: Target, queue: string): Any {
  return { target: { address: t.address(queue), ...(t.durableTerminus ? { durable: 2 } : {}) } };
}

/** Peek-lock receiver link options for a queue on this target, with credit window `w` (0: manual credit). */
export function receiverOpts(t: Target, queue: string, w: number, extra: Any = {}): Any {
  return {
    source: { address: t.address(queue), ...(t.durableTerminus ? { durable: 2 } : {}), ...extra },
    credit_window: w,
    autoaccept: false,
    rcv_settle_mode: t.rcvSettleMode,
  };
}

/** Opens a sender and waits until it has credit. */
export function openSender(conn: Any, opts: Any): Promise<Any> {
  const sender = conn.open_sender(opts);
  return new Promise((resolve, reject) => {
    sender.once('sendable', () => resolve(sender));
    sender.once('sender_error', (ctx: Any) => reject(new Error(`sender refused: ${JSON.stringify(ctx.sender.error)}`)));
  });
}

/** A durable message of `size` bytes, encoded once; `header.durable` is set (RabbitMQ needs it). */
export function encodedMessage(size: number, extra: Any = {}): Buffer {
  return rhea.message.encode({ durable: true, body: rhea.message.data_section(Buffer.alloc(size, 0x61)), ...extra } as Any);
}

// A marker uint in the application properties that we overwrite with each message's index (e2e runs).
const MARK = 0x7fffffff;
const MARK_BYTES = Buffer.from([0x70, 0x7f, 0xff, 0xff, 0xff]);

/** An encoded message whose application property `i` is patched per message (4-byte uint at the offset). */
export function indexedTemplate(size: number): { bytes: Buffer; offset: number } {
  const types = rhea.types as unknown as { wrap_uint(n: number): unknown };
  const bytes = encodedMessage(size, { application_properties: { i: types.wrap_uint(MARK) } });
  return { bytes, offset: bytes.indexOf(MARK_BYTES) + 1 };
}

/** Latency samples in ms; summarised once at the end. */
export class Samples {
  private xs: Float64Array;
  private len = 0;
  constructor(capacity: number) {
    this.xs = new Float64Array(Math.max(1, capacity));
  }
  /** Adds one sample (beyond capacity, samples are dropped). */
  add(ms: number): void {
    if (this.len < this.xs.length) this.xs[this.len++] = ms;
  }
  /** p50/p99/max in ms, rounded to 0.01. */
  summary(prefix = ''): Record<string, number> {
    const s = this.xs.subarray(0, this.len).sort();
    const r = (v: number): number => Math.round(v * 100) / 100;
    return { [`${prefix}p50Ms`]: r(percentile(s, 50)), [`${prefix}p99Ms`]: r(percentile(s, 99)), [`${prefix}maxMs`]: r(s[s.length - 1] ?? NaN) };
  }
}

/** The p-th percentile of sorted samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The median of a list. */
export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
}

/**
 * Durable sends of `n` messages with `w` unsettled to `queue`; msgs/s and send→accepted latency. `make` gives
 * message i's bytes when messages differ (session ids); otherwise one encoded message is sent `n` times.
 */
export async function sendRun(t: Target, queue: string, n: number, w: number, size: number, make?: (i: number) => Buffer): Promise<Record<string, number>> {
  const conn = await connect(t);
  try {
    const sender = await openSender(conn, senderOpts(t, queue));
    const bytes = make ? undefined : encodedMessage(size);
    const lat = new Samples(n);
    const dog = new Watchdog();
    let sent = 0;
    let done = 0;
    const t0 = performance.now();
    await dog.guard(
      `${t.name} send`,
      new Promise<void>((resolve, reject) => {
        const pump = (): void => {
          while (sent < n && sent - done < w && sender.sendable()) {
            sender.send(bytes ?? make!(sent), undefined, 0).t0 = performance.now();
            sent++;
          }
        };
        sender.on('accepted', (ctx: Any) => {
          lat.add(performance.now() - ctx.delivery.t0);
          dog.tick();
          if (++done === n) resolve();
          else pump();
        });
        sender.on('rejected', (ctx: Any) => reject(new Error(`send rejected: ${JSON.stringify(ctx.delivery.remote_state?.error)}`)));
        sender.on('released', () => reject(new Error('send released')));
        sender.on('sendable', pump);
        conn.on('disconnected', () => reject(new Error(`${t.name}: disconnected during send`)));
        pump();
      }),
    );
    const secs = (performance.now() - t0) / 1000;
    return { msgsPerSec: Math.round(n / secs), ...lat.summary() };
  } finally {
    await closeConn(conn);
  }
}

/** Peek-lock receive + complete of `n` messages from `queue` with credit `w`; msgs/s. */
export async function receiveRun(t: Target, queue: string, n: number, w: number): Promise<Record<string, number>> {
  const conn = await connect(t);
  const dog = new Watchdog();
  const t0 = performance.now();
  try {
    const receiver = conn.open_receiver(receiverOpts(t, queue, w));
    await dog.guard(
      `${t.name} receive`,
      new Promise<void>((resolve, reject) => {
        let got = 0;
        let completed = 0;
        receiver.on('message', (ctx: Any) => {
          ctx.delivery.accept();
          dog.tick();
          // Settle mode first: the broker sends nothing back; closeConn below waits for it to catch up.
          if (++got === n && t.rcvSettleMode === 0) resolve();
        });
        receiver.on('settled', () => {
          if (++completed === n) resolve();
        });
        receiver.on('receiver_error', (ctx: Any) => reject(new Error(`receiver error: ${JSON.stringify(ctx.receiver.error)}`)));
        conn.on('disconnected', () => reject(new Error(`${t.name}: disconnected during receive`)));
      }),
    );
  } finally {
    await closeConn(conn);
  }
  return { msgsPerSec: Math.round(n / ((performance.now() - t0) / 1000)) };
}

/**
 * Sends and receives at once: `n` messages with at most `w` unsettled, paced at `rate` msg/s (0 = as fast as
 * credit allows), received with credit `w`. Latency send → accepted and send → received (end to end).
 */
export async function e2eRun(t: Target, queue: string, n: number, w: number, size: number, rate: number): Promise<Record<string, number>> {
  const sconn = await connect(t, 'bench-send');
  const rconn = await connect(t, 'bench-recv');
  const dog = new Watchdog();
  const sentAt = new Float64Array(n);
  const acc = new Samples(n);
  const e2e = new Samples(n);
  let tick: NodeJS.Timeout | undefined;
  try {
    const receiver = rconn.open_receiver(receiverOpts(t, queue, Math.max(w, 10)));
    await new Promise<void>((resolve) => receiver.once('receiver_open', resolve));
    const sender = await openSender(sconn, senderOpts(t, queue));
    const { bytes, offset } = indexedTemplate(size);
    const t0 = performance.now();
    await dog.guard(
      `${t.name} e2e`,
      new Promise<void>((resolve, reject) => {
        let sent = 0;
        let accepted = 0;
        let received = 0;
        let completed = 0;
        const finish = (): void => {
          if (accepted === n && (t.rcvSettleMode === 0 ? received === n : completed === n)) resolve();
        };
        const pump = (): void => {
          const due = rate > 0 ? Math.min(n, Math.floor(((performance.now() - t0) / 1000) * rate) + 1) : n;
          while (sent < due && sent - accepted < w && sender.sendable()) {
            const b = Buffer.from(bytes);
            b.writeUInt32BE(sent, offset);
            sentAt[sent] = performance.now();
            sender.send(b, undefined, 0).t0 = sentAt[sent];
            sent++;
          }
          if (rate > 0 && sent < n) tick = setTimeout(pump, 1);
        };
        sender.on('accepted', (ctx: Any) => {
          acc.add(performance.now() - ctx.delivery.t0);
          accepted++;
          if (rate === 0) pump();
          finish();
        });
        sender.on('rejected', () => reject(new Error('send rejected')));
        sender.on('sendable', () => rate === 0 && pump());
        receiver.on('message', (ctx: Any) => {
          const i = ctx.message.application_properties?.i as number;
          e2e.add(performance.now() - sentAt[i]!);
          ctx.delivery.accept();
          received++;
          dog.tick();
          finish();
        });
        receiver.on('settled', () => {
          completed++;
          finish();
        });
        for (const c of [sconn, rconn]) c.on('disconnected', () => reject(new Error(`${t.name}: disconnected during e2e`)));
        pump();
      }),
    );
    const secs = (performance.now() - t0) / 1000;
    return { msgsPerSec: Math.round(n / secs), ...acc.summary('accepted_'), ...e2e.summary() };
  } finally {
    clearTimeout(tick);
    await Promise.all([closeConn(sconn), closeConn(rconn)]);
  }
}
