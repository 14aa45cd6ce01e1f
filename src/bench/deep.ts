// Scale scenario `deep`: a backlog of N × 1 KiB messages in one queue. Filled over several connections at once
// (so a 10,000,000-message fill takes minutes, not an hour), then: the data directory's size on disk, RSS with the
// backlog loaded, a restart (SIGTERM, start on the same data dir, time to the `listening` line), RSS right after
// it, the time to the first delivery, the receive + complete rate over a bounded drain (not the whole backlog
// above 1,000,000), and RSS after the drain. RSS is split into RssAnon (heap, buffers: what the broker holds) and
// RssFile (mapped data file pages, which the kernel may drop at will).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { closeConn, connect, encodedMessage, openSender, receiverOpts, Samples, senderOpts, Watchdog, type Any, type Target } from './generator.js';
import { ProcSampler, startPeeklock } from './peers.js';

/** Sizes of the deep-queue scenario. */
export interface DeepPlan {
  messages: number;
  /** Messages received + completed after the restart; undefined = all up to 1,000,000, else 200,000. */
  drain?: number;
  /** Connections filling the queue at once, each with `window` messages in flight. */
  senders: number;
  window: number;
  /** Messages per transfer in the Service Bus batch format (as ServiceBusMessageBatch sends them); 1 = one each. */
  batch: number;
  /**
   * A session-enabled queue, its messages spread round-robin over this many sessions (one session per transfer);
   * 0 or absent: a plain queue. The drain is then skipped: what is measured is the restart and its memory.
   */
  sessions?: number;
  /** Restart by kill -9 right after the fill (the log unapplied to a checkpoint is replayed) instead of SIGTERM. */
  kill?: boolean;
  log: (line: string) => void;
}

/** The drain when none is given: the whole backlog up to 1,000,000, 200,000 of a deeper one. */
export function defaultDrain(messages: number): number {
  return messages <= 1_000_000 ? messages : 200_000;
}

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;
const PROGRESS_MS = 15_000;

/** RSS of a process split as /proc/<pid>/status does, MB. */
function rss(pid: number | undefined, prefix: string): Record<string, number> {
  const p = new ProcSampler(pid);
  return { [`${prefix}RssMB`]: p.statusMB('VmRSS'), [`${prefix}AnonMB`]: p.statusMB('RssAnon'), [`${prefix}FileMB`]: p.statusMB('RssFile') };
}

/** Space the directory takes on disk (du), MB. */
function duMB(dir: string): number {
  const r = spawnSync('du', ['-sm', dir], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.split('\t')[0]) : NaN;
}

/** The Service Bus batch message format: one data section per inner message. */
const BATCH_FORMAT = 0x80013700;

/** A batch transfer's payload: `k` data sections, each holding one encoded message. */
function batchPayload(message: Buffer, k: number): Buffer {
  // A data section: descriptor 0x00 0x53 0x75, then vbin32 (0xb0, 4-byte length, bytes).
  const head = Buffer.from([0x00, 0x53, 0x75, 0xb0, 0, 0, 0, 0]);
  head.writeUInt32BE(message.length, 4);
  return Buffer.concat(Array.from({ length: k }, () => [head, message]).flat());
}

/**
 * Durable sends of `n` copies of one 1 KiB message over `senders` connections with `w` messages in flight each,
 * `batch` messages per transfer. A batch is accepted as a whole once on disk, so the fill is bounded by the
 * broker's write path rather than by per-transfer work.
 */
async function fill(t: Target, queue: string, n: number, senders: number, w: number, batch: number, log: (l: string) => void, sessions = 0): Promise<Record<string, number>> {
  const conns = await Promise.all(Array.from({ length: senders }, (_, i) => connect(t, `bench-fill-${i}`)));
  // Every k-th send's latency, so the samples stay bounded (≤ 200,000) at any depth.
  const every = Math.max(1, Math.ceil(n / 200_000));
  const lat = new Samples(Math.ceil(n / every));
  const dog = new Watchdog();
  const message = encodedMessage(1024);
  const full = batch > 1 ? batchPayload(message, batch) : message;
  // With sessions, each transfer goes to the next session (its messages encoded per transfer: 10,000 sessions'
  // payloads would not fit in memory ahead of time).
  let nextSession = 0;
  const sessionPayload = (k: number): Buffer => {
    const m = encodedMessage(1024, { group_id: `s${nextSession++ % sessions}` });
    return batch === 1 ? m : batchPayload(m, k);
  };
  const transfers = Math.max(1, Math.ceil(w / batch));
  let sent = 0;
  let done = 0;
  const t0 = performance.now();
  const progress = setInterval(() => log(`  deep fill: ${done.toLocaleString('en-US')} of ${n.toLocaleString('en-US')} (${Math.round(done / ((performance.now() - t0) / 1000))}/s)`), PROGRESS_MS);
  try {
    const links = await Promise.all(conns.map((c) => openSender(c, senderOpts(t, queue))));
    await dog.guard(
      'deep fill',
      new Promise<void>((resolve, reject) => {
        for (const [i, l] of links.entries()) {
          let inFlight = 0;
          const pump = (): void => {
            while (sent < n && inFlight < transfers && l.sendable()) {
              const k = Math.min(batch, n - sent);
              const format = batch === 1 ? 0 : BATCH_FORMAT;
              const d = sessions > 0 ? l.send(sessionPayload(k), undefined, format) : batch === 1 ? l.send(message, undefined, 0) : l.send(k === batch ? full : batchPayload(message, k), undefined, BATCH_FORMAT);
              d.k = k;
              if (Math.floor(sent / every) !== Math.floor((sent + k) / every)) d.t0 = performance.now();
              sent += k;
              inFlight++;
            }
          };
          l.on('accepted', (ctx: Any) => {
            if (ctx.delivery.t0 !== undefined) lat.add(performance.now() - ctx.delivery.t0);
            inFlight--;
            dog.tick();
            done += ctx.delivery.k as number;
            if (done === n) resolve();
            else pump();
          });
          l.on('rejected', (ctx: Any) => reject(new Error(`send rejected: ${JSON.stringify(ctx.delivery.remote_state?.error)}`)));
          l.on('sendable', pump);
          conns[i].on('disconnected', () => reject(new Error(`${t.name}: disconnected during the fill`)));
          pump();
        }
      }),
    );
  } finally {
    clearInterval(progress);
    await Promise.all(conns.map((c) => closeConn(c)));
  }
  const secs = (performance.now() - t0) / 1000;
  const s = lat.summary();
  return { fillS: round(secs, 1), fillPerSec: Math.round(n / secs), fillP50Ms: s.p50Ms!, fillP99Ms: s.p99Ms! };
}

