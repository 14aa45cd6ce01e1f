// Runs one batch of the protocol fuzzer against an in-process broker and checks its invariants (docs/testing.md,
// "The protocol fuzzer"). The oracle (protocol-model.ts) judges every frame when it is queued, in the order the
// broker reads them; what the broker did is read back afterwards through the admin HTTP API with each namespace's
// Manage key (every message of every queue, its dead-letter queue and its scheduled messages; the namespaces; the
// entities) and from the frames it sent. A violation is a line of text; a batch passes with none.

import http from 'node:http';
import rhea from 'rhea';
import { signSas } from '../../src/auth/sas-token.js';
import { FuzzConn, type Delivery, type TokenTimes } from './protocol-conn.js';
import { ConnRights, NAMESPACES, NS_HOST, NS_NAME, QUEUES, connOf, describeAction, keyOf, type Action, type Batch, type Ns, type Sequence } from './protocol-model.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The broker under test: what startBroker() returns, narrowed to what the fuzzer uses. */
export interface FuzzTarget {
  amqpPort: number;
  httpPort: number;
  now(): Date;
  advance(ms: number): Promise<Date>;
  deleteNamespace(name: string): Promise<void>;
}

/** A message the fuzzer tried to store: where it may legitimately land, and what the broker said. */
interface SentRecord {
  entity: string;
  /** Namespaces where the Send right it needed was in force when it arrived (empty: it must be stored nowhere). */
  legit: Set<Ns>;
  accepted: boolean;
  where: string;
  /** Why the oracle found no namespace where it may be stored (for the violation's text). */
  why: string;
}

/** Figures summed over batches. */
export interface FuzzFigures {
  sequences: number;
  actions: number;
  connections: number;
  transfers: number;
  deliveries: number;
  stored: number;
  barrierTimeouts: number;
  expiryBatches: number;
}

/** Fresh figures. */
export function emptyFigures(): FuzzFigures {
  return { sequences: 0, actions: 0, connections: 0, transfers: 0, deliveries: 0, stored: 0, barrierTimeouts: 0, expiryBatches: 0 };
}

const AGENT = new http.Agent({ keepAlive: true, maxSockets: 16 });
/** An entity's counts as the admin API lists them. */
interface EntityCounts {
  path: string;
  active: number;
  locked: number;
  deferred: number;
  scheduled: number;
  deadLettered: number;
}

const intersect = (a: Set<Ns>, b: Set<Ns>): Set<Ns> => new Set([...a].filter((x) => b.has(x)));

/** Runs batches against one broker; `run` resolves with the violations of one batch. */
export class BatchRunner {
  private batchNo = 0;

  constructor(
    private readonly target: FuzzTarget,
    private readonly tag: string,
    readonly figures: FuzzFigures = emptyFigures(),
  ) {}

  /** Runs `batch`, checks the invariants, cleans up; resolves with the violations found (empty = pass). */
  async run(batch: Batch): Promise<string[]> {
    const prefix = `fz-${this.tag}-${this.batchNo++}-`;
    const state = new BatchState(prefix, batch, this.target);
    const violations: string[] = [];
    try {
      await state.execute();
      violations.push(...state.violations, ...(await this.check(state)));
    } finally {
      state.destroy();
      await this.cleanup(state);
    }
    const f = this.figures;
    f.sequences += batch.seqs.length;
    f.actions += batch.seqs.reduce((n, s) => n + s.actions.length, 0);
    f.connections += state.conns.length;
    f.transfers += state.sent.size;
    f.deliveries += state.deliveries;
    f.barrierTimeouts += state.conns.reduce((n, c) => n + c.timeouts, 0);
    if (batch.expiry) f.expiryBatches++;
    if (!violations.length) violations.push(...(await this.canary()));
    return violations;
  }

