// The last hour of each entity in memory, for the explorer's charts: one sample every few seconds of its
// depth by state (read from the broker's own counts, so it never drifts) and of how many messages were sent,
// delivered, completed, abandoned, dead-lettered and had their lock expire since the sample before (from
// the broker's events). Service Bus's portal charts the same figures; what people look at first when something
// goes wrong is how depth and rates moved, not one message.
//
// Memory: the last ten minutes are kept at full resolution, the rest of the hour as one sample per minute
// (depth: the largest of the minute; rates: the minute's mean per interval), so a busy entity holds
// 60 + 61 samples of 11 series: 2,662 bytes in 16-bit cells, or 5,324 once a value passes 65,535 (the ring is
// widened to 32 bits then). An entity that stayed idle (all zeros) for a whole window has no ring at all, so
// 1,000 idle queues cost nothing and a deleted entity's ring is freed an hour later.

import type { BrokerEventMap, BrokerEvents, EntityInfo } from '../broker/ports.js';
import type { Clock, TimerHandle } from '../broker/runtime/clock.js';

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
/** Samples kept at full resolution (ten minutes at the default interval). */
export const FINE_SAMPLES = 60;
/** Full-resolution samples folded into one older sample (a minute at the default interval). */
export const COARSE_FACTOR = 6;

const N = SERIES.length;
const RATE_AT = DEPTH_SERIES.length;
const SENT = RATE_AT + RATE_SERIES.indexOf('sent');
const DELIVERED = RATE_AT + RATE_SERIES.indexOf('delivered');
const U16_MAX = 0xffff;
const U32_MAX = 0xffffffff;

/** What the history reads: the entity counts and the broker's events. */
export interface HistorySource {
  counts(): readonly Pick<EntityInfo, 'path' | (typeof DEPTH_SERIES)[number]>[];
  events: BrokerEvents;
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

type Cells = Uint16Array | Uint32Array | Float64Array;

interface Ring {
  /** The last FINE_SAMPLES samples, N cells each. */
  fine: Cells;
  /** Older samples, one per COARSE_FACTOR ticks, N cells each. */
  coarse: Cells;
  /** Tick of the last sample with any non-zero value. */
  lastBusy: number;
}

/** The in-memory ring buffer of samples. */
export class History {
  /** Time between two samples, ms. */
  readonly intervalMs: number;
  /** Samples the window spans (intervalMs × slots = the time kept). */
  readonly slots: number;
  private readonly fineSlots: number;
  /** Coarse samples shown (they cover the window before the fine ones). */
  private readonly coarseShown: number;
  /** Coarse slots stored: those shown plus the ones the fine samples overlap. */
  private readonly coarseSlots: number;
  private readonly fineTimes: Float64Array;
  private readonly coarseTimes: Float64Array;
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
    this.fineSlots = Math.min(this.slots, FINE_SAMPLES);
    this.coarseShown = Math.ceil((this.slots - this.fineSlots) / COARSE_FACTOR);
    this.coarseSlots = this.coarseShown ? this.coarseShown + Math.ceil(this.fineSlots / COARSE_FACTOR) + 1 : 0;
    this.fineTimes = new Float64Array(this.fineSlots);
    this.coarseTimes = new Float64Array(this.coarseSlots);
    this.total = this.newRing(Float64Array);
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

  private newRing(kind: typeof Uint16Array | typeof Float64Array): Ring {
    return { fine: new kind(this.fineSlots * N), coarse: new kind(this.coarseSlots * N), lastBusy: this.tick };
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
    const at = (this.tick % this.fineSlots) * N;
    const now = this.clock.now();
    this.fineTimes[this.tick % this.fineSlots] = now;
    const cAt = this.coarseSlots ? this.coarseIndex(this.tick) * N : -1;
    if (cAt >= 0) this.coarseTimes[cAt / N] = now; // a coarse sample is stamped with its last tick
    const seen = new Set<string>();
    const total = this.total.fine;
    total.fill(0, at, at + N);
    const write = (path: string, depth: number[] | null): void => {
      seen.add(path);
      const rates = this.pending.get(path);
      const busy = (depth?.some((v) => v > 0) ?? false) || rates !== undefined;
      let ring = this.rings.get(path);
      if (!ring && !busy) return; // idle and never busy within the window: nothing to keep
      if (!ring) this.rings.set(path, (ring = this.newRing(Uint16Array)));
      const cells = new Array<number>(N).fill(0);
      for (let i = 0; i < RATE_AT && depth; i++) cells[i] = depth[i]!;
      for (let i = 0; rates && i < RATE_SERIES.length; i++) cells[RATE_AT + i] = rates[i]!;
      for (let i = 0; i < N; i++) {
        put(ring, 'fine', at + i, cells[i]!);
        total[at + i]! += cells[i]!;
      }
      if (cAt >= 0) this.fold(ring, at, cAt);
      if (busy) ring.lastBusy = this.tick;
    };
    for (const e of this.source.counts()) write(e.path, DEPTH_SERIES.map((k) => e[k]));
    for (const path of this.pending.keys()) if (!seen.has(path)) write(path, null); // topics, deleted entities
    this.pending.clear();
    for (const [path, ring] of this.rings) {
      if (!seen.has(path)) write(path, null);
      if (this.tick - ring.lastBusy >= this.slots) this.rings.delete(path); // all zeros for a whole window
    }
    if (cAt >= 0) this.fold(this.total, at, cAt);
  }

