// What each entity kind of the catalogue does its own way: its defaults, how a patch settles into its description,
// what Service Bus refuses for it, its stored record, what a delete takes with it and how a durable update reaches
// the live entity. The create, update and delete skeleton around these is one (catalogue.ts); one table row per
// kind keeps the differences visible side by side instead of inside three copies of that skeleton.

import type { EntitySettings } from '../../config/types.js';
import type { EntityRecord, StoreOp } from '../../store/store.js';
import {
  deadLetterSettings,
  type Entities,
  type EntryInfo,
  type QueueEntry,
  type StoredQueue,
  type StoredSubscription,
  type StoredTopic,
  type SubscriptionEntry,
  type TopicEntry,
} from './entities.js';
import {
  applyPatch,
  applyQueuePatch,
  checkQueueDescription,
  checkSubscriptionDescription,
  checkTopicDescription,
  partitionedSizeBytes,
  serviceQueueDefaults,
  serviceSubscriptionDefaults,
  serviceTopicDefaults,
  type QueueDescription,
  type QueuePatch,
  type SubscriptionDescription,
  type SubscriptionPatch,
  type TopicDescription,
  type TopicPatch,
} from './entity-model.js';
import { BrokerError } from '../errors.js';
import type { QueueState } from '../indexes/queue-state.js';
import { rulesOp } from './rule-store.js';
import { settleRules } from './sas-rules.js';
import { queueView, subscriptionView, topicView, type QueueView, type SubscriptionView, type TopicView } from './views.js';

/** One stored entity a delete removes: its record's path, the store ids it clears and the queues whose receivers end. */
export interface Part {
  path: string;
  ids: number[];
  queues: QueueState[];
}

/** An entry of the registry as the catalogue changes it (the shape every kind's entry shares). */
export type CatalogEntry<D> = EntryInfo & { description: D };

/**
 * What one entity kind does its own way; `E` is its registry entry, `D` its description, `P` what a create or update
 * may set and `V` what the management plane reports of it.
 */
export interface EntityKind<E extends CatalogEntry<D>, D, P, V> {
  /** Service Bus's description of an entity of the kind created with no options (the defaults table). */
  defaults(): D;
  /** The description after a create (`created`) or an update at `now`: the patch applied, SAS rules settled. */
  settle(base: D, patch: P, created: boolean, now: number): D;
  /** Throws where `next` breaks Service Bus's rules for the kind; `current` is the description an update changes. */
  check(entities: Entities, path: string, next: D, current: D | null): void;
  /** The entity's path (as created: case kept). */
  path(e: E): string;
  /** The entity's record: its definition as the store keeps it, by path. */
  record(e: E): StoreOp;
  /** Store ops a create writes after the record (a subscription's rules). */
  createOps?(e: E): StoreOp[];
  /** What the entity is in the store, itself first (a topic: then every subscription); computed before unregister. */
  parts(entities: Entities, e: E): Part[];
  /** Takes the entity out of the registry (a delete's claim, a failed create's undo); returns what puts it back. */
  unregister(entities: Entities, e: E): () => void;
  /** Applies a durable update to the live entity, in place: its collaborators read the settings when they decide. */
  apply(e: E, next: D, updatedAt: number, pump: (q: QueueState) => void): void;
  /** Runs once a create (`exists`) or a delete (not `exists`) is durable. */
  durable?(entities: Entities, e: E, exists: boolean): void;
  /** The entity as the management plane reports it. */
  view(entities: Entities, e: E): V;
}

/** Queues: their own forwarding, a partitioned size, RequiresSession fixed at create, a health mark on delete. */
export const QUEUE: EntityKind<QueueEntry, QueueDescription, QueuePatch, QueueView> = {
  defaults: serviceQueueDefaults,
  settle(base, patch, created, now) {
    const next = applyQueuePatch(base, patch);
    if (patch.authorizationRules) next.authorizationRules = settleRules(patch.authorizationRules, base.authorizationRules ?? [], now);
    if (next.enablePartitioning && (created || patch.settings?.maxSizeBytes !== undefined || !base.enablePartitioning)) {
      next.settings.maxSizeBytes = partitionedSizeBytes(next.settings.maxSizeBytes);
    }
    return next;
  },
  check(entities, path, next, current) {
    checkQueueDescription(next);
    checkForwarding(entities, path, next.settings, true);
    if (current) checkSessionFixed(path, next.settings, current.settings);
  },
  path: (e) => e.q.path,
  record: (e) => recordOp(e.q.path, 'queue', { description: e.description, configHash: e.configHash } satisfies StoredQueue, e),
  parts: (_, e) => [queuePart(e.q)],
  unregister(entities, e) {
    entities.removeQueue(e);
    return () => entities.restoreQueue(e);
  },
  apply: applyUpdate,
  // Health reports a Config.json queue deleted through the management plane as intended, not as missing.
  durable: (entities, e, exists) => entities.markDeleted(e.q.path, !exists),
  view: (_, e) => queueView(e),
};