  /** GET/POST on the admin API of namespace `ns` with its Manage key. */
  async admin(ns: Ns, method: string, path: string, body?: unknown): Promise<{ status: number; json: Any }> {
    const host = NS_HOST[ns];
    const auth = signSas(`http://${host}/`, 'RootManageSharedAccessKey', keyOf(ns, 'RootManageSharedAccessKey'), 600);
    // node:http, not fetch: fetch does not send a Host header of its own, and the Host picks the namespace.
    const send = (agent: http.Agent | false): Promise<{ status: number; text: string }> =>
      new Promise((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: this.target.httpPort, method, path, agent, headers: { host, authorization: auth, 'content-type': 'application/json' } }, (res) => {
          let t = '';
          res.on('data', (c: Buffer) => (t += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: t }));
        });
        // A server may close an idle keep-alive socket at any time (RFC 9112 §9.3.1; the broker does after its
        // `Keep-Alive: timeout=5`, which Node 20's agent does not act on): a request written on a pooled socket
        // as it closes is reset unread. Node's docs say to retry it (`reusedSocket`): once, on a new connection.
        req.on('error', (err: NodeJS.ErrnoException) => (agent && req.reusedSocket && err.code === 'ECONNRESET' ? send(false).then(resolve, reject) : reject(err)));
        req.end(body === undefined ? undefined : JSON.stringify(body));
      });
    const { status, text } = await send(AGENT);
    let json: Any = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status, json };
  }

  // Every stored message of this batch: in a namespace and queue where its Send right was in force; every
  // accepted, legitimate one still there unless something authorised took it; no namespace or entity made or lost.
  private async check(state: BatchState): Promise<string[]> {
    const out: string[] = [];
    const found = new Map<string, string[]>();
    const reads: Promise<void>[] = [];
    state.occupied.clear();
    const lists = await Promise.all(NAMESPACES.map((ns) => this.admin(ns, 'GET', '/api/entities')));
    for (const [i, ns] of NAMESPACES.entries()) {
      const entities = (lists[i]!.json?.entities ?? []) as EntityCounts[];
      const paths = entities.map((e) => e.path).sort();
      if (paths.join() !== [...QUEUES].sort().join()) out.push(`the entities of ${ns} changed: ${paths.join(', ') || JSON.stringify(lists[i]!.json).slice(0, 200)}`);
      for (const e of entities) {
        const views = { active: e.active + e.locked, deadletter: e.deadLettered, scheduled: e.scheduled, deferred: e.deferred };
        for (const [view, n] of Object.entries(views)) {
          if (!n) continue;
          state.occupied.add(`${ns}/${e.path}`);
          reads.push(
            this.admin(ns, 'GET', `/api/entities/${e.path}/messages?view=${view}&count=1000`).then(({ status, json }) => {
              if (status !== 200) return void out.push(`admin read of ${ns}/${e.path} (${view}) answered ${status}: ${JSON.stringify(json).slice(0, 200)}`);
              for (const m of json.messages as { messageId: string | null }[]) {
                const id = String(m.messageId);
                if (!id.startsWith(state.prefix)) continue;
                const q = e.path;
                found.set(id, [...(found.get(id) ?? []), `${ns}/${q} (${view})`]);
                const rec = state.sent.get(id);
                if (!rec) out.push(`message ${id} is stored in ${ns}/${q} (${view}) but was never sent`);
                else if (!rec.legit.has(ns)) out.push(`message ${id} is stored in ${ns}/${q} (${view}) without a Send right in force when it arrived (${rec.why}): ${rec.where}`);
                else if (rec.entity !== q) out.push(`message ${id} sent to '${rec.entity}' is stored in ${ns}/${q}: ${rec.where}`);
              }
            }),
          );
        }
      }
    }
    await Promise.all(reads);
    this.figures.stored += found.size;
    for (const [id, places] of found) if (places.length > 1) out.push(`message ${id} is stored ${places.length} times: ${places.join(', ')}`);
    for (const [id, rec] of state.sent) {
      if (rec.accepted && rec.legit.size && !state.mayBeGone.has(id) && !found.has(id)) {
        out.push(`message ${id} was accepted and never received by an authorised link, but is gone: ${rec.where}`);
      }
    }
    const { json: nsList } = await this.admin('default', 'GET', '/api/namespaces');
    const names = (Array.isArray(nsList) ? nsList : (nsList?.namespaces ?? [])).map((n: { name: string }) => n.name.toLowerCase());
    for (const n of names.filter((x: string) => !Object.values(NS_NAME).includes(x))) {
      out.push(`a namespace '${n}' was created`);
      state.strayNamespaces.push(n);
    }
    return out;
  }

  // Purges the queues that held anything and deletes stray namespaces, so the next batch starts clean.
  private async cleanup(state: BatchState): Promise<void> {
    const purges: Promise<unknown>[] = [];
    for (const key of state.occupied) {
      const [ns, q] = key.split('/') as [Ns, string];
      for (const view of ['active', 'deadletter']) purges.push(this.admin(ns, 'POST', `/api/entities/${q}/purge`, { view }));
    }
    await Promise.all(purges);
    for (const n of state.strayNamespaces) await this.target.deleteNamespace(n).catch(() => undefined);
  }

  // A well-behaved client still works: a stock rhea client (one connection, kept open across batches) sends,
  // receives under lock and completes.
  private async canary(): Promise<string[]> {
    const id = `canary-${this.tag}-${this.batchNo}`;
    const c = (this.canaryLinks ??= this.openCanary());
    const { conn, sender, receiver } = await c;
    const result = await new Promise<string>((resolve) => {
      const timer = setTimeout(() => end('the canary timed out after 5 s'), 5_000);
      const cleanups: (() => void)[] = [];
      const on = (emitter: Any, event: string, f: (ctx: Any) => void): void => {
        emitter.on(event, f);
        cleanups.push(() => emitter.removeListener(event, f));
      };
      function end(why: string): void {
        clearTimeout(timer);
        for (const f of cleanups) f();
        resolve(why);
      }
      on(conn, 'disconnected', () => end('the canary was disconnected'));
      on(sender, 'rejected', () => end('the canary send was rejected'));
      on(receiver, 'message', (ctx: Any) => {
        if (ctx.message.message_id !== id) return void ctx.delivery.release();
        ctx.delivery.accept();
        end('');
      });
      sender.send({ message_id: id, body: id });
      receiver.add_credit(1);
    });
    if (result) this.canaryLinks = undefined;
    return result ? [result] : [];
  }

  private canaryLinks: Promise<{ conn: Any; sender: Any; receiver: Any }> | undefined;

  private openCanary(): Promise<{ conn: Any; sender: Any; receiver: Any }> {
    const container = rhea.create_container({ id: `fuzz-canary-${this.tag}` });
    const conn: Any = container.connect({
      host: '127.0.0.1',
      port: this.target.amqpPort,
      username: 'RootManageSharedAccessKey',
      password: keyOf('default', 'RootManageSharedAccessKey'),
      reconnect: false,
      idle_time_out: 0,
    } as Any);
    conn.on('error', () => undefined);
    const sender = conn.open_sender({ target: { address: 'orders' } });
    const receiver = conn.open_receiver({ source: { address: 'orders' }, autoaccept: false, credit_window: 0 });
    return new Promise((resolve) => {
      // A canary that cannot even attach is reported by its first send's timeout.
      const t = setTimeout(() => resolve({ conn, sender, receiver }), 5_000);
      receiver.once('receiver_open', () => (clearTimeout(t), resolve({ conn, sender, receiver })));
    });
  }

  /** Closes the canary connection. */
  async close(): Promise<void> {
    const c = await this.canaryLinks;
    c?.conn.close();
  }
}