/** Receive + complete of `n` with credit 100; ms from connecting to the first delivery and the rate after it. */
async function drain(t: Target, queue: string, n: number, log: (l: string) => void): Promise<Record<string, number>> {
  const t0 = performance.now();
  const conn = await connect(t, 'bench-drain');
  const dog = new Watchdog();
  let first = NaN;
  let completed = 0;
  const progress = setInterval(() => log(`  deep drain: ${completed.toLocaleString('en-US')} of ${n.toLocaleString('en-US')}`), PROGRESS_MS);
  try {
    const receiver = conn.open_receiver(receiverOpts(t, queue, 100));
    await dog.guard(
      'deep drain',
      new Promise<void>((resolve, reject) => {
        let got = 0;
        receiver.on('message', (ctx: Any) => {
          if (got++ === 0) first = performance.now();
          // Credit 100 may bring up to 100 deliveries past n: left locked, released when the link closes.
          if (got <= n) ctx.delivery.accept();
          dog.tick();
        });
        receiver.on('settled', () => {
          if (++completed === n) resolve();
        });
        receiver.on('receiver_error', (ctx: Any) => reject(new Error(`receiver error: ${JSON.stringify(ctx.receiver.error)}`)));
        conn.on('disconnected', () => reject(new Error(`${t.name}: disconnected during the drain`)));
      }),
    );
    const secs = (performance.now() - first) / 1000;
    return { firstDeliveryMs: round(first - t0, 1), drained: n, drainPerSec: Math.round(n / secs) };
  } finally {
    clearInterval(progress);
    await closeConn(conn);
  }
}

/** The scenario on a fresh peeklock whose data directory is removed at the end; one row of figures. */
export async function deepQueue(plan: DeepPlan): Promise<Record<string, string | number>> {
  const n = plan.messages;
  const drainN = Math.min(n, plan.drain ?? defaultDrain(n));
  const sessions = plan.sessions ?? 0;
  const t = await startPeeklock([{ name: 'deep', session: sessions > 0 }]);
  try {
    const loaded = await fill(t, 'deep', n, plan.senders, plan.window, plan.batch, plan.log, sessions);
    const disk = duMB(t.dataDir);
    const rssLoaded = rss(t.pid, 'loaded');
    // The log's segments at the restart: after a kill -9, what recovery scans (and replays past LMDB's LSN).
    const logMB = duMB(path.join(t.dataDir, 'log'));
    plan.log(`  deep: filled in ${loaded.fillS} s; log ${logMB} MB; restarting by ${plan.kill ? 'kill -9' : 'SIGTERM'}`);
    const restart = await t.restart(plan.kill ? 'SIGKILL' : 'SIGTERM');
    const how = { restartBy: plan.kill ? 'kill -9' : 'SIGTERM', logAtRestartMB: logMB };
    const rssRestarted = rss(t.pid, 'restarted');
    if (sessions > 0) {
      return {
        scenario: `deep session queue ${n.toLocaleString('en-US')} × 1KiB over ${sessions.toLocaleString('en-US')} sessions (filled by ${plan.senders} × W=${plan.window}${plan.batch > 1 ? ` in batches of ${plan.batch}` : ''}; not drained)`,
        ...loaded,
        dataDirMB: disk,
        ...rssLoaded,
        ...how,
        stopS: round(restart.stopS),
        restartToListeningS: round(restart.listeningS),
        ...rssRestarted,
      };
    }
    const sampler = new ProcSampler(t.pid);
    sampler.start();
    const d = await drain(t, 'deep', drainN, plan.log);
    const during = sampler.stop();
    const rssDrained = rss(t.pid, 'drained');
    return {
      scenario: `deep queue ${n.toLocaleString('en-US')} × 1KiB (filled by ${plan.senders} × W=${plan.window}${plan.batch > 1 ? ` in batches of ${plan.batch}` : ''}; ${drainN === n ? 'all' : drainN.toLocaleString('en-US')} drained)`,
      ...loaded,
      dataDirMB: disk,
      ...rssLoaded,
      ...how,
      stopS: round(restart.stopS),
      restartToListeningS: round(restart.listeningS),
      ...rssRestarted,
      restartToFirstDeliveryS: round(restart.listeningS + d.firstDeliveryMs! / 1000),
      ...d,
      drainMaxRssMB: during.maxRssMB,
      ...rssDrained,
    };
  } finally {
    await t.stop();
    if (fs.existsSync(t.dataDir)) plan.log(`  deep: could not remove ${t.dataDir}`);
  }
}
