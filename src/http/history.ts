// The last hour of each entity in memory, for the explorer's charts: one sample every few seconds of its
// depth by state (read from the broker's own counts, so it never drifts) and of how many messages were sent,
// delivered, completed, abandoned, dead-lettered and had their lock expire since the sample before (from
// the broker's events). Service Bus's portal charts the same figures; what people look at first when something
// goes wrong is how depth and rates moved, not one message.
//
// Memory: one ring of Uint32 per entity (SERIES × slots); an entity that stayed idle (all zeros) for a whole
// window has no ring at all, so 1,000 idle queues cost nothing and a deleted entity's ring is freed an hour later.

import type { EventEmitter } from 'node:events';
import type { BrokerEventMap, EntityInfo } from '../broker/broker.js';
import type { Clock, TimerHandle } from '../broker/clock.js';

/** Depth series: messages in each state at the sample time. */
export const DEPTH_SERIES = ['active', 'locked', 'scheduled', 'deferred', 'deadLettered'] as const;
/** Rate series: events counted over the interval ending at the sample time. */
export const RATE_SERIES = ['sent', 'delivered', 'completed', 'abandoned', 'deadLetterings', 'lockExpiries'] as const;
/** Every series, in ring order. */
export const SERIES = [...DEPTH_SERIES, ...RATE_SERIES] as const;
/** One series name. */
export type SeriesName = (typeof SERIES)[number];
/** Default time between two samples. */
export const DEFAULT_INTERVAL_MS = 10_000;
/** Default time kept. */
export const DEFAULT_SPAN_MS = 3_600_000;
/** Entities listed as the busiest in the overview. */
export const BUSIEST = 5;

const N = SERIES.length;
const RATE_AT = DEPTH_SERIES.length;
const SENT = RATE_AT + RATE_SERIES.indexOf('sent');
const DELIVERED = RATE_AT + RATE_SERIES.indexOf('delivered');

/** What the history reads: the entity counts and the broker's events. */
export interface HistorySource {
  counts(): Pick<EntityInfo, 'path' | (typeof DEPTH_SERIES)[number]>[];
  events: EventEmitter<BrokerEventMap>;
}

/** Sampled values per series, oldest first. */
export type SeriesData = Record<SeriesName, number[]>;

/** What the history endpoint returns for one entity or the whole namespace. */
export interface HistoryView {
  intervalMs: number;
  /** The window kept (intervalMs × slots). */
  spanMs: number;
  /** Sample times (epoch ms), oldest first. */
  times: number[];
  series: SeriesData;
}

/** One of the busiest entities over the window kept. */
export interface BusyEntity {
  path: string;
  /** Messages sent plus delivered over the window. */
  traffic: number;
  /** Depth (all states, dead letters included) at the last sample. */
  depth: number;
}

interface Ring {
  values: Uint32Array;
  /** Tick of the last sample with any non-zero value. */
  lastBusy: number;
  /** Messages sent plus delivered over the window, kept as slots are overwritten (busiest() stays O(entities)). */
  traffic: number;
}

/** The in-memory ring buffer of samples. */
export class History {
  /** Time between two samples, ms. */
  readonly intervalMs: number;
  /** Samples kept. */
  readonly slots: number;
  private readonly times: Float64Array;
  private readonly rings = new Map<string, Ring>();
  private readonly total: Ring;
  /** Events counted since the last sample, per entity path. */
  private readonly pending = new Map<string, Uint32Array>();
  private tick = 0;
  private timer: TimerHandle | null = null;
  private readonly detach: (() => void)[] = [];

  constructor(
    private readonly source: HistorySource,
    private readonly clock: Clock,
    opts: { intervalMs?: number; spanMs?: number } = {},
  ) {
    this.intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.slots = Math.max(2, Math.ceil((opts.spanMs ?? DEFAULT_SPAN_MS) / this.intervalMs));
    this.times = new Float64Array(this.slots);
    this.total = { values: new Uint32Array(this.slots * N), lastBusy: 0, traffic: 0 };
    const rate = (entity: string, series: (typeof RATE_SERIES)[number], n = 1): void => {
      let p = this.pending.get(entity);
      if (!p) this.pending.set(entity, (p = new Uint32Array(RATE_SERIES.length)));
      p[RATE_SERIES.indexOf(series)]! += n;
    };
    const on = <K extends keyof BrokerEventMap>(event: K, fn: (...args: BrokerEventMap[K]) => void): void => {
      // Same cast as in metrics.ts: Node's typed EventEmitter cannot narrow a generic K's listener type.
      source.events.on(event, fn as never);
      this.detach.push(() => source.events.off(event, fn as never));
    };
    on('sent', (e) => rate(e.entity, 'sent', e.count));
    on('delivered', (e) => rate(e.entity, 'delivered'));
    on('settled', (e) => {
      if (e.kind === 'complete') rate(e.entity, 'completed');
      else if (e.kind === 'abandon') rate(e.entity, 'abandoned');
    });
    on('deadLettered', (e) => rate(e.entity, 'deadLetterings'));
    on('lockExpired', (e) => rate(e.entity, 'lockExpiries'));
  }

