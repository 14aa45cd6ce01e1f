// The rig of the write-failure tests (write-failures*.test.ts): a broker on a MemoryStore and a fake clock whose
// commits can be made to fail (MemoryStore.failWrites), a view of everything the broker shows, and the check that
// it equals what a fresh broker recovering from the same store shows.

import { expect } from 'vitest';
import { BrokerError } from '../../src/broker/errors.js';
import { filterMessage } from '../../src/filters/index.js';
import { Harness, flush, settings } from './helpers.js';

export const DLQ = 'q/$DeadLetterQueue';
const QUEUE_PATHS = ['q', DLQ, 'q/$Transfer/$DeadLetterQueue', 'ttlq', 'ttlq/$DeadLetterQueue', 'fq', 'sq', 'dq'];
const SUBS = ['t/Subscriptions/all', 't/Subscriptions/red', 't/Subscriptions/red/$DeadLetterQueue'];
const CONFIGURED = new Set(['q', 'ttlq', 'fq', 'sq', 'dq', 't', 't/Subscriptions/all', 't/Subscriptions/red']);

/** Message fields that make a topic message match subscription `red`'s rule (color = 'red'). */
export const RED = { view: () => filterMessage({ properties: { color: 'red' } }) };

/** Queues q, ttlq (dead-letters on expiry), fq (forwards dead-letters to q), sq (sessions), dq (duplicate
 * detection), and topic t with subscriptions `all` ($Default) and `red` (color = 'red'). */
export async function rig(): Promise<Harness> {
  const h = new Harness();
  h.config.queues.push({ name: 'fq', settings: settings({ forwardDeadLetteredMessagesTo: 'q' }) });
  h.config.queues.push({ name: 'sq', settings: settings({ requiresSession: true }) });
  h.config.queues.push({ name: 'dq', settings: settings({ requiresDuplicateDetection: true }) });
  h.config.topics.push({
    name: 't',
    defaultMessageTtlMs: null,
    requiresDuplicateDetection: false,
    duplicateDetectionWindowMs: 600_000,
    maxSizeBytes: 1024 * 1024 * 1024,
    subscriptions: [
      { name: 'all', settings: settings(), rules: [] },
      { name: 'red', settings: settings(), rules: [{ name: 'red', filter: { type: 'sql', expression: "color = 'red'" }, action: null }] },
    ],
  });
  await h.boot();
  return h;
}

/** What the broker shows: each message's state, count, lock and reason, the counts, entities and rules. */
export function view(h: Harness) {
  const b = h.broker;
  const out: Record<string, unknown> = {};
  const entityPaths = [...b.listQueues(0, 100).map((v) => v.name)].flatMap((n) => [n, `${n}/$DeadLetterQueue`]);
  for (const t of b.listTopics(0, 100)) {
    for (const s of b.listSubscriptions(t.name, 0, 100)) entityPaths.push(`${t.name}/Subscriptions/${s.name}`);
  }
  for (const p of new Set([...QUEUE_PATHS, ...SUBS, ...entityPaths])) {
    out[p] = browse(h, p)?.map(({ row }) => ({
      id: row.messageId,
      seq: row.seq,
      state: row.state,
      deliveryCount: row.deliveryCount,
      lockedUntil: row.lock?.until,
      deferred: row.deferred ?? false,
      reason: row.props?.DeadLetterReason,
    }));
  }
  for (const { consumers: _receivers, ...counts } of b.listEntities()) out[`${counts.path} counts`] = counts;
  // A Config.json entity that was never changed is not stored: its updatedAt is the broker's start.
  const at = (name: string, updatedAt: number) => (CONFIGURED.has(name) ? {} : { updatedAt });
  out.queues = b.listQueues(0, 100).map((v) => ({ name: v.name, description: v.description, ...at(v.name, v.updatedAt) }));
  out.topics = b.listTopics(0, 100).map((v) => ({ name: v.name, description: v.description, ...at(v.name, v.updatedAt) }));
  for (const t of b.listTopics(0, 100)) {
    for (const s of b.listSubscriptions(t.name, 0, 100)) {
      const path = `${t.name}/Subscriptions/${s.name}`;
      out[`${path} subscription`] = { description: s.description, ...at(path, s.updatedAt) };
      out[`${path} rules`] = b.listRules(path);
    }
  }
  return out;
}

// An entity's messages, or undefined when there is no such entity (deleted, or never created).
function browse(h: Harness, path: string) {
  try {
    return h.broker.browse(path, { count: 1000 });
  } catch (err) {
    if (err instanceof BrokerError && err.code === 'EntityNotFound') return undefined;
    throw err;
  }
}

/** Memory equals what a fresh broker recovering from the same store sees. */
export async function expectAgreement(h: Harness): Promise<void> {
  h.store.failWrites = null;
  await flush();
  const memory = view(h);
  await h.restart();
  expect(memory).toEqual(view(h));
}

/** Runs `act` with every commit failing, then lets the store recover. */
export async function failing<T>(h: Harness, act: () => Promise<T>): Promise<T> {
  h.store.failWrites = new Error('EIO');
  try {
    const r = await act();
    await flush();
    return r;
  } finally {
    h.store.failWrites = null;
  }
}

/** One message `a` in `path`, delivered to a peek-lock receiver; returns the receiver. */
export async function locked(h: Harness, path = 'q') {
  await h.send(path, 'a');
  const { consumer } = h.attach(path, 1);
  await flush();
  expect(consumer.ids()).toEqual(['a']);
  return consumer;
}
