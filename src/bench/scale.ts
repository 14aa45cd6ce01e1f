// Scale scenarios (`--scale`), on peeklock only, each on a fresh broker with a config generated for it: a
// deep queue (deep.ts), many outstanding locks expiring, 1,000 queues with traffic spread across them, topic
// fan-out to 1 and 10 subscriptions, message sessions accepted under contention, a slow consumer.
// Defaults are small enough for a few minutes; flags go up to the issue's sizes.

import {
  closeConn,
  connect,
  encodedMessage,
  openSender,
  receiverOpts,
  Samples,
  senderOpts,
  sendRun,
  Watchdog,
  type Any,
  type Target,
} from './generator.js';
import { ProcSampler, startPeeklock, type QueueSpec } from './peers.js';
import { expiryLag } from './scenarios.js';
import { summarize } from './profile.js';
import { slowConsumer } from './slow-consumer.js';
import { deepQueue } from './deep.js';

/** Sizes of the scale scenarios (see docs/performance.md for the flags). */
export interface ScalePlan {
  messages: number;
  /** Deep queue: messages drained after the restart (undefined: all up to 1,000,000, else 200,000). */
  drain?: number;
  /** Deep queue: connections filling it at once and sends in flight on each. */
  fillSenders: number;
  fillWindow: number;
  /** Deep queue: messages per batch transfer (1: one message per transfer). */
  fillBatch: number;
  /** Deep queue: a session-enabled queue with its messages spread over this many sessions (0: no sessions). */
  deepSessions?: number;
  /** Deep queue: restart by kill -9 (the log is replayed) instead of SIGTERM. */
  deepKill?: boolean;
  locks: number;
  /** Lock duration of the expiry queue; 0 = long enough to take every lock first. */
  lockSeconds: number;
  /** Locks taken per second (0 = as fast as the broker hands them out). */
  lockRate: number;
  queues: number;
  queueMessages: number;
  fanoutMessages: number;
  sessions: number;
  receivers: number;
  /** Session links each receiver connection has open at once (accept-next loops sharing it); default 8. */
  sessionLinks?: number;
  log: (line: string) => void;
  /** Only the scenarios whose names start with one of these (all when empty). */
  only?: string[];
}

/** One scale result: a scenario and its figures. */
export type ScaleRow = { scenario: string } & Record<string, string | number>;

const SESSION_FILTER = 'com.microsoft:session-filter';
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

/** Runs every scale scenario in turn, each on its own peeklock. */
export async function runScale(plan: ScalePlan): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  const steps: [string, () => Promise<ScaleRow[]>][] = [
    ['deep queue', async () => [{ ...(await deepQueue({ messages: plan.messages, drain: plan.drain, senders: plan.fillSenders, window: plan.fillWindow, batch: plan.fillBatch, sessions: plan.deepSessions, kill: plan.deepKill, log: plan.log })) } as ScaleRow]],
    ['lock expiry', () => manyLocks(plan)],
    ['many queues', () => manyQueues(plan)],
    ['fan-out', () => fanOut(plan)],
    ['sessions', () => sessions(plan)],
    ['slow consumer', async () => [{ ...(await slowConsumer()) } as ScaleRow]],
  ];
  for (const [name, step] of steps) {
    if (plan.only?.length && !plan.only.some((o) => name.startsWith(o))) continue;
    plan.log(`scale: ${name}`);
    const t0 = performance.now();
    try {
      const r = await step();
      plan.log(`  ${name}: done in ${Math.round((performance.now() - t0) / 1000)} s`);
      for (const row of r) plan.log(`  ${Object.entries(row).map(([k, v]) => `${k}=${v}`).join('  ')}`);
      rows.push(...r);
    } catch (err) {
      plan.log(`  ${name} failed: ${String(err)}`);
      rows.push({ scenario: name, error: String(err) });
    }
  }
  return rows;
}

/** Starts peeklock with these entities, runs `fn`, and always stops it. */
async function withPeeklock<T>(queues: QueueSpec[], topics: { name: string; subs: string[] }[], fn: (t: Awaited<ReturnType<typeof startPeeklock>>, startS: number) => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const t = await startPeeklock(queues, topics);
  try {
    return await fn(t, (performance.now() - t0) / 1000);
  } finally {
    await t.stop();
    summarize(t.pid, 'peeklock');
  }
}

