// Dead-letter depth alerting. The rule is "alert on depth, not on arrivals": one dead letter is usually a
// poison payload, a sudden rise is usually a deployment, and both only matter while they sit unread. So a
// queue alerts while its dead-letter queue holds at least its threshold, with one warn line when it starts
// (the rising edge) and one when it clears — never a line per message.

import type { ObservationPort } from '../broker/ports.js';
import { DEFAULT_DEAD_LETTER_ALERTS } from '../config/defaults.js';
import type { DeadLetterAlerts } from '../config/types.js';
import type { Logger } from '../log/logger.js';

/** How often depths are re-checked besides on each dead-letter (consumers of a DLQ drain it silently). */
export const ALERT_CHECK_MS = 1000;

/** One queue's alert state. */
export interface AlertState {
  entity: string;
  depth: number;
  /** 0 = alerting off for this queue. */
  threshold: number;
  firing: boolean;
}

/** Watches dead-letter depths against their thresholds and logs the edges. */
export class DeadLetterAlerter {
  private readonly firing = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private readonly onDeadLetter = (): void => void this.check();

  constructor(
    private readonly broker: ObservationPort,
    private readonly settings: DeadLetterAlerts = DEFAULT_DEAD_LETTER_ALERTS,
    private readonly log: Logger,
  ) {}

  /** The threshold for a queue (its own entry, else the default). */
  threshold(entity: string): number {
    return this.settings.entities[entity] ?? this.settings.default;
  }

  /** Re-reads every depth, logs rising and clearing edges, and returns the states. */
  check(): AlertState[] {
    const out: AlertState[] = [];
    for (const e of this.broker.listEntities()) {
      if (e.kind !== 'queue') continue;
      const threshold = this.threshold(e.path);
      const firing = threshold > 0 && e.deadLettered >= threshold;
      const was = this.firing.has(e.path);
      if (firing && !was) {
        this.firing.add(e.path);
        this.log.warn(
          { entity: e.path, depth: e.deadLettered, threshold },
          'dead-letter queue depth reached its threshold',
        );
      } else if (!firing && was) {
        this.firing.delete(e.path);
        this.log.warn(
          { entity: e.path, depth: e.deadLettered, threshold },
          'dead-letter queue depth back below its threshold',
        );
      }
      out.push({ entity: e.path, depth: e.deadLettered, threshold, firing });
    }
    return out;
  }

  /** Checks now, after every dead-letter, and every ALERT_CHECK_MS. */
  start(intervalMs = ALERT_CHECK_MS): void {
    this.check();
    this.broker.events.on('deadLettered', this.onDeadLetter);
    this.timer = setInterval(() => this.check(), intervalMs);
    this.timer.unref();
  }

  /** Stops watching. */
  stop(): void {
    this.broker.events.off('deadLettered', this.onDeadLetter);
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
