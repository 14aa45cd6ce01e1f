// What every collaborator of the broker shares: the dependencies it was built with, the entity registry, the
// write path, the one deadline timer, and the counters and events metrics read. Built once by `Broker`; each
// collaborator receives it (and the other collaborators it calls) through its constructor.

import { EventEmitter } from 'node:events';
import type { PeeklockConfig } from '../../config/types.js';
import type { Logger } from '../../log/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from './clock.js';
import { Entities } from '../catalog/entities.js';
import type { Backing } from '../indexes/queue-state.js';
import { Journal, type CommitTimes } from './journal.js';
import { Scheduler } from './scheduler.js';
import { compileSubscriptionRules } from '../messaging/subscription-rules.js';
import { DeliveryRecorder } from '../messaging/history.js';

/** What the broker needs to run. */
export interface BrokerDeps {
  config: PeeklockConfig;
  store: Store;
  clock: Clock;
  log: Logger;
  /** Called once when the store reports it can never commit again (the process should exit and restart). */
  onFatal?: (err: Error) => void;
}

/** Counters since start, for logs and the benchmark. */
export interface BrokerCounters {
  sent: number;
  delivered: number;
  completed: number;
  abandoned: number;
  deadLettered: number;
  lockExpired: number;
  renewed: number;
  /** Locks taken ahead for credit-1 receivers (messaging/lock-ahead.ts), and those of them given back unsent. */
  lockedAhead: number;
  lockAheadReturned: number;
  /** Locks taken ahead that changed hands unsent, to a competing receiver with credit. */
  lockAheadPassed: number;
}

/** What the broker reports as it works, for metrics (each payload names the entity). */
export interface BrokerEventMap {
  sent: [{ entity: string; count: number; ms: number }];
  settled: [{ entity: string; kind: string; ms: number }];
  delivered: [{ entity: string; deliveryCount: number }];
  deadLettered: [{ entity: string; reason: string }];
  lockExpired: [{ entity: string }];
  renewed: [{ entity: string }];
  /** Two delivery attempts of one message were held at once (issue 39): counted once per lapsed attempt. */
  overlap: [{ entity: string; seq: number }];
  /** A group commit succeeded: its store operations, ms from its first plan to its resolution, and its waits. */
  committed: [CommitTimes];
  /** `records` log records flushed together reached LMDB `ms` after their flush (a store with a log only). */
  logApplied: [{ ms: number; records: number }];
}

/** The state and services every broker collaborator shares. */
export interface BrokerContext {
  readonly config: PeeklockConfig;
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  /** The entity registry: paths to in-memory indexes. */
  readonly entities: Entities;
  /** The one write path to the store (and the running flag). */
  readonly journal: Journal;
  /** The one timer for every deadline. */
  readonly scheduler: Scheduler;
  readonly counters: BrokerCounters;
  /** Events for metrics and alerting; listeners must not throw. */
  readonly events: EventEmitter<BrokerEventMap>;
  /** Every message's delivery history, recorded in the plans the journal runs (messaging/history.ts). */
  readonly history: DeliveryRecorder;
}

/** Builds the shared context from the broker's dependencies. */
export function createContext(deps: BrokerDeps): BrokerContext {
  const scheduler = new Scheduler(deps.clock);
  const { store, log } = deps;
  const backing: Backing = {
    rowsFrom: (qid, from, limit, to) => store.rowsFrom(qid, from, limit, to),
    readRow: (qid, seq) => store.readRow(qid, seq),
    sessionRowsFrom: (qid, sessionId, from, limit) => store.sessionRowsFrom(qid, sessionId, from, limit),
    // A row read from the cold tail gets its TTL deadline when it joins memory (Service Bus, too, removes expired
    // messages lazily; until then they count as active).
    loaded: (q, row) => {
      if (row.expiresAt !== null) scheduler.add({ at: row.expiresAt, kind: 'ttl', qid: q.id, seq: row.seq });
    },
    drift: (q, missing) => log.warn({ entity: q.path, missing }, 'fewer stored messages than counted; counters corrected'),
  };
  const events = new EventEmitter<BrokerEventMap>();
  const journal = new Journal(store, log, deps.onFatal, (c) => events.emit('committed', c));
  store.observeWaits?.({ applied: (ms, records) => void events.emit('logApplied', { ms, records }) });
  const entities = new Entities(deps.config, store, journal, (rules, path) => compileSubscriptionRules(rules, path), backing);
  const onOverlap = (entity: string, seq: number): void => void events.emit('overlap', { entity, seq });
  const history = new DeliveryRecorder({ store, clock: deps.clock, entities, journal, onOverlap });
  journal.observe(history);
  return {
    config: deps.config,
    store,
    clock: deps.clock,
    log,
    entities,
    history,
    journal,
    scheduler,
    counters: { sent: 0, delivered: 0, completed: 0, abandoned: 0, deadLettered: 0, lockExpired: 0, renewed: 0, lockedAhead: 0, lockAheadReturned: 0, lockAheadPassed: 0 },
    events,
  };
}
