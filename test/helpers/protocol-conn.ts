// One raw AMQP connection of the protocol fuzzer (docs/testing.md, "The protocol fuzzer"): it turns the fuzzer's
// actions into frames (rhea's own frame codec, test/helpers/raw-amqp.ts), writes pipelined actions in one socket
// write, waits for the broker at the others (a barrier: an attach whose answer proves every earlier frame was read),
// and decodes what the broker sends back — its attaches and detaches (to map its handles to our links), the
// transfers it delivers, and the dispositions that settle our sends.

import { createRequire } from 'node:module';
import rhea from 'rhea';
import { signSas } from '../../src/auth/sas-token.js';
import { RawConn, frame, frames, header } from './raw-amqp.js';
import { NS_HOST, keyOf, otherNs, plainNamespaces, type ConnRights, type ConnSpec, type Entity, type Ns, type TokenSpec } from './protocol-model.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const require = createRequire(import.meta.url);
const terminus = require('rhea/lib/terminus.js') as Any;

/** A link this connection attached, as the oracle judged it at attach. */
export interface LinkModel {
  name: string;
  role: 'sender' | 'receiver';
  /** The entity address (for `$management` links, the entity the node belongs to). */
  entity: Entity;
  kind: 'entity' | 'cbs' | 'management' | 'reply' | 'barrier';
  /** Namespaces in which the attach had the right it needs in force. */
  admitted: Set<Ns>;
  receiveAndDelete: boolean;
  /** Transfers the broker sent on it. */
  delivered: number;
}

/** A transfer the broker delivered on one of our links. */
export interface Delivery {
  link: LinkModel;
  deliveryId: number;
  messageId: string | undefined;
  settled: boolean;
  /** Arrived after short-lived tokens lapsed. */
  lapsed: boolean;
  appProperties: Record<string, unknown> | undefined;
  correlationId: unknown;
}

/** Times of the fuzzer's batch (all epoch ms), for signing tokens. */
export interface TokenTimes {
  /** Expiry, in epoch seconds, of short-lived tokens (they lapse at the batch's expiry point). */
  shortSec: number;
  /** The broker clock now (tokens are valid by the wall clock and the broker clock alike). */
  brokerNow: number;
}

/** What a connection reports back to its sequence's runner. */
export interface ConnEvents {
  /** A delivery on an entity or `$management` reply link of `conn`, when it arrives. */
  delivery(conn: FuzzConn, d: Delivery): void;
  /** The broker accepted our delivery `id`. */
  accepted(conn: FuzzConn, id: number): void;
}

const BARRIER_MS = 1_500;
const CBS_HANDLE = 10;
const MGMT_HANDLE = 11; // + 2 × entity index: sender, + 1: its reply receiver
const BARRIER_HANDLE = 100;

/** Encodes a message as a client's transfer payload. */
function encode(messageId: string, extra: Record<string, unknown> = {}): Buffer {
  return (rhea.message as Any).encode({ message_id: messageId, body: messageId, ...extra }) as Buffer;
}

/** One connection of a sequence. */
export class FuzzConn {
  raw: RawConn | null = null;
  /** True once this side closed it or the broker closed or ended it: nothing more is written. */
  done = false;
  readonly links = new Map<number, LinkModel>();
  readonly received: Delivery[] = [];
  private readonly byName = new Map<string, LinkModel>();
  private readonly brokerHandles = new Map<number, LinkModel>();
  private pending: Buffer[] = [];
  private nextDelivery = 0;
  private transfersIn = 0;
  private names = 0;
  private barriers = 0;
  private digested = 0;
  /** Names of the links the broker answered an attach for (the barrier waits for its own). */
  private readonly seenAttach = new Set<string>();
  /** True once a sender link was attached (the oracle's "newest sender link" attaches one otherwise). */
  hasSender = false;
  /** Barriers the broker never answered within BARRIER_MS (a figure, and a sign of a wedged connection). */
  timeouts = 0;

  constructor(
    readonly spec: ConnSpec,
    readonly rights: ConnRights,
    private readonly port: number,
    private readonly events: ConnEvents,
    private readonly lapsed: () => boolean,
  ) {}

