// Test scaffolding for the broker unit tests: a hand-built config, a recording fake consumer and a
// harness that wires a Broker to a MemoryStore and a FakeClock.

import { pino } from 'pino';
import { Broker, type ConsumerHandle } from '../../src/broker/broker.js';
import { FakeClock } from '../../src/broker/runtime/clock.js';
import { createContext, type BrokerContext } from '../../src/broker/runtime/context.js';
import { BrokerError, type BrokerErrorCode } from '../../src/broker/errors.js';
import type { Consumer, Delivery, IncomingMessage, ReceiveMode } from '../../src/broker/types.js';
import type { TxnOp, TxnOwner } from '../../src/broker/messaging/transactions.js';
import type { EntitySettings, PeeklockConfig } from '../../src/config/types.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { DEFAULT_BROKER } from '../../src/config/load.js';

export const LOCK_MS = 30_000;
export const MAX_DELIVERY = 3;
export const MAX_SIZE = 262_144;

/** Queue settings as Service Bus defaults them, with a 30 s lock and MaxDeliveryCount 3. */
export function settings(over: Partial<EntitySettings> = {}): EntitySettings {
  return {
    lockDurationMs: LOCK_MS,
    maxDeliveryCount: MAX_DELIVERY,
    defaultMessageTtlMs: null,
    deadLetteringOnMessageExpiration: false,
    requiresDuplicateDetection: false,
    duplicateDetectionWindowMs: 600_000,
    requiresSession: false,
    forwardTo: null,
    forwardDeadLetteredMessagesTo: null,
    maxSizeBytes: 1024 * 1024 * 1024,
    ...over,
  };
}

/** A config with queue `q` (and `ttlq`, which dead-letters expired messages) built by hand. */
export function makeConfig(): PeeklockConfig {
  return {
    broker: {
      host: '127.0.0.1',
      port: 5672,
      dataDir: '/nonexistent',
      logLevel: 'silent',
      maxMessageSizeBytes: MAX_SIZE,
      limits: { ...DEFAULT_BROKER.limits },
      policies: [],
    },
    namespace: 'sbemulatorns',
    queues: [
      { name: 'q', settings: settings() },
      { name: 'ttlq', settings: settings({ deadLetteringOnMessageExpiration: true }) },
    ],
    topics: [],
    loggingType: 'Console',
    warnings: [],
  };
}

export const silentLog = pino({ level: 'silent' });

/** Lets the memory store commit (it resolves writes on setImmediate) and the broker react; no real time passes. */
export async function flush(turns = 4): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}

/**
 * A receiving link with settable credit that records what it was given. Like a protocol link it pushes its credit
 * figure to the broker (`ConsumerHandle.setCredit`): on `bind`, and whenever a test sets `credit`.
 */
export class FakeConsumer implements Consumer {
  readonly deliveries: Delivery[] = [];
  open = true;
  /** Deliveries the broker reserved for this consumer and has not handed over yet. */
  pending = 0;
  private granted: number;
  private handle: ConsumerHandle | undefined;

  constructor(
    credit = 0,
    readonly receiveMode: ReceiveMode = 'peekLock',
  ) {
    this.granted = credit;
  }

  /** Total deliveries this consumer will take (handed over, reserved and still to come). */
  get credit(): number {
    return this.granted;
  }

  set credit(n: number) {
    this.granted = n;
    this.push();
  }

  /** Keeps the handle `attach` returned and pushes the credit through it; returns the handle. */
  bind(handle: ConsumerHandle): ConsumerHandle {
    this.handle = handle;
    this.push();
    return handle;
  }

  /** The figure this consumer pushes: its credit less what it was handed or has reserved. */
  figure(): number {
    return Math.max(0, this.granted - this.deliveries.length - this.pending);
  }

  /** Pushes the figure to the broker (after attach). */
  push(): void {
    this.handle?.setCredit(this.figure());
  }

  isOpen(): boolean {
    return this.open;
  }

  reserved(delta: 1 | -1): void {
    this.pending += delta;
  }