/** M outstanding locks expiring: expiry → redelivery lag. */
function manyLocks(plan: ScalePlan): Promise<ScaleRow[]> {
  // Long enough that every lock is taken before the first expires (at ≥ 2,500 locks/s), within PT5M.
  const takeS = plan.locks / (plan.lockRate || 2500);
  const secs = plan.lockSeconds || Math.min(300, Math.max(5, Math.ceil(takeS) + 5));
  return withPeeklock([{ name: 'expiry', lock: `PT${secs}S` }], [], async (t) => {
    const r = await expiryLag(t, 'expiry', plan.locks, secs, plan.lockRate);
    const paced = plan.lockRate ? `taken at ${plan.lockRate}/s` : 'taken unpaced';
    return [{ scenario: `lock expiry ${plan.locks} locks (PT${secs}S, ${paced})`, ...r }];
  });
}

/** Round-robin sends over many links with at most `w` unsettled in total; returns msgs/s and latency. */
async function spreadSend(links: Any[], n: number, w: number, bytes: Buffer, dog: Watchdog): Promise<Record<string, number>> {
  const lat = new Samples(n);
  let sent = 0;
  let done = 0;
  let next = 0;
  const t0 = performance.now();
  await dog.guard(
    'spread send',
    new Promise<void>((resolve, reject) => {
      const pump = (): void => {
        // At most one full pass over the links without finding one with credit.
        for (let misses = 0; sent < n && sent - done < w && misses < links.length; ) {
          const l = links[next++ % links.length];
          if (!l.sendable()) {
            misses++;
            continue;
          }
          misses = 0;
          l.send(bytes, undefined, 0).t0 = performance.now();
          sent++;
        }
      };
      for (const l of links) {
        l.on('accepted', (ctx: Any) => {
          lat.add(performance.now() - ctx.delivery.t0);
          dog.tick();
          if (++done === n) resolve();
          else pump();
        });
        l.on('rejected', () => reject(new Error('send rejected')));
        l.on('sendable', pump);
      }
      pump();
    }),
  );
  return { msgsPerSec: Math.round(n / ((performance.now() - t0) / 1000)), ...lat.summary() };
}

/** Peek-lock receive + complete of `n` messages in total over receivers on these addresses. */
async function spreadReceive(t: Target, conns: Any[], queues: string[], n: number, credit: number, dog: Watchdog): Promise<number> {
  const t0 = performance.now();
  await dog.guard(
    'spread receive',
    new Promise<void>((resolve) => {
      let completed = 0;
      queues.forEach((q, i) => {
        const r = conns[i % conns.length].open_receiver(receiverOpts(t, q, credit));
        r.on('message', (ctx: Any) => {
          ctx.delivery.accept();
          dog.tick();
        });
        r.on('settled', () => {
          if (++completed === n) resolve();
        });
      });
    }),
  );
  return Math.round(n / ((performance.now() - t0) / 1000));
}

/** `queues` queues (generated config) with traffic spread across them, over several connections. */
function manyQueues(plan: ScalePlan): Promise<ScaleRow[]> {
  const names = Array.from({ length: plan.queues }, (_, i) => `q${String(i).padStart(5, '0')}`);
  return withPeeklock(names.map((name) => ({ name })), [], async (t, startS) => {
    // Receivers take credit 5 each; keep a connection's total credit well under rhea's 2,048 unsettled
    // deliveries per session (past it the broker's rhea reports "Next pending delivery not found").
    const credit = 5;
    const nConns = Math.max(4, Math.ceil((plan.queues * credit) / 1000));
    const conns = await Promise.all(Array.from({ length: nConns }, (_, i) => connect(t, `bench-${i}`)));
    const dog = new Watchdog();
    const s = new ProcSampler(t.pid);
    s.start();
    try {
      const links = await Promise.all(names.map((q, i) => openSender(conns[i % conns.length], senderOpts(t, q))));
      const send = await spreadSend(links, plan.queueMessages, 100, encodedMessage(1024), dog);
      const recv = await spreadReceive(t, conns, names, plan.queueMessages, credit, dog);
      return [
        {
          scenario: `${plan.queues} queues, ${plan.queueMessages} × 1KiB spread`,
          startToListeningS: round(startS),
          sendPerSec: send.msgsPerSec!,
          sendP99Ms: send.p99Ms!,
          receivePerSec: recv,
          ...s.stop(),
        },
      ];
    } finally {
      s.stop();
      await Promise.all(conns.map((c) => closeConn(c)));
    }
  });
}