// The run of one batch: its connections, the oracle's records, and what it saw.
class BatchState {
  readonly conns: FuzzConn[] = [];
  readonly sent = new Map<string, SentRecord>();
  /** Messages an authorised receiver took (completed, or received and deleted): their absence is no violation. */
  readonly mayBeGone = new Set<string>();
  readonly violations: string[] = [];
  /** Queues found holding anything (purged after the batch). */
  readonly occupied = new Set<string>();
  readonly strayNamespaces: string[] = [];
  deliveries = 0;
  private lapsed = false;
  private readonly times: TokenTimes;
  private readonly peeks = new Map<string, { legit: boolean; where: string }>();
  private readonly byConn = new Map<FuzzConn, Map<number, string>>();
  private n = 0;

  constructor(
    readonly prefix: string,
    private readonly batch: Batch,
    private readonly target: FuzzTarget,
  ) {
    // Short-lived tokens lapse at least 1.5 s after the batch starts: phase one must fit in that time.
    this.times = { shortSec: Math.ceil((Date.now() + 1_500) / 1000), brokerNow: target.now().getTime() };
    if (!batch.expiry) this.times.shortSec += 365 * 86_400;
  }

  async execute(): Promise<void> {
    const { batch } = this;
    const split = batch.seqs.map((s) => {
      const at = s.actions.findIndex((a) => a.k === 'expire');
      return batch.expiry && at >= 0 ? [s.actions.slice(0, at), s.actions.slice(at + 1)] : [s.actions.filter((a) => a.k !== 'expire'), []];
    });
    const conns = await Promise.all(batch.seqs.map((s, i) => this.connect(s, i)));
    await Promise.all(batch.seqs.map((s, i) => this.actions(s, i, conns[i]!, split[i]![0]!, 0)));
    await Promise.all(this.conns.map((c) => c.sync()));
    if (batch.expiry) {
      // Past the short tokens' expiry by the wall clock (the broker's token checks) and by the broker clock.
      const at = this.times.shortSec * 1000;
      while (Date.now() <= at + 100) await new Promise((r) => setTimeout(r, Math.max(1, at + 101 - Date.now())));
      const brokerNow = this.target.now().getTime();
      await this.target.advance(Math.max(0, at + 1000 - brokerNow));
      this.lapsed = true;
      await Promise.all(batch.seqs.map((s, i) => this.actions(s, i, conns[i]!, split[i]![1]!, split[i]![0]!.length + 1)));
    }
    // Everything read, every write of the broker's finished, every answer to us arrived.
    await Promise.all(this.conns.map((c) => c.sync()));
    await this.target.advance(0);
    await Promise.all(this.conns.map((c) => c.sync()));
  }