  deliver(d: Delivery): void {
    if (this.granted - this.deliveries.length <= 0) throw new Error('delivered beyond credit');
    this.pending--;
    this.deliveries.push(d);
  }

  /** Message ids in delivery order. */
  ids(): string[] {
    return this.deliveries.map((d) => d.row.messageId);
  }

  /** The lock token of the i-th delivery (the last one by default). */
  token(i = this.deliveries.length - 1): string {
    const lock = this.deliveries[i]?.row.lock;
    if (!lock) throw new Error(`delivery ${i} has no lock`);
    return lock.token;
  }

  last(): Delivery {
    const d = this.deliveries[this.deliveries.length - 1];
    if (!d) throw new Error('nothing delivered');
    return d;
  }
}

/** Attaches `consumer` to `path` and pushes its credit (which offers it what is ready). */
export function attachFake(broker: Broker, path: string, consumer: FakeConsumer): ConsumerHandle {
  return consumer.bind(broker.attach(path, consumer));
}

/** A message whose body is the UTF-8 of `id`. */
export function msg(id: string, extra: Partial<IncomingMessage> = {}): IncomingMessage {
  return { body: new TextEncoder().encode(id), messageId: id, ...extra };
}

/** A broker on a memory store and a fake clock. */
export class Harness {
  broker!: Broker;
  /** The state the broker's collaborators share (its entity registry and indexes), for tests that look inside. */
  ctx!: BrokerContext;

  constructor(
    readonly store = new MemoryStore(),
    readonly clock = new FakeClock(),
    readonly config = makeConfig(),
  ) {}

  static async start(store?: MemoryStore, clock?: FakeClock): Promise<Harness> {
    const h = new Harness(store, clock);
    await h.boot();
    return h;
  }

  async boot(): Promise<void> {
    const deps = { config: this.config, store: this.store, clock: this.clock, log: silentLog };
    this.ctx = createContext(deps);
    this.broker = new Broker(deps, this.ctx);
    await this.broker.start();
  }

  /** Stops the broker and starts a new one on the same store and clock. */
  async restart(): Promise<void> {
    await this.broker.stop();
    await this.boot();
  }

  /** Attaches a fake consumer, pumps it, and returns it with its handle. */
  attach(path: string, credit: number, mode: ReceiveMode = 'peekLock') {
    const consumer = new FakeConsumer(credit, mode);
    const handle = attachFake(this.broker, path, consumer);
    return { consumer, handle };
  }

  /** Sends messages with the given ids to `path`, one batch, and lets deliveries go out. */
  async send(path: string, ...ids: string[]): Promise<number[]> {
    const seqs = await this.broker.send(path, ids.map((id) => msg(id)));
    await flush();
    return seqs;
  }

  /** The store id of an entity path. */
  qid(path: string): number {
    return this.ctx.entities.resolve(path).id;
  }

  /** Rows committed in the store for an entity. */
  stored(path: string) {
    return this.store.load(this.qid(path)).rows;
  }

  /** Advances the fake clock and lets the resulting writes and deliveries land. */
  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await flush();
  }
}

/** Awaits `p` and returns the BrokerError code it rejected with (fails if it resolved or threw something else). */
export async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<BrokerErrorCode> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    if (err instanceof BrokerError) return err.code;
    throw err;
  }
  throw new Error('expected a BrokerError, but the operation succeeded');
}

/** The broker's transaction operations under the coordinator's names, for tests that drive transactions directly. */
export function transactionsOf(b: Broker) {
  return {
    declare: (owner: TxnOwner): string => b.declareTransaction(owner),
    stage: (id: string, connection: string, op: TxnOp): void => b.stageInTransaction(id, connection, op),
    discharge: (id: string, connection: string, fail: boolean): Promise<void> => b.dischargeTransaction(id, connection, fail),
    rollbackOwner: (connection: string, link?: string): number => b.rollbackTransactions(connection, link),
    viaEntity: (via: string): void => b.checkSendVia(via),
    sendVia: (via: string, destination: string, msgs: IncomingMessage[]): Promise<void> => b.sendVia(via, destination, msgs),
    get size(): number {
      return b.openTransactions();
    },
  };
}
