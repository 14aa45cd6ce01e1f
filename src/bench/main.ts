// `npm run bench`: a load generator on rhea, separate from the broker's code paths, that drives AMQP 1.0
// brokers over real sockets. By default it starts peeklock itself (a child process, temp data dir, fsync on);
// `--peers` runs the same scenarios against peeklock, the null broker (the Node/rhea ceiling) and RabbitMQ,
// one broker at a time, and prints them side by side; `--scale` adds the backlog, lock, queue-count, fan-out
// and session scenarios; `--small-credit` the SDK-like credit 1 and 10 receivers; `--soak-minutes` a paced soak.
// The generator and the brokers get CPUs of their own where the machine allows (pin.ts). Medians of repeated runs;
// Markdown tables and one line of JSON. Flags: docs/performance.md.

import os from 'node:os';
import { Command } from 'commander';
import type { Target } from './generator.js';
import { externalTarget, startNullBroker, startPeeklock, startRabbitMQ } from './peers.js';
import { printReport, type Report } from './report.js';
import { runScale, type ScaleRow } from './scale.js';
import { embeddedStart } from './embedded.js';
import { runSmallCredit } from './small-credit.js';
import { soak } from './soak.js';
import { setUpPinning } from './pin.js';
import { profileInto, summarize, takeSummaries } from './profile.js';
import { expiryLag, runStandard, type Row } from './scenarios.js';

interface Opts {
  host?: string;
  profile?: string;
  port?: number;
  address: string;
  username?: string;
  password?: string;
  messages: number;
  repeats: number;
  rate: number;
  pacedMessages: number;
  quick?: boolean;
  peers?: boolean;
  brokers?: string;
  standard: boolean;
  smallCredit?: boolean;
  smallCreditMessages: number;
  json?: boolean;
  scale?: boolean;
  scaleMessages: number;
  scaleDrain?: number;
  scaleFillSenders: number;
  scaleFillWindow: number;
  scaleFillBatch: number;
  scaleDeepSessions: number;
  scaleDeepKill?: boolean;
  soakMinutes: number;
  soakRate: number;
  pin: boolean;
  scaleLocks: number;
  scaleLockSeconds: number;
  scaleLockRate: number;
  scaleOnly?: string;
  scaleQueues: number;
  scaleQueueMessages: number;
  scaleFanoutMessages: number;
  scaleSessions: number;
  scaleReceivers: number;
  scaleSessionLinks: number;
  embeddedStart?: number;
}

const int = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`not a whole number: ${v}`);
  return n;
};

