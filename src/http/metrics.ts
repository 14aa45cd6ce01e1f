// Prometheus metrics (prom-client) on a registry of their own, so several brokers in one process (tests)
// never share series. Depths are read from the broker at scrape time; counters and latencies follow the
// broker's events.

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BrokerEventMap, EntityInfo, ObservationPort } from '../broker/ports.js';
import type { DeadLetterAlerter } from './alerts.js';

/** Distinct dead-letter reasons kept as label values; later ones are counted as "other". */
export const MAX_REASON_LABELS = 32;
const REASON_CHARS = 64;
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
// A commit is a sync or a few: fine steps from 0.1 ms, so its p50 can be read beside the disk's fdatasync.
const COMMIT_BUCKETS = [
  0.0001, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.0125,
  0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1,
];

/** Reads the AMQP layer's outgoing buffering (AmqpServer.outboundStats). */
export type OutboundReader = () => { bufferedBytes: number; peakConnectionBytes: number };

type Listener<K extends keyof BrokerEventMap> = (...args: BrokerEventMap[K]) => void;

/** The broker's metrics and the registry `/metrics` renders. */
export class Metrics {
  readonly registry = new Registry();
  private readonly reasons = new Set<string>();
  private readonly redriven: Counter<'entity'>;
  private readonly detach: (() => void)[] = [];

  constructor(
    private readonly broker: ObservationPort,
    alerter: DeadLetterAlerter,
    outbound?: OutboundReader,
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const entities = (): EntityInfo[] => broker.listEntities().filter((e) => e.kind !== 'deadletter');
    // Depth gauges are filled at scrape time from the broker's own counts, so they can never drift.
    type Sample = [labels: Record<string, string>, value: number];
    const gauge = (name: string, help: string, labelNames: string[], samples: () => Sample[]): void =>
      void new Gauge({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          for (const [labels, value] of samples()) this.set(labels, value);
        },
      });
    const perQueue = (value: (e: EntityInfo) => number) => (): Sample[] =>
      entities().map((e) => [{ entity: e.path }, value(e)]);
    gauge(
      'peeklock_messages',
      'Messages stored in a queue, by state (locked = under a peek-lock).',
      ['entity', 'state'],
      () =>
        entities().flatMap((e) =>
          (['active', 'locked', 'deferred', 'scheduled'] as const).map((state): Sample => [
            { entity: e.path, state },
            e[state],
          ]),
        ),
    );
    gauge(
      'peeklock_dead_letter_messages',
      "Messages in a queue's dead-letter queue.",
      ['entity'],
      perQueue((e) => e.deadLettered),
    );
    gauge(
      'peeklock_transfer_dead_letter_messages',
      "Messages in a queue's transfer dead-letter queue (sent via it, refused by their destination).",
      ['entity'],
      perQueue((e) => e.transferDeadLettered),
    );
    gauge(
      'peeklock_message_bytes',
      'Encoded size of the stored messages, by subqueue (main or deadletter).',
      ['entity', 'subqueue'],
      () =>
        entities().flatMap((e): Sample[] => [
          [{ entity: e.path, subqueue: 'main' }, e.bytes],
          [{ entity: e.path, subqueue: 'deadletter' }, e.deadLetterBytes],
        ]),
    );
    gauge(
      'peeklock_locks_held',
      'Peek-locks currently held, by entity path (dead-letter queues included).',
      ['entity'],
      () => broker.messageCounts().map((c): Sample => [{ entity: c.path }, c.locked]),
    );
    gauge(
      'peeklock_oldest_message_age_seconds',
      'Age of the oldest message waiting in a queue or subscription (available or locked; 0 when none waits).',
      ['entity'],
      () => {
        const now = broker.now();
        return broker
          .oldestWaiting()
          .map((o): Sample => [{ entity: o.path }, o.enqueuedAt === null ? 0 : Math.max(0, (now - o.enqueuedAt) / 1000)]);
      },
    );
    gauge(
      'peeklock_consumers',
      'Receiver links attached to a queue.',
      ['entity'],
      perQueue((e) => e.consumers),
    );
    gauge(
      'peeklock_dead_letter_threshold',
      'Dead-letter depth at which the queue alerts (Broker.DeadLetterAlerts; 0 = off).',
      ['entity'],
      perQueue((e) => alerter.threshold(e.path)),
    );
    gauge(
      'peeklock_dead_letter_alert',
      '1 while the dead-letter depth is at or above its threshold, else 0.',
      ['entity'],
      () => alerter.check().map((a): Sample => [{ entity: a.entity }, a.firing ? 1 : 0]),
    );
    if (outbound) {
      gauge(
        'peeklock_amqp_outgoing_buffered_bytes',
        'Bytes of outgoing deliveries the AMQP connections hold (being locked, or queued for a socket that is not draining).',
        [],
        () => [[{}, outbound().bufferedBytes]],
      );
      gauge(
        'peeklock_amqp_outgoing_buffered_bytes_peak',
        'The most bytes of outgoing deliveries any one AMQP connection has held at once since start.',
        [],
        () => [[{}, outbound().peakConnectionBytes]],
      );
    }

