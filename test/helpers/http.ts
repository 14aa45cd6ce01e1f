// An in-process broker with its HTTP port on 127.0.0.1 (ephemeral) for the HTTP tests, with captured log
// lines, a signed admin request helper and a way to dead-letter messages through the broker's own API.

import { Writable } from 'node:stream';
import rhea from 'rhea';
import { startPeeklock, type RunningBroker } from '../../src/app/app.js';
import type { Broker } from '../../src/broker/broker.js';
import type { Clock } from '../../src/broker/runtime/clock.js';
import type { Consumer, Delivery } from '../../src/broker/types.js';
import { parseIncoming } from '../../src/amqp/codec.js';
import { signSas } from '../../src/auth/sas-token.js';
import { createLogger } from '../../src/log/logger.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { testConfig, type QueueSpec } from './config.js';

/** The emulator's all-rights policy. */
export const ROOT = { name: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' };

/** A running broker with its HTTP base URL and the JSON log lines it wrote. */
export interface HttpBroker extends RunningBroker {
  base: string;
  logs: Record<string, unknown>[];
}

/** Starts a broker (memory store unless given) with HTTP on an ephemeral port; `broker` adds `Broker` keys, `topics` the config's Topics. */
export async function startHttpBroker(
  queues: QueueSpec[],
  opts: { store?: Store; clock?: Clock; broker?: Record<string, unknown>; logLevel?: string; topics?: unknown[] } = {},
): Promise<HttpBroker> {
  const logs: Record<string, unknown>[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n'))
        if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const config = testConfig(queues, { HttpPort: 0, ...opts.broker }, opts.topics);
  const log = createLogger(opts.logLevel ?? 'info', dest);
  const running = await startPeeklock({ config, store: opts.store ?? new MemoryStore(), clock: opts.clock, log });
  return { ...running, base: `http://127.0.0.1:${running.httpPort}`, logs };
}

/** An Authorization header value for a policy (namespace-wide unless `resource` says otherwise). */
export function authHeader(policy = ROOT, resource = 'http://127.0.0.1/'): string {
  return signSas(resource, policy.name, policy.key, 600);
}

/** Sends an admin API request signed with the root policy; resolves with status and parsed JSON. */
export async function api(
  base: string,
  path: string,
  init: { method?: string; body?: unknown; auth?: string | null } = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const auth = init.auth === undefined ? authHeader() : init.auth;
  if (auth !== null) headers.authorization = auth;
  const res = await fetch(base + path, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, body: await res.json() };
}

/** Encodes an AMQP message as a client would send it. */
export function amqpMessage(id: string, body: unknown, appProps: Record<string, unknown> = {}): Buffer {
  return rhea.message.encode({ message_id: id, body, application_properties: appProps } as never) as Buffer;
}

/** A peek-lock consumer that collects deliveries (credit `n`, pushed once after attach: `handle.setCredit(c.credit)`). */
export class CollectingConsumer implements Consumer {
  readonly receiveMode = 'peekLock' as const;
  readonly got: Delivery[] = [];
  constructor(
    readonly credit: number,
    readonly holder = 'test-conn/test-link',
  ) {}
  isOpen(): boolean {
    return true;
  }
  deliver(d: Delivery): void {
    this.got.push(d);
  }
}

/** Waits (bounded, polling every 5 ms) until `cond()` is true. */
export async function until(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A message to dead-letter: id, dead-letter reason and application properties. */
export interface DeadLetterSpec {
  id: string;
  reason: string;
  props?: Record<string, unknown>;
}

/** Sends the messages to `queue` (which must have no active messages), locks and dead-letters each. */
export async function deadLetterAll(broker: Broker, queue: string, specs: DeadLetterSpec[]): Promise<void> {
  const active = broker.listEntities().find((e) => e.path === queue)?.active;
  if (active !== 0) throw new Error(`deadLetterAll needs '${queue}' without active messages (has ${active})`);
  await broker.send(
    queue,
    specs.map((s) => parseIncoming(amqpMessage(s.id, `body of ${s.id}`, s.props))),
  );
  const consumer = new CollectingConsumer(specs.length);
  const handle = broker.attach(queue, consumer);
  handle.setCredit(consumer.credit);
  await until(() => consumer.got.length === specs.length);
  handle.detach();
  for (const d of consumer.got) {
    const spec = specs.find((s) => s.id === d.row.messageId)!;
    await broker.settle(d.row.lock!.token, {
      kind: 'deadLetter',
      reason: spec.reason,
      description: `because ${spec.reason}`,
    });
  }
}
