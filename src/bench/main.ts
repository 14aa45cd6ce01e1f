// `npm run bench`: a load generator on rhea, separate from the broker's code paths, that drives an AMQP 1.0
// broker over real sockets. By default it starts peeklock itself (a child process, temp data dir, fsync on)
// and reports: durable sends/s with W in flight (send → accepted), peek-lock receive + complete/s, and the
// lag between a lock's expiry and the message's redelivery. Medians of repeated runs; table and JSON.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import rhea from 'rhea';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Target {
  host: string;
  port: number;
  username?: string;
  password?: string;
  stop(): Promise<void>;
}

const BIN = fileURLToPath(new URL('../../bin/peeklock.js', import.meta.url));

/** Starts peeklock as a child with a fresh data dir and queues `bench` (PT1M) and `expiry` (PT5S). */
async function startPeeklock(): Promise<Target> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-bench-'));
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      UserConfig: {
        Namespaces: [
          {
            Name: 'sbemulatorns',
            Queues: [
              { Name: 'bench', Properties: { LockDuration: 'PT1M', MaxDeliveryCount: 100 } },
              { Name: 'expiry', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 100 } },
            ],
          },
        ],
        Logging: { Type: 'Console' },
      },
      Broker: { Host: '127.0.0.1', Port: 0, DataDir: path.join(dir, 'data'), LogLevel: 'warn' },
    }),
  );
  const proc: ChildProcess = spawn(process.execPath, [BIN, 'start', '--config', config, '--log-level', 'info'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve((JSON.parse(line) as { port: number }).port);
    });
    proc.once('exit', (code) => reject(new Error(`peeklock exited ${code}`)));
  });
  return {
    host: '127.0.0.1',
    port,
    // SASL PLAIN with the default policy, as Service Bus accepts from non-SDK AMQP clients.
    username: 'RootManageSharedAccessKey',
    password: 'SAS_KEY_VALUE',
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function connect(t: Target): Promise<Any> {
  const c = rhea.create_container({ id: 'bench' });
  return new Promise((resolve, reject) => {
    const auth = t.username ? { username: t.username, password: t.password } : {};
    const conn = c.connect({ host: t.host, port: t.port, reconnect: false, tcp_no_delay: true, ...auth } as Any);
    conn.once('connection_open', () => resolve(conn));
    conn.once('disconnected', (ctx: Any) => reject(ctx.error ?? new Error('disconnected')));
  });
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Durable sends with `w` unsettled; returns msgs/s and send→accepted latency percentiles. */
async function sendRun(t: Target, address: string, n: number, w: number, size: number): Promise<Record<string, number>> {
  const conn = await connect(t);
  const sender = conn.open_sender({ target: { address } });
  await new Promise((r) => sender.once('sendable', r));
  const body = rhea.message.data_section(Buffer.alloc(size, 0x61));
  const lat: number[] = [];
  let sent = 0;
  let done = 0;
  const t0 = performance.now();
  await new Promise<void>((resolve) => {
    const pump = (): void => {
      while (sent < n && sent - done < w && sender.sendable()) {
        const d = sender.send({ body });
        d.t0 = performance.now();
        sent++;
      }
    };
    sender.on('accepted', (ctx: Any) => {
      lat.push(performance.now() - ctx.delivery.t0);
      if (++done === n) resolve();
      else pump();
    });
    sender.on('rejected', () => {
      throw new Error('send rejected');
    });
    sender.on('sendable', pump);
    pump();
  });
  const secs = (performance.now() - t0) / 1000;
  conn.close();
  lat.sort((a, b) => a - b);
  return { msgsPerSec: n / secs, p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), maxMs: lat[lat.length - 1]! };
}

/** Peek-lock receive + complete with credit `w` until `n` messages; returns msgs/s. */
async function receiveRun(t: Target, address: string, n: number, w: number): Promise<Record<string, number>> {
  const conn = await connect(t);
  const receiver = conn.open_receiver({ source: { address }, credit_window: w, autoaccept: false, rcv_settle_mode: 1 });
  let got = 0;
  let completed = 0;
  const t0 = performance.now();
  await new Promise<void>((resolve) => {
    receiver.on('message', (ctx: Any) => {
      got++;
      ctx.delivery.accept();
    });
    receiver.on('settled', () => {
      if (++completed === n) resolve();
    });
  });
  const secs = (performance.now() - t0) / 1000;
  conn.close();
  return { msgsPerSec: got / secs };
}

/** Locks `n` messages without settling, then measures redelivery time minus x-opt-locked-until. */
async function expiryLag(t: Target, n: number): Promise<Record<string, number>> {
  await sendRun(t, 'expiry', n, 100, 1024);
  const holder = await connect(t);
  const until = new Map<string, number>();
  const a = holder.open_receiver({ source: { address: 'expiry' }, credit_window: 0, autoaccept: false, rcv_settle_mode: 1 });
  a.add_credit(n);
  await new Promise<void>((resolve) => {
    a.on('message', (ctx: Any) => {
      until.set(String(ctx.message.message_annotations['x-opt-sequence-number']), ctx.message.message_annotations['x-opt-locked-until'].getTime());
      if (until.size === n) resolve();
    });
  });
  const other = await connect(t);
  const b = other.open_receiver({ source: { address: 'expiry' }, credit_window: 500, autoaccept: true, rcv_settle_mode: 0 });
  const lags: number[] = [];
  await new Promise<void>((resolve) => {
    b.on('message', (ctx: Any) => {
      const seq = String(ctx.message.message_annotations['x-opt-sequence-number']);
      lags.push(Date.now() - until.get(seq)!);
      if (lags.length === n) resolve();
    });
  });
  holder.close();
  other.close();
  lags.sort((x, y) => x - y);
  return { locks: n, lagP50Ms: percentile(lags, 50), lagP99Ms: percentile(lags, 99), lagMaxMs: lags[lags.length - 1]! };
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--host <host>', 'broker host (default: start peeklock)')
    .option('--port <n>', 'broker port', (v) => Number(v))
    .option('--address <q>', 'queue address for an external broker', 'bench')
    .option('--username <u>', 'SASL PLAIN user name for an external broker')
    .option('--password <p>', 'SASL PLAIN password for an external broker')
    .option('-n, --messages <n>', 'messages per run', (v) => Number(v), 20_000)
    .option('-r, --repeats <n>', 'runs per scenario (median reported)', (v) => Number(v), 3)
    .option('--json', 'print JSON only')
    .parse()
    .opts<{ host?: string; port?: number; address: string; username?: string; password?: string; messages: number; repeats: number; json?: boolean }>();
  const target: Target = opts.host
    ? { host: opts.host, port: opts.port ?? 5672, username: opts.username, password: opts.password, stop: async () => undefined }
    : await startPeeklock();
  const address = opts.host ? opts.address : 'bench';
  const results: Record<string, unknown>[] = [];
  try {
    for (const [w, size] of [[1, 1024], [100, 1024], [1000, 1024], [100, 65536]] as const) {
      const n = w === 1 ? Math.min(opts.messages, 2000) : size > 4096 ? Math.min(opts.messages, 4000) : opts.messages;
      const sends: Record<string, number>[] = [];
      const recvs: Record<string, number>[] = [];
      for (let r = 0; r < opts.repeats; r++) {
        sends.push(await sendRun(target, address, n, w, size));
        recvs.push(await receiveRun(target, address, n, Math.max(w, 10)));
      }
      const pick = (xs: Record<string, number>[], k: string): number => Math.round(median(xs.map((x) => x[k]!)) * 100) / 100;
      results.push({ scenario: `send W=${w} ${size}B`, n, msgsPerSec: pick(sends, 'msgsPerSec'), p50Ms: pick(sends, 'p50Ms'), p99Ms: pick(sends, 'p99Ms'), maxMs: pick(sends, 'maxMs') });
      results.push({ scenario: `receive+complete credit=${Math.max(w, 10)} ${size}B`, n, msgsPerSec: pick(recvs, 'msgsPerSec') });
    }
    if (!opts.host) results.push({ scenario: 'lock expiry → redelivery (PT5S)', ...(await expiryLag(target, 1000)) });
  } finally {
    await target.stop();
  }
  if (opts.json) process.stdout.write(JSON.stringify(results) + '\n');
  else {
    for (const r of results) process.stdout.write(Object.entries(r).map(([k, v]) => `${k}=${v}`).join('  ') + '\n');
    process.stdout.write(JSON.stringify(results) + '\n');
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${String(err)}\n`);
  process.exit(1);
});
