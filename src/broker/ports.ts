// The HTTP side's ports into the broker: what the management plane, the admin API and the explorer need to
// manage entities and their messages (ManagementPort), and what health, metrics, alerts and the explorer's
// history need to observe them (ObservationPort). `Broker` implements both; the composition root hands `http/`
// a value of type `HttpPort` and nothing else, so a transport can reach neither the entity registry nor an
// in-memory index (docs/architecture.md, "Inside the broker"). Every value a port returns is a `Snapshot`: a
// fresh read-only copy or an immutable description (descriptions are replaced on update, never changed in place),
// never a `QueueState`, a `TopicState` or a live row.
//
// The vocabulary the HTTP side speaks with these ports (view types, the dead-letter suffix, name and status
// rules) is re-exported here, so `http/` imports from `src/broker/` only this module, `types.ts` and `errors.ts`
// (and the public leaf modules test/dependency-cruiser.cjs names). The AMQP side's port is messaging-port.ts.

import type { EventEmitter } from 'node:events';
import type { RuleDescription } from '../filters/index.js';
import type * as views from './catalog/views.js';
import type { QueuePatch, SubscriptionPatch, TopicPatch } from './catalog/entity-model.js';
import type * as sas from './catalog/sas-rules.js';
import type { ActionResult, ResubmitOptions } from './operations/message-actions.js';
import type * as operator from './operations/operator.js';
import type { BrowseOptions, RedriveOptions, RedriveResult } from './operations/operator.js';
import type { BrokerEventMap } from './runtime/context.js';
import type { IncomingMessage } from './types.js';

export { DLQ_SUFFIX } from './catalog/entities.js';
export { ENTITY_STATUSES, MAX_ENTITY_NAME, type EntityStatus } from './catalog/entity-model.js';
export type { QueueCounts } from './catalog/views.js';
export type { QueuePatch, SubscriptionPatch, TopicPatch } from './catalog/entity-model.js';
export type { AuthorizationRuleInput } from './catalog/sas-rules.js';
export type { ActionResult, ResubmitOptions } from './operations/message-actions.js';
export type { AttemptEnd, AttemptHolder, DeliveryAttempt, DeliveryOverlap, LateAction, MessageEvent, MessageHistoryView } from './indexes/history-image.js';
import type { MessageHistoryView } from './indexes/history-image.js';
export type { BrowseOptions, RedriveOptions, RedriveResult } from './operations/operator.js';
export type { BrokerEventMap } from './runtime/context.js';
export type { TxnOp, TxnOwner } from './messaging/transactions.js';

/**
 * A value as a port hands it out: read-only all the way down (arrays, maps and nested objects), so a transport
 * cannot change what it was shown. Bytes and functions pass as they are (TypeScript has no read-only typed array).
 */
export type Snapshot<T> = T extends Uint8Array | ((...args: never[]) => unknown)
  ? T
  : T extends ReadonlyMap<infer K, infer V>
    ? ReadonlyMap<K, Snapshot<V>>
    : T extends readonly (infer E)[]
      ? readonly Snapshot<E>[]
      : T extends object
        ? { readonly [P in keyof T]: Snapshot<T[P]> }
        : T;

/** A queue as the management plane shows it: description, dates, counts (catalog/views.ts). */
export type QueueView = Snapshot<views.QueueView>;
/** A topic as the management plane shows it (catalog/views.ts). */
export type TopicView = Snapshot<views.TopicView>;
/** A subscription as the management plane shows it (catalog/views.ts). */
export type SubscriptionView = Snapshot<views.SubscriptionView>;
/** A rule as the management plane shows it (catalog/views.ts). */
export type RuleView = Snapshot<views.RuleView>;
/** An entity SAS rule (catalog/sas-rules.ts). */
export type AuthorizationRule = Snapshot<sas.AuthorizationRule>;
/** The SAS rules of one queue or topic and the path they are scoped to (catalog/sas-rules.ts). */
export type EntityRules = Snapshot<sas.EntityRules>;
/** One queue's or subscription's counts (operations/operator.ts). */
export type EntityInfo = Snapshot<operator.EntityInfo>;
/** A stored message as the admin API shows it: a copy of its row, its body, who holds its lock. */
export type BrowsedMessage = Snapshot<operator.BrowsedMessage>;
/** One bounded page of a browse (operations/operator.ts). */
export type BrowsePage = Snapshot<operator.BrowsePage>;

/** One message-holding entity's messages by state (dead-letter queues are listed as entities of their own). */
export interface MessageCounts {
  readonly path: string;
  readonly active: number;
  readonly locked: number;
  readonly deferred: number;
  readonly scheduled: number;
}

/** A topic and the paths of its subscriptions (a topic holds no messages, so it has no counts of its own). */
export interface TopicPaths {
  readonly path: string;
  readonly subscriptions: readonly string[];
}

/** When an entity's oldest message waiting for a consumer was enqueued (epoch ms), or null when none waits. */
export interface OldestWaiting {
  readonly path: string;
  readonly enqueuedAt: number | null;
}

/** The broker's events, to follow and to stop following; only the broker emits them. */
export type BrokerEvents = Pick<EventEmitter<BrokerEventMap>, 'on' | 'off'>;

/**
 * What `http/` needs to manage a namespace: the Service Bus management plane's CRUD of queues, topics,
 * subscriptions and rules (ATOM), the entity SAS rules it authorises with, and the operator's message actions.
 */