/** Topics: a partitioned size, settings of their own (no lock, no delivery count), deletes that take every subscription. */
export const TOPIC: EntityKind<TopicEntry, TopicDescription, TopicPatch, TopicView> = {
  defaults: serviceTopicDefaults,
  // As QUEUE.settle, with the topic's own size field.
  settle(base, patch, created, now) {
    const { authorizationRules, ...rest } = patch;
    const next = applyPatch(base, rest);
    if (authorizationRules) next.authorizationRules = settleRules(authorizationRules, base.authorizationRules ?? [], now);
    if (next.enablePartitioning && (created || patch.maxSizeBytes !== undefined || !base.enablePartitioning)) {
      next.maxSizeBytes = partitionedSizeBytes(next.maxSizeBytes);
    }
    return next;
  },
  check: (_, __, next) => checkTopicDescription(next),
  path: (e) => e.t.path,
  record: (e) => recordOp(e.t.path, 'topic', { description: e.description, configHash: e.configHash } satisfies StoredTopic, e),
  // A topic holds no messages itself; its subscriptions go in the same write as its definition.
  parts: (entities, e) => [{ path: e.t.path, ids: [e.t.id], queues: [] }, ...entities.subscriptionsOf(e.t).map((s) => queuePart(s.q))],
  unregister: (entities, e) => entities.removeTopic(e),
  apply(e, next, updatedAt) {
    Object.assign(e.t.settings, {
      defaultMessageTtlMs: next.defaultMessageTtlMs,
      requiresDuplicateDetection: next.requiresDuplicateDetection,
      duplicateDetectionWindowMs: next.duplicateDetectionWindowMs,
      maxSizeBytes: next.maxSizeBytes,
    });
    e.t.status = next.status;
    e.description = next;
    e.updatedAt = updatedAt;
  },
  view: topicView,
};

/** Subscriptions: no SAS rules or partitioning of their own, stored rules beside the record, RequiresSession fixed. */
export const SUBSCRIPTION: EntityKind<SubscriptionEntry, SubscriptionDescription, SubscriptionPatch, SubscriptionView> = {
  defaults: serviceSubscriptionDefaults,
  settle: (base, patch) => applyPatch(base, patch),
  check(entities, path, next, current) {
    checkSubscriptionDescription(next);
    // A subscription takes no sends, so forwarding to itself already fails as "not a queue or topic".
    checkForwarding(entities, path, next.settings, false);
    if (current) checkSessionFixed(path, next.settings, current.settings);
  },
  path: (e) => e.q.path,
  record: (e) =>
    recordOp(e.q.path, 'subscription', { topic: e.topic.path, name: e.name, description: e.description, configHash: e.configHash } satisfies StoredSubscription, e),
  createOps: (e) => [rulesOp(e.q)],
  parts: (_, e) => [queuePart(e.q)],
  unregister: (entities, e) => entities.removeSubscription(e),
  apply: applyUpdate,
  view: (_, e) => subscriptionView(e),
};

/**
 * Applies a durable update of a queue or subscription to the live entity: its settings (and its dead-letter queues'),
 * status and description. In place, since every collaborator reads the settings of the QueueState it holds.
 */
function applyUpdate<D extends QueueDescription | SubscriptionDescription>(
  entry: { q: QueueState; description: D; updatedAt: number },
  next: D,
  updatedAt: number,
  pump: (q: QueueState) => void,
): void {
  const { q } = entry;
  Object.assign(q.settings, next.settings);
  if (q.dlq) Object.assign(q.dlq.settings, deadLetterSettings(next.settings));
  if (q.tdlq) Object.assign(q.tdlq.settings, deadLetterSettings(next.settings));
  q.status = next.status;
  entry.description = next;
  entry.updatedAt = updatedAt;
  // Receives may have been re-enabled: offer what is ready.
  pump(q);
  if (q.dlq) pump(q.dlq);
}

// A queue or subscription is itself and its dead-letter queues: a delete clears all three and ends their receivers.
function queuePart(q: QueueState): Part {
  const queues = [q, q.dlq, q.tdlq].filter((x): x is QueueState => x !== null);
  return { path: q.path, ids: queues.map((x) => x.id), queues };
}

function recordOp(path: string, kind: EntityRecord['kind'], description: unknown, e: EntryInfo): StoreOp {
  return { op: 'entity', path, record: { path, kind, description, createdAt: e.createdAt, updatedAt: e.updatedAt } };
}

// ForwardTo and ForwardDeadLetteredMessagesTo must name an existing queue or topic (Service Bus "Chaining entities
// with autoforwarding"); a queue's may not name the queue itself.
function checkForwarding(entities: Entities, path: string, s: EntitySettings, notItself: boolean): void {
  for (const [prop, target] of [
    ['ForwardTo', s.forwardTo],
    ['ForwardDeadLetteredMessagesTo', s.forwardDeadLetteredMessagesTo],
  ] as const) {
    if (target === null) continue;
    if (notItself && target.toLowerCase() === path.toLowerCase()) {
      throw new BrokerError('InvalidOperation', `${prop} of '${path}' cannot be the entity itself.`);
    }
    try {
      entities.forSend(target);
    } catch {
      throw new BrokerError('InvalidOperation', `${prop} of '${path}' names '${target}', which is not a queue or topic.`);
    }
  }
}

// RequiresSession is fixed when the entity is created (Service Bus: it cannot be changed on an existing entity).
function checkSessionFixed(path: string, next: EntitySettings, current: EntitySettings): void {
  if (next.requiresSession !== current.requiresSession) {
    throw new BrokerError('InvalidOperation', `RequiresSession of '${path}' cannot be changed after it is created.`);
  }
}