  destroy(): void {
    for (const c of this.conns) c.destroy();
  }

  private async connect(seq: Sequence, i: number): Promise<FuzzConn[]> {
    const out = seq.conns.map(
      (spec) =>
        new FuzzConn(spec, new ConnRights(spec), this.target.amqpPort, { delivery: (c, d) => this.onDelivery(c, d, i), accepted: (c, id) => this.onAccepted(c, id) }, () => this.lapsed),
    );
    this.conns.push(...out);
    for (const c of out) this.byConn.set(c, new Map());
    return out;
  }

  private async actions(seq: Sequence, i: number, conns: FuzzConn[], actions: Action[], offset: number): Promise<void> {
    for (const [j, a] of actions.entries()) {
      const conn = conns[connOf(seq, a)]!;
      if (!conn.raw) {
        await conn.open();
        // The first token goes with the open, in the same write (the oracle grants it in order, as always).
        if (conn.spec.auth) this.queue(conn, { c: a.c, pipe: true, k: 'token', token: conn.spec.auth }, `sequence ${i} conn${connOf(seq, a)} first token`);
      }
      if (conn.done) continue;
      this.queue(conn, a, `sequence ${i} action ${offset + j} (${describeAction(seq, a)})`);
      if (a.k === 'close') {
        if (a.how === 'frame') await conn.flush();
        conn.destroy();
      } else if (!a.pipe) await conn.sync();
    }
    for (const c of conns) await c.flush();
  }