export interface ManagementPort {
  /** A queue's description, dates and live counts, or undefined when there is none. */
  getQueue(name: string): QueueView | undefined;
  /** Queues ordered by name, paged by `skip` and `top`. */
  listQueues(skip: number, top: number): readonly QueueView[];
  /** Creates a queue durably with the service defaults for what `patch` leaves out (409 if the name is taken). */
  createQueue(name: string, patch: QueuePatch): Promise<QueueView>;
  /** Changes a queue durably. */
  updateQueue(name: string, patch: QueuePatch): Promise<QueueView>;
  /** Deletes a queue with its messages in one write. */
  deleteQueue(name: string): Promise<void>;
  /** A topic's description, dates and subscription count, or undefined. */
  getTopic(name: string): TopicView | undefined;
  /** Topics ordered by name, paged. */
  listTopics(skip: number, top: number): readonly TopicView[];
  /** Creates a topic durably with the service defaults for what `patch` leaves out. */
  createTopic(name: string, patch: TopicPatch): Promise<TopicView>;
  /** Changes a topic durably. */
  updateTopic(name: string, patch: TopicPatch): Promise<TopicView>;
  /** Deletes a topic with its subscriptions and their messages in one write. */
  deleteTopic(name: string): Promise<void>;
  /** A subscription's description, dates and live counts, or undefined. */
  getSubscription(topic: string, name: string): SubscriptionView | undefined;
  /** A topic's subscriptions ordered by name, paged (not-found for a missing topic). */
  listSubscriptions(topic: string, skip: number, top: number): readonly SubscriptionView[];
  /** Creates a subscription durably, with `defaultRule` or `$Default` (1=1) as its rule. */
  createSubscription(topic: string, name: string, patch: SubscriptionPatch, defaultRule?: RuleDescription): Promise<SubscriptionView>;
  /** Changes a subscription durably. */
  updateSubscription(topic: string, name: string, patch: SubscriptionPatch): Promise<SubscriptionView>;
  /** Deletes a subscription with its messages and rules in one write. */
  deleteSubscription(topic: string, name: string): Promise<void>;
  /** A subscription's rules as the management plane reports them (not-found for a missing subscription). */
  subscriptionRules(topic: string, subscription: string): readonly RuleView[];
  /** One rule of a subscription, or undefined. */
  getRule(topic: string, subscription: string, name: string): RuleView | undefined;
  /** Replaces a rule's filter and action durably. */
  updateRule(topic: string, subscription: string, rule: RuleDescription): Promise<RuleView>;
  /** A subscription's rules by its path, sorted by name. */
  listRules(subscriptionPath: string): readonly Snapshot<RuleDescription>[];
  /** Adds a rule durably; invalid rules and duplicate names throw RuleDefinitionError. */
  addRule(subscriptionPath: string, rule: RuleDescription): Promise<void>;
  /** Removes a rule durably; an unknown name throws RuleDefinitionError. */
  removeRule(subscriptionPath: string, name: string): Promise<void>;
  /** The SAS rules of the queue or topic `path` is or lies under, or null (a request's token is checked against them). */
  rulesGuarding(path: string): EntityRules | null;
  /** Every entity SAS rule named `keyName`, with its entity. */
  rulesNamed(keyName: string): readonly EntityRules[];
  /** Sends messages (the operator's send action); resolves with their sequence numbers once they are on disk. */
  send(path: string, msgs: IncomingMessage[]): Promise<number[]>;
  /** Messages of an entity in sequence order, with their lock holders (bounded as `browsePage`). */
  browse(path: string, opts?: BrowseOptions): readonly BrowsedMessage[];
  /** One bounded page of a browse, with where to go on from when it stopped before the entity's end. */
  browsePage(path: string, opts?: BrowseOptions): BrowsePage;
  /** Deletes every message of an entity; resolves with how many. */
  purge(path: string): Promise<number>;
  /** Moves dead-lettered messages back to their entity (or `opts.to`), one atomic write each. */
  redrive(dlqPath: string, opts?: RedriveOptions): Promise<RedriveResult>;
  /** Where a resubmit from `path` goes by default. */
  resubmitTarget(path: string): string;
  /** Resubmits copies of messages chosen by sequence number. */
  resubmitMessages(path: string, seqs: number[], opts: ResubmitOptions): Promise<ActionResult>;
  /** Deletes messages chosen by sequence number, locked ones skipped. */
  deleteBySequence(path: string, seqs: number[]): Promise<ActionResult>;
  /** Dead-letters messages chosen by sequence number with a reason. */
  deadLetterBySequence(path: string, seqs: number[], reason?: string, description?: string): Promise<ActionResult>;
}

/** What `http/` needs to observe a namespace: counts, topology, ages and events, all read-only. */
export interface ObservationPort {
  /** The broker's events (sends, settlements, dead-letters, commits), for metrics, alerts and history. */
  readonly events: BrokerEvents;
  /** Every queue and subscription with its counts (dead-letter queues are reported with their entity). */
  listEntities(): readonly EntityInfo[];
  /** Every message-holding entity's counts by state, dead-letter queues as entities of their own. */
  messageCounts(): MessageCounts[];
  /** Every topic with the paths of its subscriptions. */
  topicPaths(): TopicPaths[];
  /** When each queue's and subscription's oldest waiting message was enqueued. */
  oldestWaiting(): OldestWaiting[];
  /** The broker's clock now, epoch ms (the time enqueued times are measured against). */
  now(): number;
  /** True when the entity at `path` was deleted through the management plane since start (health says so). */
  wasDeleted(path: string): boolean;
  /** A message's delivery history (dead-letter queues too); null when it is not stored or has none. */
  messageHistory(path: string, seq: number): MessageHistoryView | null;
  /** Overlapping deliveries counted since start, by entity path (the explorer's badge). */
  overlapCounts(): Record<string, number>;
}

/** Everything `http/` may call on a broker. */
export type HttpPort = ManagementPort & ObservationPort;