function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model.trim() ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Linux ${os.release()}, Node ${process.version}`;
}

async function main(): Promise<void> {
  const opts = new Command()
    .name('npm run bench --')
    .option('--peers', 'run against peeklock, the null broker and RabbitMQ, side by side')
    .option('--brokers <list>', 'comma-separated subset of peeklock,peeklock-tls,peeklock-ws,null,rabbitmq (default: peeklock; --peers: all)')
    .option('--host <host>', 'drive an already running broker instead of starting peeklock')
    .option('--port <n>', 'its port', int)
    .option('--address <q>', 'its queue address', 'bench')
    .option('--username <u>', 'its SASL PLAIN user name')
    .option('--password <p>', 'its SASL PLAIN password')
    .option('-n, --messages <n>', 'messages per run', int, 20_000)
    .option('-r, --repeats <n>', 'runs per scenario (median reported)', int, 3)
    .option('--rate <n>', 'offered load of the paced end-to-end scenario, msg/s', int, 1000)
    .option('--paced-messages <n>', 'messages in the paced end-to-end scenario', int, 3000)
    .option('--quick', 'only W=100 1 KiB send/receive (with the commit round trip, its waits and the disk\'s fdatasync), the small-credit and the end-to-end scenarios')
    .option('--no-standard', 'skip the standard scenarios (e.g. with --scale)')
    .option('--small-credit', 'add receive + complete with credit 1 (as subscribe()) and batches of 10 (as receiveMessages(10))')
    .option('--small-credit-messages <n>', 'messages per small-credit run', int, 2000)
    .option('--scale', 'add the scale scenarios (peeklock only)')
    .option('--scale-messages <n>', 'deep-queue backlog, 1 KiB messages', int, 100_000)
    .option('--scale-drain <n>', 'deep queue: messages received + completed after the restart (default: all up to 1000000, else 200000)', int)
    .option('--scale-fill-senders <n>', 'deep queue: connections filling it at once', int, 1)
    .option('--scale-fill-window <n>', 'deep queue: messages in flight per filling connection', int, 1000)
    .option('--scale-fill-batch <n>', 'deep queue: messages per batch transfer, as ServiceBusMessageBatch sends them (1: one per transfer)', int, 100)
    .option('--scale-deep-sessions <n>', 'deep queue: a session-enabled queue, its messages spread over n sessions (0: no sessions)', int, 0)
    .option('--scale-deep-kill', 'deep queue: restart by kill -9 right after the fill, so the start replays the log, instead of SIGTERM')
    .option('--scale-locks <n>', 'outstanding locks left to expire', int, 20_000)
    .option('--scale-lock-seconds <n>', 'their lock duration (0: enough to take every lock first)', int, 0)
    .option('--scale-only <names>', 'comma-separated scale scenarios to run: deep, lock, many, fan, sessions, slow')
    .option('--scale-lock-rate <n>', 'locks taken per second, so they lapse at that rate (0: unpaced)', int, 2_000)
    .option('--scale-queues <n>', 'queues with traffic spread across them', int, 1000)
    .option('--scale-queue-messages <n>', 'messages spread over those queues', int, 20_000)
    .option('--scale-fanout-messages <n>', 'messages sent to each fan-out topic', int, 5000)
    .option('--scale-sessions <n>', 'sessions of one message each', int, 20_000)
    .option('--scale-receivers <n>', 'receivers accepting sessions at once', int, 8)
    .option('--scale-session-links <n>', 'session links each of those receivers has open at once', int, 8)
    .option('--soak-minutes <n>', 'add the soak: N minutes of paced send + receive+complete, RSS and latency per minute (0: off)', int, 0)
    .option('--soak-rate <n>', 'offered load of the soak, msg/s', int, 1000)
    .option('--no-pin', 'do not pin the generator and the brokers to CPUs of their own with taskset')
    .option('--embedded-start [n]', 'only measure embedded startBroker() start-to-ready and stop, n starts (default 100)', int)
    .option('--profile <dir>', "profile the brokers (V8's --cpu-prof into <dir>) and report where each scenario spent their time")
    .option('--json', 'print only the JSON')
    .parse()
    .opts<Opts>();
  const log = (line: string): void => void process.stderr.write(line + '\n');
  if (opts.embeddedStart !== undefined) {
    const n = (opts.embeddedStart as unknown) === true ? 100 : opts.embeddedStart;
    const figures = await embeddedStart(n, log);
    // In process: the broker is this process, so there is nothing to place apart.
    const report: Report = { machine: machine(), pinning: 'embedded (one process, not pinned)', command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(), repeats: 1, rows: [], extra: [{ ...figures }], scale: [] };
    return printReport(report, !!opts.json);
  }
  if (opts.profile) profileInto(opts.profile);
  const pin = setUpPinning(!opts.pin);
  log(pin.note);
  const started = performance.now();
  const names = opts.host ? ['external'] : (opts.brokers ?? (opts.peers ? 'peeklock,peeklock-tls,peeklock-ws,null,rabbitmq' : 'peeklock')).split(',').map((s) => s.trim());
  const rows: Row[] = [];
  const extra: Record<string, unknown>[] = [];
  const plan = { messages: opts.messages, repeats: opts.repeats, rate: opts.rate, pacedMessages: opts.pacedMessages, quick: !!opts.quick, log };

  // The small-credit rows are how the SDKs receive by default, so --quick includes them.
  const smallCredit = !!opts.smallCredit || !!opts.quick;
  if (opts.standard || smallCredit) {
    for (const name of names) {
      let t: Target | null;
      if (name === 'external') t = externalTarget({ ...opts, host: opts.host! });
      else if (name === 'peeklock') t = await startPeeklock();
      else if (name === 'peeklock-tls') t = await startPeeklock(undefined, undefined, 'tls');
      else if (name === 'peeklock-ws') t = await startPeeklock(undefined, undefined, 'ws');
      else if (name === 'null') t = await startNullBroker();
      else if (name === 'rabbitmq') t = startRabbitMQ(log);
      else throw new Error(`unknown broker ${name} (peeklock, peeklock-tls, peeklock-ws, null, rabbitmq)`);
      if (!t) continue;
      const t0 = performance.now();
      log(`${t.name}: listening on ${t.host}:${t.port}${t.pid ? ` (pid ${t.pid})` : ''}`);
      try {
        if (opts.standard) rows.push(...(await runStandard(t, plan)));
        if (smallCredit) rows.push(...(await runSmallCredit(t, opts.smallCreditMessages, opts.repeats, log)));
        if (opts.standard && name === 'peeklock') {
          const lag = await expiryLag(t, 'expiry', 1000, 5);
          extra.push({ scenario: 'peeklock lock expiry → redelivery (1,000 locks, PT5S)', ...lag });
        }
      } catch (err) {
        // One broker failing (a peer refusing a link, a stall) must not cost the others' figures.
        log(`${t.name}: failed: ${String(err)}`);
        extra.push({ scenario: `${t.name} failed`, error: String(err) });
      } finally {
        await t.stop();
        log(`${t.name}: done in ${Math.round((performance.now() - t0) / 1000)} s`);
        // The profile is written as the broker exits.
        summarize(t.pid, t.name);
      }
    }
  }

  let scale: ScaleRow[] = [];
  if (opts.scale) {
    scale = await runScale({
      messages: opts.scaleMessages,
      drain: opts.scaleDrain,
      fillSenders: Math.max(1, opts.scaleFillSenders),
      fillWindow: Math.max(1, opts.scaleFillWindow),
      fillBatch: Math.max(1, Math.min(200, opts.scaleFillBatch)),
      deepSessions: Math.max(0, opts.scaleDeepSessions),
      deepKill: !!opts.scaleDeepKill,
      locks: opts.scaleLocks,
      lockSeconds: opts.scaleLockSeconds,
      lockRate: opts.scaleLockRate,
      only: opts.scaleOnly?.split(',').map((x) => x.trim()).filter(Boolean),
      queues: opts.scaleQueues,
      queueMessages: opts.scaleQueueMessages,
      fanoutMessages: opts.scaleFanoutMessages,
      sessions: opts.scaleSessions,
      receivers: opts.scaleReceivers,
      sessionLinks: opts.scaleSessionLinks,
      log,
    });
  }

  if (opts.soakMinutes > 0) {
    log(`soak: ${opts.soakMinutes} min at ${opts.soakRate}/s`);
    try {
      scale.push({ ...(await soak({ minutes: opts.soakMinutes, rate: opts.soakRate, log })) } as ScaleRow);
    } catch (err) {
      log(`  soak failed: ${String(err)}`);
      scale.push({ scenario: 'soak', error: String(err) });
    }
  }

  extra.push(...takeSummaries());
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim();
  const totalS = Math.round((performance.now() - started) / 1000);
  const report: Report = { machine: machine(), pinning: pin.note, command, repeats: opts.repeats, totalS, rows, extra, scale };
  printReport(report, !!opts.json);
}

main().then(
  // rhea keeps sockets and timers of closed containers referenced for a while; the report is out, so leave.
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${String(err)}\n`);
    process.exit(1);
  },
);