  // Queues the frames of one action and records the oracle's verdict on it.
  private queue(conn: FuzzConn, a: Action, where: string): void {
    const r = conn.rights;
    const lapsed = this.lapsed;
    const ns = conn.spec.ns;
    const times = { ...this.times, brokerNow: this.target.now().getTime() };
    switch (a.k) {
      case 'attach': {
        const right = a.role === 'sender' ? 'Send' : 'Listen';
        if (a.role === 'sender') conn.hasSender = true;
        const admitted = a.entity === 'missing' ? new Set<Ns>() : r.inForce(a.entity, right, lapsed);
        conn.attach(a.h, a.role, a.entity, { entity: a.entity, kind: 'entity', admitted, receiveAndDelete: a.receiveAndDelete });
        if (a.role === 'receiver' && a.credit) conn.flow(a.h, a.credit);
        return;
      }
      case 'transfer': {
        // "The newest sender link" on a connection that never attached one attaches one to 'orders' first.
        if (a.h < 0 && !conn.hasSender) this.queue(conn, { c: a.c, pipe: true, k: 'attach', h: 0, role: 'sender', entity: 'orders', receiveAndDelete: false, credit: 0 }, where);
        const h = a.h < 0 ? conn.newest('sender') : a.h;
        const link = conn.links.get(h);
        const id = this.id();
        const sender = link?.kind === 'entity' && link.role === 'sender';
        const now = sender ? r.inForce(link.entity, 'Send', lapsed) : new Set<Ns>();
        const legit = sender ? intersect(link.admitted, now) : new Set<Ns>();
        const why = !sender ? 'no sender link on that handle' : !link.admitted.size ? "its link's attach was not authorised" : !now.size ? 'the Send right had lapsed' : 'authorised in another namespace';
        this.sent.set(id, { entity: link?.entity ?? '?', legit, accepted: false, where, why });
        this.byConn.get(conn)!.set(conn.send(h, id, a.frames, a.settled), id);
        return;
      }
      case 'flow':
        return conn.flow(a.h < 0 ? conn.newest('receiver') : a.h, a.credit);
      case 'disposition': {
        const d = conn.received.length ? conn.received[a.pick % conn.received.length] : undefined;
        if (!d) return conn.disposition(a.pick, a.outcome);
        if (a.outcome === 'accepted' && d.messageId && intersect(d.link.admitted, r.inForce(d.link.entity, 'Listen', lapsed)).size) this.mayBeGone.add(d.messageId);
        return conn.disposition(d.deliveryId, a.outcome);
      }
      case 'token':
        conn.putToken(a.token, times, this.id());
        r.putToken(a.token, ns);
        return;
      case 'peek': {
        const id = this.id();
        this.peeks.set(id, { legit: a.entity !== 'missing' && r.inForce(`${a.entity}/$management`, 'Listen', lapsed).size > 0, where });
        return conn.management(a.entity, 'com.microsoft:peek-message', { 'message-count': 10 }, id);
      }
      case 'schedule': {
        const id = this.id();
        const legit = a.entity === 'missing' ? new Set<Ns>() : r.inForce(`${a.entity}/$management`, 'Send', lapsed);
        this.sent.set(id, { entity: a.entity, legit, accepted: false, where, why: 'no Send right for the request' });
        const at = new Date(times.brokerNow + 86_400_000);
        const message = (rhea.message as Any).encode({ message_id: id, body: id, message_annotations: { 'x-opt-scheduled-enqueue-time': at } }) as Buffer;
        return conn.management(a.entity, 'com.microsoft:schedule-message', { messages: [{ message, 'message-id': id }] }, `${id}-request`);
      }
      case 'detach':
        return conn.detach(a.h);
      case 'close':
        if (a.how === 'frame') conn.closeFrame();
        return;
      case 'expire':
        return;
    }
  }