  /** Samples every `intervalMs` until `stop()`. */
  start(): void {
    const next = (): void => {
      this.timer = this.clock.setTimer(() => {
        this.sample();
        next();
      }, this.intervalMs);
    };
    if (!this.timer) next();
  }

  /** Stops sampling and following the broker's events. */
  stop(): void {
    this.timer?.cancel();
    this.timer = null;
    for (const off of this.detach.splice(0)) off();
  }

  /** Takes one sample now (the timer calls it; tests may too). */
  sample(): void {
    this.tick++;
    const slot = this.tick % this.slots;
    const at = slot * N;
    this.times[slot] = this.clock.now();
    const seen = new Set<string>();
    this.total.values.fill(0, at, at + N);
    const write = (path: string, depth: number[] | null): void => {
      seen.add(path);
      const rates = this.pending.get(path);
      const busy = (depth?.some((v) => v > 0) ?? false) || rates !== undefined;
      let ring = this.rings.get(path);
      if (!ring && !busy) return; // idle and never busy within the window: nothing to keep
      if (!ring)
        this.rings.set(path, (ring = { values: new Uint32Array(this.slots * N), lastBusy: this.tick, traffic: 0 }));
      const v = ring.values;
      ring.traffic -= v[at + SENT]! + v[at + DELIVERED]!; // the slot's old sample leaves the window
      v.fill(0, at, at + N);
      for (let i = 0; i < RATE_AT && depth; i++) v[at + i] = depth[i]!;
      for (let i = 0; rates && i < RATE_SERIES.length; i++) v[at + RATE_AT + i] = rates[i]!;
      for (let i = 0; i < N; i++) this.total.values[at + i]! += v[at + i]!;
      ring.traffic += v[at + SENT]! + v[at + DELIVERED]!;
      if (busy) ring.lastBusy = this.tick;
    };
    for (const e of this.source.counts()) write(e.path, DEPTH_SERIES.map((k) => e[k]));
    for (const path of this.pending.keys()) if (!seen.has(path)) write(path, null); // topics, deleted entities
    this.pending.clear();
    for (const [path, ring] of this.rings) {
      if (!seen.has(path)) write(path, null);
      if (this.tick - ring.lastBusy >= this.slots) this.rings.delete(path); // all zeros for a whole window
    }
  }

  /** Entities with a ring (busy within the window). */
  get kept(): number {
    return this.rings.size;
  }

  /** One entity's samples, oldest first (all zeros when it was idle the whole window). */
  entity(path: string): HistoryView {
    return this.view(this.rings.get(path) ?? null);
  }

  /** The namespace: every entity's samples summed (topics' sends included). */
  namespace(): HistoryView {
    return this.view(this.total);
  }

  /** The entities with the most messages sent and delivered over the window, then the deepest. */
  busiest(n = BUSIEST): BusyEntity[] {
    const last = (this.tick % this.slots) * N;
    const out: BusyEntity[] = [];
    for (const [path, { values, traffic }] of this.rings) {
      let depth = 0;
      for (let i = 0; i < RATE_AT; i++) depth += values[last + i]!;
      out.push({ path, traffic, depth });
    }
    return out
      .filter((e) => e.traffic + e.depth > 0)
      .sort((a, b) => b.traffic - a.traffic || b.depth - a.depth || a.path.localeCompare(b.path))
      .slice(0, n);
  }

  private view(ring: Ring | null): HistoryView {
    const count = Math.min(this.tick, this.slots);
    const times: number[] = [];
    const series = Object.fromEntries(SERIES.map((s) => [s, [] as number[]])) as SeriesData;
    for (let k = this.tick - count + 1; k <= this.tick; k++) {
      const slot = k % this.slots;
      times.push(this.times[slot]!);
      for (let i = 0; i < N; i++) series[SERIES[i]!].push(ring ? ring.values[slot * N + i]! : 0);
    }
    return { intervalMs: this.intervalMs, spanMs: this.intervalMs * this.slots, times, series };
  }
}