  /** Connects and queues the connection preamble (header, SASL, header, open, begin), not yet written. */
  async open(): Promise<void> {
    const raw = new RawConn(this.port);
    this.raw = raw;
    raw.socket.on('data', () => this.digest());
    if (!(await raw.ready())) {
      this.done = true;
      return;
    }
    const l = this.spec.login;
    const { keyNs, saslNs } = plainNamespaces(this.spec);
    const init =
      l.mech === 'ANONYMOUS'
        ? frames.sasl_init({ mechanism: 'ANONYMOUS' })
        : frames.sasl_init({
            mechanism: 'PLAIN',
            initial_response: Buffer.from(`\0${l.user}\0${keyNs ? keyOf(keyNs, l.user) : 'bm90LWEta2V5'}`),
            ...(saslNs ? { hostname: NS_HOST[saslNs] } : {}),
          });
    this.pending.push(
      header(3),
      frames.write_frame(frames.sasl_frame(init)),
      header(0),
      frame(0, 'open', { container_id: 'fuzz', hostname: NS_HOST[this.spec.ns], max_frame_size: 65_536 }),
      frame(0, 'begin', { next_outgoing_id: 0, incoming_window: 2048, outgoing_window: 2048 }),
    );
  }

  /** Queues an attach; the oracle's verdict (`admitted`) is recorded with the link. */
  attach(h: number, role: 'sender' | 'receiver', address: string, link: Omit<LinkModel, 'name' | 'role' | 'delivered'>, target?: string): LinkModel {
    const name = `fz-${h}-${this.names++}`;
    const model: LinkModel = { ...link, name, role, delivered: 0 };
    this.links.set(h, model);
    this.byName.set(name, model);
    const sender = role === 'sender';
    this.pending.push(
      frame(0, 'attach', {
        name,
        handle: h,
        role: !sender,
        snd_settle_mode: sender ? 2 : link.receiveAndDelete ? 1 : 0,
        rcv_settle_mode: 0,
        source: terminus.source({ address: sender ? name : address }).described(),
        target: terminus.target({ address: sender ? address : (target ?? name) }).described(),
        ...(sender ? { initial_delivery_count: 0 } : {}),
      }),
    );
    return model;
  }

  /** The handle of the newest entity link of `role` still attached (0 if none). */
  newest(role: 'sender' | 'receiver'): number {
    let best = -1;
    let h = 0;
    for (const [handle, l] of this.links) {
      const n = Number(l.name.split('-')[2]);
      if (l.kind === 'entity' && l.role === role && n > best) [best, h] = [n, handle];
    }
    return h;
  }

  /** Queues a transfer of one message in `parts` frames; returns its delivery id. */
  transfer(h: number, payload: Buffer, parts: number, settled: boolean): number {
    const id = this.nextDelivery++;
    const step = Math.ceil(payload.length / parts);
    for (let i = 0; i < parts; i++) {
      const more = i < parts - 1;
      const chunk = payload.subarray(i * step, more ? (i + 1) * step : payload.length);
      const first = i === 0 ? { delivery_id: id, delivery_tag: Buffer.from(`t${id}`), message_format: 0 } : {};
      this.pending.push(frame(0, 'transfer', { handle: h, ...first, settled, more }, chunk));
    }
    return id;
  }

  /** Queues a message transfer carrying `messageId` as id and body. */
  send(h: number, messageId: string, parts: number, settled: boolean): number {
    return this.transfer(h, encode(messageId), parts, settled);
  }

  /** Queues a link flow granting `credit`. */
  flow(h: number, credit: number): void {
    this.pending.push(
      frame(0, 'flow', {
        handle: h,
        delivery_count: this.links.get(h)?.delivered ?? 0,
        link_credit: credit,
        next_incoming_id: this.transfersIn,
        incoming_window: 2048,
        next_outgoing_id: this.nextDelivery,
        outgoing_window: 2048,
      }),
    );
  }

  /** Queues a settling disposition of the broker's delivery `id`. */
  disposition(id: number, outcome: 'accepted' | 'rejected' | 'released' | 'modified'): void {
    const state = (rhea.message as Any)[outcome](outcome === 'modified' ? { delivery_failed: true } : {}).described();
    this.pending.push(frame(0, 'disposition', { role: true, first: id, last: id, settled: true, state }));
  }

  /** Queues a detach of our handle `h`. */
  detach(h: number): void {
    this.links.delete(h);
    this.pending.push(frame(0, 'detach', { handle: h, closed: true }));
  }

  /** Queues a `$cbs` put-token (attaching the `$cbs` sender first if needed). */
  putToken(t: TokenSpec, times: TokenTimes, messageId: string): void {
    if (!this.links.has(CBS_HANDLE)) this.attach(CBS_HANDLE, 'sender', '$cbs', { entity: 'orders', kind: 'cbs', admitted: new Set(), receiveAndDelete: false });
    const ns = this.spec.ns;
    const keyNs = t.key === 'otherNs' ? otherNs(ns) : ns;
    const key = t.key === 'wrong' || t.policy === 'UnknownPolicy' ? 'd3Jvbmcta2V5LXZhbHVl' : keyOf(keyNs, t.policy);
    const wall = Date.now();
    const se =
      t.life === 'expired' ? Math.floor(Math.min(wall, times.brokerNow) / 1000) - 60 : t.life === 'short' ? times.shortSec : Math.floor(Math.max(wall, times.brokerNow) / 1000) + 365 * 86_400;
    const audience = `sb://${NS_HOST[ns]}/${t.audience}`;
    const token = signSas(audience, t.policy, key, se - Math.floor(wall / 1000), wall);
    const body = (rhea.message as Any).encode({
      message_id: messageId,
      reply_to: 'fz-cbs-reply',
      application_properties: { operation: 'put-token', type: 'servicebus.windows.net:sastoken', name: audience },
      body: token,
    }) as Buffer;
    this.transfer(CBS_HANDLE, body, 1, false);
  }