  private id(): string {
    return `${this.prefix}${this.n++}`;
  }

  // No delivery without Listen: every transfer the broker sends on an entity link needs the link's attach to have
  // been authorised and Listen in force; a peek answered with messages needs Listen as well.
  private onDelivery(conn: FuzzConn, d: Delivery, seq: number): void {
    const link = d.link;
    if (link.kind === 'reply') {
      const status = Number(d.appProperties?.statusCode ?? d.appProperties?.['status-code']);
      const id = String(d.correlationId ?? '');
      const peek = this.peeks.get(id);
      if (peek && status === 200 && !peek.legit) this.violations.push(`peek-message was answered with messages without a Listen right in force: ${peek.where}`);
      const scheduled = id.endsWith('-request') ? this.sent.get(id.slice(0, -'-request'.length)) : undefined;
      if (scheduled && status === 200) scheduled.accepted = true;
      return;
    }
    if (link.kind !== 'entity') return;
    this.deliveries++;
    const rights = conn.rights.inForce(link.entity, 'Listen', d.lapsed);
    const ok = link.role === 'receiver' && intersect(link.admitted, rights).size > 0;
    if (!ok) {
      const why = link.role !== 'receiver' ? 'a sender link' : link.admitted.size ? 'a link whose Listen right had lapsed' : 'a link whose attach was not authorised';
      this.violations.push(`sequence ${seq}: the broker delivered ${d.messageId ?? 'a message'} on ${why} (${link.name} from '${link.entity}')`);
    } else if ((link.receiveAndDelete || d.settled) && d.messageId) this.mayBeGone.add(d.messageId);
  }

  private onAccepted(conn: FuzzConn, deliveryId: number): void {
    const id = this.byConn.get(conn)?.get(deliveryId);
    const rec = id === undefined ? undefined : this.sent.get(id);
    if (rec) rec.accepted = true;
  }
}

/**
 * Shrinks a failing batch further than fast-check could (a batch's outcome can depend on timing, so its shrinker
 * may keep a sequence that does not matter): drops the expiry, then one sequence, then one action at a time,
 * keeping each removal after which the batch still fails; at most `budget` runs.
 */
export async function minimise(batch: Batch, run: (b: Batch) => Promise<string[]>, budget = 60): Promise<{ batch: Batch; violations: string[] }> {
  let best = batch;
  let violations = await run(best);
  if (!violations.length) return { batch, violations };
  const attempt = async (candidate: Batch): Promise<boolean> => {
    if (budget-- <= 0) return false;
    const v = await run(candidate);
    if (!v.length) return false;
    best = candidate;
    violations = v;
    return true;
  };
  if (best.expiry) await attempt({ ...best, expiry: false });
  for (let i = best.seqs.length - 1; i >= 0 && best.seqs.length > 1; i--) await attempt({ ...best, seqs: best.seqs.filter((_, j) => j !== i) });
  for (let i = 0; i < best.seqs.length; i++) {
    for (let j = best.seqs[i]!.actions.length - 1; j >= 0 && best.seqs[i]!.actions.length > 1; j--) {
      const seqs = best.seqs.map((s, k) => (k === i ? { ...s, actions: s.actions.filter((_, m) => m !== j) } : s));
      await attempt({ ...best, seqs });
    }
    // Connections no action uses any more (the others renumbered).
    for (let j = best.seqs[i]!.conns.length - 1; j >= 0 && best.seqs[i]!.conns.length > 1; j--) {
      const s = best.seqs[i]!;
      if (s.actions.some((a) => connOf(s, a) === j)) continue;
      const actions = s.actions.map((a) => ({ ...a, c: connOf(s, a) > j ? connOf(s, a) - 1 : connOf(s, a) }));
      await attempt({ ...best, seqs: best.seqs.map((x, k) => (k === i ? { conns: s.conns.filter((_, m) => m !== j), actions } : x)) });
    }
  }
  return { batch: best, violations };
}