/** Topic fan-out to 1 and to 10 subscriptions: sends/s to the topic, then receive + complete of every copy. */
function fanOut(plan: ScalePlan): Promise<ScaleRow[]> {
  const topics = [1, 10].map((k) => ({ name: `fan${k}`, subs: Array.from({ length: k }, (_, i) => `s${i}`) }));
  return withPeeklock([], topics, async (t) => {
    const rows: ScaleRow[] = [];
    for (const topic of topics) {
      const s = new ProcSampler(t.pid);
      s.start();
      const send = await sendRun(t, topic.name, plan.fanoutMessages, 100, 1024);
      const conn = await connect(t);
      try {
        const copies = plan.fanoutMessages * topic.subs.length;
        const addrs = topic.subs.map((sub) => `${topic.name}/Subscriptions/${sub}`);
        const recv = await spreadReceive(t, [conn], addrs, copies, 100, new Watchdog());
        rows.push({
          scenario: `fan-out ${topic.subs.length} sub${topic.subs.length > 1 ? 's' : ''}, ${plan.fanoutMessages} × 1KiB`,
          sendPerSec: send.msgsPerSec!,
          copiesWrittenPerSec: send.msgsPerSec! * topic.subs.length,
          sendP99Ms: send.p99Ms!,
          receiveCopiesPerSec: recv,
          ...s.stop(),
        });
      } finally {
        s.stop();
        await closeConn(conn);
      }
    }
    return rows;
  });
}

/** Accepts the next session on `queue`, takes its one message, completes it, detaches. False when none is left. */
function acceptOne(t: Target, conn: Any, queue: string, dog: Watchdog): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const r = conn.open_receiver({
      ...receiverOpts(t, queue, 0, { filter: { [SESSION_FILTER]: null } }),
      // How long the broker may hold the attach reply waiting for a free session.
      properties: { 'com.microsoft:timeout': 2000 },
    });
    r.once('receiver_open', () => {
      // The granted id comes back in the reply's source filter; a null source means no session was free.
      if (!r.remote.attach.source?.filter?.[SESSION_FILTER]) return resolve(false);
      r.add_credit(1);
    });
    r.on('message', (ctx: Any) => ctx.delivery.accept());
    r.on('settled', () => {
      dog.tick();
      r.close();
    });
    r.once('receiver_close', () => resolve(true));
    r.once('receiver_error', (ctx: Any) => {
      const cond = ctx.receiver.error?.condition as string | undefined;
      if (cond === 'com.microsoft:timeout' || cond === 'amqp:resource-limit-exceeded') resolve(false);
      else if (!r.remote.attach?.source) resolve(false);
      else reject(new Error(`session receiver: ${JSON.stringify(ctx.receiver.error)}`));
    });
  });
}

/**
 * Sessions of one message each, accepted by several receivers at once: sessions/s. As an SDK client does, every
 * accepted session is its own receiver link (accept-next-session: a session filter of null), closed once its one
 * message is completed; each receiver connection runs `sessionLinks` such accept loops at once, as an application
 * serving several sessions concurrently on one ServiceBusClient does (.NET's session processor runs
 * MaxConcurrentSessions of them on one connection, 8 by default). One link at a time per connection measures round trips and
 * commit waits, not what the broker can accept.
 */
function sessions(plan: ScalePlan): Promise<ScaleRow[]> {
  const links = Math.max(1, plan.sessionLinks ?? 8);
  return withPeeklock([{ name: 'sess', session: true }], [], async (t) => {
    await sendRun(t, 'sess', plan.sessions, 100, 1024, (i) => encodedMessage(1024, { group_id: `s${i}` }));
    const conns = await Promise.all(Array.from({ length: plan.receivers }, (_, i) => connect(t, `bench-s${i}`)));
    const dog = new Watchdog();
    const s = new ProcSampler(t.pid);
    s.start();
    let done = 0;
    let last = performance.now();
    const t0 = performance.now();
    // The generator shares the machine with the broker: its own CPU per session says how much it takes away.
    const cpu0 = process.cpuUsage();
    try {
      await dog.guard(
        'sessions',
        Promise.all(
          conns.flatMap((conn) =>
            Array.from({ length: links }, async () => {
              // Each loop takes sessions until none is left; never more than all of them.
              for (let i = 0; i <= plan.sessions; i++) {
                if (!(await acceptOne(t, conn, 'sess', dog))) return;
                done++;
                last = performance.now();
              }
            }),
          ),
        ),
      );
      if (done !== plan.sessions) throw new Error(`accepted ${done} of ${plan.sessions} sessions`);
      return [
        {
          scenario: `sessions: ${plan.sessions} × 1 message, ${plan.receivers} receivers × ${links} links`,
          sessionsPerSec: Math.round(done / ((last - t0) / 1000)),
          ...s.stop(),
          generatorCpuS: round(((u) => (u.user + u.system) / 1e6)(process.cpuUsage(cpu0))),
        },
      ];
    } finally {
      s.stop();
      await Promise.all(conns.map((c) => closeConn(c)));
    }
  });
}