  /** Queues a `$management` request to `entity` (attaching its request and reply links first if needed). */
  management(entity: Entity, operation: string, body: Record<string, unknown>, messageId: string): void {
    const h = MGMT_HANDLE + 2 * ['orders', 'audit', 'missing'].indexOf(entity);
    const reply = `fz-reply-${entity}`;
    if (!this.links.has(h)) {
      const base = { entity, admitted: new Set<Ns>(), receiveAndDelete: false };
      this.attach(h, 'sender', `${entity}/$management`, { ...base, kind: 'management' });
      this.attach(h + 1, 'receiver', `${entity}/$management`, { ...base, kind: 'reply' }, reply);
      this.flow(h + 1, 100);
    }
    const payload = (rhea.message as Any).encode({ message_id: messageId, reply_to: reply, application_properties: { operation }, body }) as Buffer;
    this.transfer(h, payload, 1, false);
  }

  /** Queues a close frame; nothing more is written after it. */
  closeFrame(): void {
    this.pending.push(frame(0, 'close', {}));
  }

  /** Writes everything queued in one socket write. */
  async flush(): Promise<void> {
    if (!this.raw || !this.pending.length) return;
    const b = Buffer.concat(this.pending);
    this.pending = [];
    if (!this.done) await this.raw.write(b);
  }

  /** Flushes, then waits until the broker has read every frame written so far (or closed, or BARRIER_MS passed). */
  async sync(): Promise<void> {
    if (!this.raw || this.done || this.raw.closed) return this.flush();
    const name = `fz-barrier-${this.barriers}`;
    this.pending.push(
      frame(0, 'attach', {
        name,
        handle: BARRIER_HANDLE + this.barriers++,
        role: true,
        source: terminus.source({ address: 'fuzz-barrier/$management' }).described(),
        target: terminus.target({ address: name }).described(),
      }),
    );
    await this.flush();
    const end = Date.now() + BARRIER_MS;
    while (!this.done && !this.raw.closed && !this.seenAttach.has(name)) {
      if (Date.now() > end) {
        this.timeouts++;
        return;
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }

  /** Ends the socket. */
  destroy(): void {
    this.done = true;
    this.raw?.destroy();
  }

  // Folds the broker's new frames into the link map, the deliveries and the settled sends.
  private digest(): void {
    const seen = this.raw!.seen;
    for (; this.digested < seen.length; this.digested++) {
      const f = seen[this.digested]!;
      const p = f.fields;
      if (f.name === 'attach') {
        this.seenAttach.add(String(p.name));
        const link = this.byName.get(String(p.name));
        if (link) this.brokerHandles.set(Number(p.handle), link);
      } else if (f.name === 'detach') {
        this.brokerHandles.delete(Number(p.handle));
      } else if (f.name === 'transfer') {
        this.transfersIn++;
        const link = this.brokerHandles.get(Number(p.handle));
        if (!link) continue;
        link.delivered++;
        let m: Any;
        try {
          m = f.payload && !p.more ? (rhea.message as Any).decode(f.payload) : undefined;
        } catch {
          m = undefined;
        }
        const d: Delivery = {
          link,
          deliveryId: Number(p.delivery_id),
          messageId: m?.message_id === undefined ? undefined : String(m.message_id),
          settled: !!p.settled,
          lapsed: this.lapsed(),
          appProperties: m?.application_properties,
          correlationId: m?.correlation_id,
        };
        if (link.kind === 'entity') this.received.push(d);
        this.events.delivery(this, d);
      } else if (f.name === 'disposition' && p.role === true) {
        const accepted = String(p.state?.constructor?.composite_type ?? p.state?.constructor ?? '').includes('accepted');
        const last = p.last ?? p.first;
        for (let id = Number(p.first); accepted && id <= Number(last) && id - Number(p.first) < 1000; id++) this.events.accepted(this, id);
      } else if (f.name === 'close' || f.name === 'end' || (f.name === 'sasl_outcome' && p.code !== 0)) {
        this.done = true;
      }
    }
  }
}