  // Tick t (from 1) falls in coarse bucket floor((t - 1) / COARSE_FACTOR).
  private coarseIndex(tick: number): number {
    return Math.floor((tick - 1) / COARSE_FACTOR) % this.coarseSlots;
  }

  // Adds the fine sample at `at` to the coarse sample at `cAt`: depth keeps the largest, rates add up.
  private fold(ring: Ring, at: number, cAt: number): void {
    const first = (this.tick - 1) % COARSE_FACTOR === 0;
    for (let i = 0; i < N; i++) {
      const v = ring.fine[at + i]!;
      const old = first ? 0 : ring.coarse[cAt + i]!;
      put(ring, 'coarse', cAt + i, i < RATE_AT ? Math.max(old, v) : old + v);
    }
  }

  /** Entities with a ring (busy within the window). */
  get kept(): number {
    return this.rings.size;
  }

  /** Bytes one entity's ring takes (0 when it has none). */
  bytesOf(path: string): number {
    const r = this.rings.get(path);
    return r ? r.fine.byteLength + r.coarse.byteLength : 0;
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
    // Ranked once per sample: the page asks every 2 s and the samples change every intervalMs.
    if (this.ranked?.tick !== this.tick || this.ranked.n !== n) this.ranked = { tick: this.tick, n, list: this.rank(n) };
    return this.ranked.list;
  }

  private ranked: { tick: number; n: number; list: BusyEntity[] } | null = null;

  private rank(n: number): BusyEntity[] {
    const out: BusyEntity[] = [];
    const { coarse, fine } = this.shown();
    const lastAt = (this.tick % this.fineSlots) * N;
    for (const [path, ring] of this.rings) {
      // Coarse cells hold the sum of their interval's events, so adding cells counts every event once.
      let traffic = 0;
      for (const slot of coarse) traffic += ring.coarse[slot * N + SENT]! + ring.coarse[slot * N + DELIVERED]!;
      for (const slot of fine) traffic += ring.fine[slot * N + SENT]! + ring.fine[slot * N + DELIVERED]!;
      let depth = 0;
      for (let i = 0; i < RATE_AT; i++) depth += ring.fine[lastAt + i]!;
      out.push({ path, traffic, depth });
    }
    return out
      .filter((e) => e.traffic + e.depth > 0)
      .sort((a, b) => b.traffic - a.traffic || b.depth - a.depth || a.path.localeCompare(b.path))
      .slice(0, n);
  }

  // The slots a view shows, oldest first: complete coarse buckets older than the oldest fine sample, then the
  // fine samples.
  private shown(): { coarse: number[]; fine: number[] } {
    const coarse: number[] = [];
    const fine: number[] = [];
    const oldestFine = this.tick - Math.min(this.tick, this.fineSlots) + 1;
    if (this.coarseSlots && oldestFine > 1) {
      const last = Math.floor((oldestFine - 1) / COARSE_FACTOR) - 1;
      for (let b = Math.max(0, last - this.coarseShown + 1); b <= last; b++) coarse.push(b % this.coarseSlots);
    }
    for (let k = oldestFine; k <= this.tick; k++) fine.push(k % this.fineSlots);
    return { coarse, fine };
  }

  // A coarse rate is shown as its mean per interval, so every point of a chart reads "events per intervalMs".
  private view(ring: Ring | null): HistoryView {
    const times: number[] = [];
    const series = Object.fromEntries(SERIES.map((s) => [s, [] as number[]])) as SeriesData;
    const { coarse, fine } = this.shown();
    for (const slot of coarse) {
      times.push(this.coarseTimes[slot]!);
      for (let i = 0; i < N; i++) {
        const v = ring ? ring.coarse[slot * N + i]! : 0;
        series[SERIES[i]!].push(i < RATE_AT ? v : v / COARSE_FACTOR);
      }
    }
    for (const slot of fine) {
      times.push(this.fineTimes[slot]!);
      for (let i = 0; i < N; i++) series[SERIES[i]!].push(ring ? ring.fine[slot * N + i]! : 0);
    }
    return { intervalMs: this.intervalMs, spanMs: this.intervalMs * this.slots, times, series };
  }
}

// Stores a cell, widening a 16-bit ring to 32 bits the first time a value does not fit (and capping at 2^32-1).
function put(ring: Ring, key: 'fine' | 'coarse', i: number, v: number): void {
  if (v > U16_MAX && ring.fine instanceof Uint16Array) {
    ring.fine = Uint32Array.from(ring.fine);
    ring.coarse = Uint32Array.from(ring.coarse);
  }
  ring[key][i] = ring.fine instanceof Float64Array ? v : Math.min(v, U32_MAX);
}
