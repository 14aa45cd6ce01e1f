// The shapes of the admin JSON API that more than one side reads: the HTTP server (src/http) writes them, the CLI
// (src/cli) and the browser explorer (src/explorer) read them. Declared once here so the three cannot drift apart.
// This module holds types only and imports nothing: the explorer, which otherwise imports only its own modules, may
// import it, type-only (test/dependency-cruiser.cjs, "explorer-is-browser-code"), and nothing of it reaches a bundle.

/** A queue or subscription with its counts and dead-letter alert state: a row of GET /api/entities and of GET /api/tree. */
export interface EntityRow {
  path: string;
  kind: 'queue' | 'subscription' | 'deadletter';
  active: number;
  locked: number;
  scheduled: number;
  deferred: number;
  deadLettered: number;
  /** Messages in the transfer dead-letter queue (send-via messages their destination refused). */
  transferDeadLettered: number;
  bytes: number;
  deadLetterBytes: number;
  consumers: number;
  /** The dead-letter depth at which the entity's alert fires (Broker.DeadLetterAlerts), 0 when none is set. */
  deadLetterThreshold: number;
  /** True while the dead-letter depth is at or above the threshold. */
  deadLetterAlert: boolean;
  /** Overlapping deliveries counted since start on the entity and its dead-letter queue (issue 39; the explorer's badge). */
  overlaps: number;
}

/** A subscription in the tree: its counts and its rules as one line of text each. */
export interface TreeSubscription extends EntityRow {
  name: string;
  rules: string[];
}

/** A topic in the tree with its subscriptions. */
export interface TreeTopic {
  path: string;
  subscriptions: TreeSubscription[];
}

/** GET /api/tree's reply. */
export interface Tree {
  /** The namespace's name (`UserConfig.Namespaces[0].Name`). */
  namespace: string;
  queues: EntityRow[];
  topics: TreeTopic[];
}

/** One delivery attempt in GET /api/message's `deliveries` (issue 39; docs/operations.md, "Delivery history"). */
export interface AttemptRow {
  n: number;
  via: 'receive' | 'receiveDeferred' | 'session';
  lockedAt: number;
  lockedUntil: number;
  holder?: { container?: string; connection?: string; link?: string; receiver?: string };
  renewals?: number[];
  renewCount?: number;
  end?: { how: string; at: number; reason?: string; description?: string; props?: Record<string, unknown>; holderGone?: boolean; lockedUntil?: number };
  late?: { action: string; at: number }[];
}

/** The delivery history fields of GET /api/message's reply. */
export interface MessageHistoryFields {
  deliveries: AttemptRow[];
  droppedDeliveries: number;
  events: { kind: string; at: number; detail?: string | number }[];
  overlaps: { attempts: [number, number]; from: number; until?: number; late?: { action: string; at: number } }[];
  pattern: 'slowConsumer' | 'poison' | null;
}