    const counter = (name: string, help: string, labelNames: string[]): Counter<string> =>
      new Counter({ name, help, labelNames, registers });
    const sent = counter('peeklock_messages_sent_total', 'Messages accepted (stored and synced).', ['entity']);
    const delivered = counter('peeklock_deliveries_total', 'Peek-lock deliveries.', ['entity']);
    const redelivered = counter('peeklock_redeliveries_total', 'Peek-lock deliveries of a message delivered before.', [
      'entity',
    ]);
    const settled = counter(
      'peeklock_settlements_total',
      'Peek-lock settlements, by outcome (complete, abandon, defer, deadLetter).',
      ['outcome'],
    );
    const expired = counter('peeklock_lock_expiries_total', 'Peek-locks that lapsed before settlement.', ['entity']);
    const renewed = counter('peeklock_lock_renewals_total', 'Lock renewals.', ['entity']);
    const overlapping = counter(
      'peeklock_overlapping_deliveries_total',
      'Delivery attempts held at once: a holder whose lock lapsed still attached or settling while the message was locked again or completed.',
      ['entity'],
    );
    const deadLettered = counter('peeklock_dead_lettered_total', 'Messages moved to a dead-letter queue, by reason.', [
      'entity',
      'reason',
    ]);
    this.redriven = counter('peeklock_redriven_total', 'Messages moved out of a dead-letter queue by redrive.', [
      'entity',
    ]);
    const sendSeconds = new Histogram({
      name: 'peeklock_send_duration_seconds',
      help: 'Time from a send reaching the broker to its acceptance (stored and synced).',
      labelNames: ['entity'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const settleSeconds = new Histogram({
      name: 'peeklock_settle_duration_seconds',
      help: 'Time to apply and store a settlement, by outcome.',
      labelNames: ['outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });

    const commitSeconds = new Histogram({
      name: 'peeklock_store_commit_seconds',
      help: 'Time from the first write joining a group commit to the commit being synced (Journal.run to resolved).',
      buckets: COMMIT_BUCKETS,
      registers,
    });

    // The commit round trip split into its waits (issue 37): each needs a store with a log (NaN otherwise).
    const waitHistogram = (name: string, help: string): Histogram => new Histogram({ name, help, buckets: COMMIT_BUCKETS, registers });
    const queueSeconds = waitHistogram(
      'peeklock_store_commit_queue_seconds',
      'Per group commit: from its first plan reaching the journal to the start of the log write carrying it.',
    );
    const flushSeconds = waitHistogram(
      'peeklock_store_log_flush_seconds',
      "Per group commit: its log flush (one write and one fdatasync of every record of that turn).",
    );
    const applySeconds = waitHistogram(
      'peeklock_store_apply_lag_seconds',
      'Per log record: from its log flush returning to LMDB having applied it (behind the acknowledgement).',
    );

    this.on('committed', (e) => {
      commitSeconds.observe(e.ms / 1000);
      if (e.queuedMs >= 0) queueSeconds.observe(e.queuedMs / 1000);
      if (e.flushMs >= 0) flushSeconds.observe(e.flushMs / 1000);
    });
    this.on('logApplied', (e) => {
      // Observed once per record, so its quantiles are per record whatever the flushes grouped.
      for (let i = 0; i < e.records; i++) applySeconds.observe(e.ms / 1000);
    });
    this.on('sent', (e) => {
      sent.inc({ entity: e.entity }, e.count);
      sendSeconds.observe({ entity: e.entity }, e.ms / 1000);
    });
    this.on('delivered', (e) => {
      delivered.inc({ entity: e.entity });
      if (e.deliveryCount > 1) redelivered.inc({ entity: e.entity });
    });
    this.on('settled', (e) => {
      settled.inc({ outcome: e.kind });
      settleSeconds.observe({ outcome: e.kind }, e.ms / 1000);
    });
    this.on('lockExpired', (e) => expired.inc({ entity: e.entity }));
    this.on('renewed', (e) => renewed.inc({ entity: e.entity }));
    this.on('overlap', (e) => overlapping.inc({ entity: e.entity }));
    this.on('deadLettered', (e) => deadLettered.inc({ entity: e.entity, reason: this.reasonLabel(e.reason) }));
  }

  /** Counts messages a redrive moved out of `entity`'s dead-letter queue. */
  countRedriven(entity: string, n: number): void {
    if (n > 0) this.redriven.inc({ entity }, n);
  }

  /** The Prometheus text exposition. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** Content-Type of `render()`'s output. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops following the broker's events. */
  close(): void {
    for (const off of this.detach.splice(0)) off();
  }

  private on<K extends keyof BrokerEventMap>(event: K, fn: Listener<K>): void {
    const events = this.broker.events;
    // Node's typed EventEmitter resolves listener types through a conditional type that TypeScript cannot
    // narrow for a generic K; `Listener<K>` is the same function type, so the cast only silences that.
    events.on(event, fn as never);
    this.detach.push(() => events.off(event, fn as never));
  }

  // Reasons are free text from clients; the label set must stay bounded.
  private reasonLabel(reason: string): string {
    const r = reason.slice(0, REASON_CHARS) || 'none';
    if (this.reasons.has(r)) return r;
    if (this.reasons.size >= MAX_REASON_LABELS) return 'other';
    this.reasons.add(r);
    return r;
  }
}
