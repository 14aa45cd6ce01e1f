// When each entity was last used (the management plane's AccessedAt) and AutoDeleteOnIdle acted on.
//
// Service Bus counts as activity: for a queue, sends, receives, updates, scheduled messages and browsing (peek); for
// a subscription, receives, updates, new rules and browsing; for a topic, sends, updates, scheduled messages and any
// operation on its subscriptions (Service Bus "Message expiration", temporary entities). An entity idle for its
// AutoDeleteOnIdle (at least 5 minutes) is deleted exactly as a management DELETE deletes it: links end with
// not-found and its messages go in the same write as its definition.
//
// AccessedAt lives in memory and is written to the store in the background (one small write per sweep for the
// entities used since the last one), so a send never pays for it. After a crash it may be up to one sweep old; the
// idle count never starts before the broker's own start, so an entity is never deleted for idleness that a restart
// hid (a restart can only delay a deletion).

import type { BrokerContext } from '../runtime/context.js';
import { DLQ_SUFFIX, entityKey } from './entities.js';
import type { TimerHandle } from '../runtime/clock.js';
import type { Plan } from '../runtime/journal.js';
import type { StoreOp } from '../../store/store.js';

/** How often idle entities are looked for and AccessedAt is written down. */
export const ACTIVITY_SWEEP_MS = 10_000;

/** The store meta key of an entity's AccessedAt. */
const ACCESSED_KEY = 'accessedAt';

/** How an idle entity is deleted: by the management plane's own delete. */
export interface IdleDeleter {
  deleteQueue(name: string): Promise<void>;
  deleteTopic(name: string): Promise<void>;
  deleteSubscription(topic: string, name: string): Promise<void>;
}

/** AccessedAt per entity and the AutoDeleteOnIdle sweep. */
export class Activity {
  /** Entity key → last activity (epoch ms, broker clock). */
  private readonly last = new Map<string, number>();
  /** Keys used since the last sweep wrote them down. */
  private readonly dirty = new Set<string>();
  /** Event path → entity key (and its topic's key), so a delivery costs two map writes, not a regex. */
  private readonly keys = new Map<string, [string, string | null]>();
  private timer: TimerHandle | null = null;
  private startedAt = 0;
  private sweeping = false;

  constructor(
    private readonly ctx: BrokerContext,
    private readonly deleter: IdleDeleter,
  ) {
    // The broker's own events mark data-plane activity, so no send or settle path needs to know about this.
    ctx.events.on('sent', (e) => this.touch(e.entity));
    ctx.events.on('delivered', (e) => this.touch(e.entity));
    ctx.events.on('settled', (e) => this.touch(e.entity));
    ctx.events.on('renewed', (e) => this.touch(e.entity));
  }

  /** Records activity on an entity (a queue, topic, subscription or dead-letter queue path); a subscription's counts for its topic. */
  touch(path: string): void {
    const now = this.ctx.clock.now();
    let keys = this.keys.get(path);
    if (keys === undefined) {
      let key = entityKey(path);
      if (key.endsWith(DLQ_SUFFIX.toLowerCase())) key = key.slice(0, -DLQ_SUFFIX.length);
      const at = key.indexOf('/subscriptions/');
      keys = [key, at > 0 ? key.slice(0, at) : null];
      // Bounded: paths come from entities and clients' addresses; a full cache is simply started again.
      if (this.keys.size >= 100_000) this.keys.clear();
      this.keys.set(path, keys);
    }
    this.mark(keys[0], now);
    if (keys[1] !== null) this.mark(keys[1], now);
  }

  private mark(key: string, now: number): void {
    this.last.set(key, now);
    this.dirty.add(key);
  }

  /** The entity's AccessedAt (epoch ms), or null when it was never used. */
  accessedAt(path: string): number | null {
    const key = entityKey(path);
    const known = this.last.get(key);
    if (known !== undefined) return known;
    const id = this.idOf(key);
    const stored = id === undefined ? undefined : this.ctx.store.loadMeta(id, ACCESSED_KEY);
    if (typeof stored !== 'number') return null;
    this.last.set(key, stored);
    return stored;
  }

  /** Forgets a deleted entity (its stored AccessedAt goes with the entity's clear). */
  forget(path: string): void {
    const key = entityKey(path);
    this.last.delete(key);
    this.dirty.delete(key);
  }

  /** Starts the sweep; idleness is counted from now at the earliest. */
  start(): void {
    this.startedAt = this.ctx.clock.now();
    this.arm();
  }

