// The null broker: the ceiling for a Node/rhea broker on this machine. The same rhea server stack as peeklock
// (accepted sockets with TCP_NODELAY, one container, SASL PLAIN or ANONYMOUS), but no storage: a send is
// accepted the moment it arrives and kept in memory; queues are created on demand; receivers get peek-lock
// deliveries (unsettled until the client accepts; released/modified come back, a closed link's come back).
// Like peeklock it forwards the bytes it received instead of re-encoding them, so the two differ by what
// peeklock does beyond a queue in memory: durability, locks, annotations.
//
// Run as its own process: `node dist/bench/null-broker.js --port 0` prints `{"port":N}` once listening.

import net from 'node:net';
import rhea from 'rhea';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A FIFO of encoded messages with an amortised O(1) shift. */
class Fifo {
  private items: Buffer[] = [];
  private head = 0;
  get length(): number {
    return this.items.length - this.head;
  }
  push(b: Buffer): void {
    this.items.push(b);
  }
  unshift(b: Buffer): void {
    if (this.head > 0) this.items[--this.head] = b;
    else this.items.unshift(b);
  }
  shift(): Buffer | undefined {
    if (this.head >= this.items.length) return undefined;
    const b = this.items[this.head++];
    // Compact once the consumed prefix dominates, so memory follows the queue's depth.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return b;
  }
}

/** The broker's sending end of one receiver link. */
interface Consumer {
  link: Any;
  /**
   * Transfers handed to rhea; rhea's own counters move only when it writes them (docs/architecture.md, "Living with
   * rhea").
   */
  sent: number;
  /** Unsettled deliveries by id, to requeue when the link goes away. */
  unsettled: Map<number, Buffer>;
  closed: boolean;
}

interface Queue {
  messages: Fifo;
  consumers: Consumer[];
  next: number;
}

const queues = new Map<string, Queue>();

function queue(name: string): Queue {
  let q = queues.get(name);
  if (!q) queues.set(name, (q = { messages: new Fifo(), consumers: [], next: 0 }));
  return q;
}

function capacity(c: Consumer): number {
  if (c.closed) return 0;
  const limit = c.link.delivery_count + c.link.credit;
  return Math.min(limit - c.sent, c.link.session.outgoing.deliveries.available());
}

/** Hands queued messages to consumers with credit, round robin; bounded by the queue's depth. */
function pump(q: Queue): void {
  let idle = 0;
  while (q.messages.length > 0 && q.consumers.length > 0 && idle < q.consumers.length) {
    const c = q.consumers[q.next++ % q.consumers.length]!;
    if (capacity(c) <= 0) {
      idle++;
      continue;
    }
    idle = 0;
    const bytes = q.messages.shift()!;
    const d = c.link.send(bytes, undefined, 0);
    c.sent++;
    c.unsettled.set(d.id, bytes);
  }
}

function detach(q: Queue, c: Consumer): void {
  if (c.closed) return;
  c.closed = true;
  q.consumers = q.consumers.filter((x) => x !== c);
  // Deferred a tick: dispositions read with the close are dispatched after it (docs/architecture.md, "Living with
  // rhea").
  setImmediate(() => {
    for (const b of c.unsettled.values()) q.messages.unshift(b);
    c.unsettled.clear();
    pump(q);
  });
}

/** rhea decodes every format-0 transfer and drops the bytes; keep them, as peeklock does, to forward as sent. */
const RAW = Symbol('raw');
const codec = rhea.message as unknown as { decode(b: Buffer): object };
const decode = codec.decode.bind(codec);
codec.decode = (b: Buffer) => {
  const m = decode(b) as Any;
  m[RAW] = b;
  return m;
};

const container = rhea.create_container({ id: 'null-broker' }) as Any;
container.sasl_server_mechanisms.enable_anonymous();
container.sasl_server_mechanisms.enable_plain(() => true);

container.on('receiver_open', (ctx: Any) => {
  const link = ctx.receiver;
  link.set_target(link.remote.attach.target);
  link.set_source(link.remote.attach.source);
  link.set_credit_window(1000);
});

container.on('message', (ctx: Any) => {
  const address = ctx.receiver.remote.attach.target?.address ?? '';
  const bytes: Buffer = Buffer.isBuffer(ctx.message) ? ctx.message : ctx.message[RAW] ?? rhea.message.encode(ctx.message);
  const q = queue(address);
  q.messages.push(bytes);
  ctx.delivery.accept();
  pump(q);
});

container.on('sender_open', (ctx: Any) => {
  const link = ctx.sender;
  link.set_target(link.remote.attach.target);
  link.set_source(link.remote.attach.source);
  const q = queue(link.remote.attach.source?.address ?? '');
  const c: Consumer = { link, sent: 0, unsettled: new Map(), closed: false };
  link.consumer = c;
  link.queue = q;
  // First delivery a tick later, so our attach is written ahead of it (docs/architecture.md, "Living with rhea").
  setImmediate(() => {
    q.consumers.push(c);
    pump(q);
  });
});

container.on('sendable', (ctx: Any) => ctx.sender.queue && pump(ctx.sender.queue));
container.on('sender_flow', (ctx: Any) => ctx.sender.queue && pump(ctx.sender.queue));

const outcomes = rhea.message as Any;
const OUTCOMES: Record<string, () => Any> = {
  accepted: () => outcomes.accepted().described(),
  rejected: () => outcomes.rejected({}).described(),
  released: () => outcomes.released().described(),
  modified: () => outcomes.modified({}).described(),
};

const settle = (kind: string, requeue: boolean) => (ctx: Any) => {
  const link = ctx.sender;
  const c = link.consumer as Consumer | undefined;
  if (!c) return;
  // rcv-settle-mode second: the client waits for us to settle its outcome; then it sends nothing more, so
  // mark the delivery remote-settled to free its slot in rhea's outgoing window.
  if (!ctx.delivery.remote_settled) {
    ctx.delivery.update(true, OUTCOMES[kind]!());
    ctx.delivery.remote_settled = true;
  }
  const bytes = c.unsettled.get(ctx.delivery.id);
  c.unsettled.delete(ctx.delivery.id);
  if (requeue && bytes) link.queue.messages.unshift(bytes);
  pump(link.queue);
};
container.on('accepted', settle('accepted', false));
container.on('rejected', settle('rejected', false));
container.on('released', settle('released', true));
container.on('modified', settle('modified', true));

for (const ev of ['sender_close', 'sender_error']) {
  container.on(ev, (ctx: Any) => ctx.sender.consumer && detach(ctx.sender.queue, ctx.sender.consumer));
}
/** A connection gone (closed or dropped) takes its links with it; rhea reports no link close then. */
function dropConnection(conn: Any): void {
  for (const q of queues.values()) for (const c of [...q.consumers]) if (c.link.session.connection === conn) detach(q, c);
}
container.on('connection_close', (ctx: Any) => dropConnection(ctx.connection));
container.on('error', () => undefined);

const portArg = process.argv.indexOf('--port');
const port = portArg >= 0 ? Number(process.argv[portArg + 1]) : 0;
const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => undefined);
  const conn = container.create_connection({ autoaccept: false, treat_modified_as_released: false, container_id: 'null-broker' });
  conn.accept(socket);
  socket.once('close', () => dropConnection(conn));
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: (server.address() as net.AddressInfo).port }) + '\n');
});
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