  /** Stops the sweep. */
  stop(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private arm(): void {
    this.timer = this.ctx.clock.setTimer(() => void this.sweep().finally(() => this.timer && this.arm()), ACTIVITY_SWEEP_MS);
  }

  /** One sweep: deletes entities idle for their AutoDeleteOnIdle, then writes down AccessedAt of the entities used. */
  async sweep(): Promise<void> {
    if (this.sweeping || this.ctx.journal.stopping) return;
    this.sweeping = true;
    try {
      for (const idle of this.idleEntities()) {
        try {
          if (idle.kind === 'queue') await this.deleter.deleteQueue(idle.path);
          else if (idle.kind === 'topic') await this.deleter.deleteTopic(idle.path);
          else await this.deleter.deleteSubscription(idle.topic!, idle.name!);
          this.forget(idle.path);
          this.ctx.log.info({ entity: idle.path, autoDeleteOnIdleMs: idle.limit }, 'entity deleted after being idle for its AutoDeleteOnIdle');
        } catch (err) {
          // Deleted meanwhile by hand, or the store is failing: the next sweep looks again.
          this.ctx.log.debug({ err, entity: idle.path }, 'idle entity not deleted');
        }
      }
      await this.flush();
    } finally {
      this.sweeping = false;
    }
  }

  private async flush(): Promise<void> {
    const plan = this.accessedPlan();
    if (!plan.ops.length) return;
    try {
      await this.ctx.journal.run(plan);
    } catch (err) {
      this.ctx.log.debug({ err }, 'AccessedAt not written');
    }
  }

  // The claim is taking the keys out of `dirty`; if the write fails they go back in, so the next sweep writes them
  // (a write lost to a failing disk must not leave the stored AccessedAt behind until the entity is used again).
  /** The plan that writes down AccessedAt of the entities used since the last sweep. */
  private accessedPlan(): Plan {
    const keys = [...this.dirty];
    this.dirty.clear();
    const ops: StoreOp[] = [];
    for (const key of keys) {
      const id = this.idOf(key);
      if (id !== undefined) ops.push({ op: 'meta', qid: id, key: ACCESSED_KEY, value: this.last.get(key)! });
    }
    return {
      ops,
      undo: () => {
        for (const key of keys) if (this.last.has(key)) this.dirty.add(key);
      },
    };
  }

  private idOf(key: string): number | undefined {
    const e = this.ctx.entities;
    const at = key.indexOf('/subscriptions/');
    if (at > 0) return e.subscriptionEntry(key.slice(0, at), key.slice(at + '/subscriptions/'.length))?.q.id;
    return e.queueEntry(key)?.q.id ?? e.topicEntry(key)?.t.id;
  }

  // The start of an entity's idle time: its last use, its last update, or the broker's start, whichever is latest.
  private idleSince(path: string, updatedAt: number): number {
    return Math.max(this.accessedAt(path) ?? 0, updatedAt, this.startedAt);
  }

  private idleEntities(): { kind: 'queue' | 'topic' | 'subscription'; path: string; limit: number; topic?: string; name?: string }[] {
    const now = this.ctx.clock.now();
    const out: ReturnType<Activity['idleEntities']> = [];
    const e = this.ctx.entities;
    const due = (path: string, updatedAt: number, limit: number | null): limit is number =>
      limit !== null && now - this.idleSince(path, updatedAt) >= limit;
    for (const q of e.queueEntriesSorted()) {
      const limit = q.description.autoDeleteOnIdleMs;
      // A receiver attached (waiting to receive) or a scheduled message pending is activity.
      if (due(q.q.path, q.updatedAt, limit) && !busy(q.q)) out.push({ kind: 'queue', path: q.q.path, limit });
    }
    for (const t of e.topicEntriesSorted()) {
      const subs = e.subscriptionsOf(t.t);
      const limit = t.description.autoDeleteOnIdleMs;
      if (due(t.t.path, t.updatedAt, limit) && !subs.some((s) => busy(s.q))) {
        out.push({ kind: 'topic', path: t.t.path, limit });
        continue;
      }
      for (const s of subs) {
        const sl = s.description.autoDeleteOnIdleMs;
        if (due(s.q.path, s.updatedAt, sl) && !busy(s.q)) out.push({ kind: 'subscription', path: s.q.path, limit: sl, topic: t.t.path, name: s.name });
      }
    }
    return out;
  }
}

function busy(q: { consumers: unknown[]; dlq: { consumers: unknown[] } | null; counts(): { scheduled: number } }): boolean {
  return q.consumers.length > 0 || (q.dlq?.consumers.length ?? 0) > 0 || q.counts().scheduled > 0;
}
