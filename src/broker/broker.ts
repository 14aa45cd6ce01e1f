// The broker as the protocol layer, the admin API and the tests see it: one object with the Service Bus
// operations, and the implementation of the ports the transports reach it through (ports.ts). It holds no
// messaging logic of its own: it builds the collaborators, each owning one concern, and hands each operation to
// the one that owns it, adding only what spans them (an entity's AccessedAt on the management views, forgetting a
// deleted entity's activity) and the read-only snapshots its ports promise (docs/architecture.md, "Inside the broker"):
//
//   Journal (journal.ts)        the one write path: group commit, writes in flight, a store that failed for good
//   Scheduler (scheduler.ts)    one timer for every deadline; one handler per deadline kind, registered below
//   LockManager (locks.ts)      take, check, renew, release message locks; the lock deadline
//   Transitions (transitions.ts) enqueue, lock ended, dead-letter, forward, expire; the scheduled and TTL deadlines
//   Deliverer (deliverer.ts)    hands one message to one consumer, after its lock or delete is durable
//   Sessions (sessions.ts)      everything about message sessions, their deadline and their recovery
//   Dispatcher (dispatcher.ts)  attach, pump, which consumer gets the next message
//   Sender (send.ts), Settlements (settlement.ts), SequenceOps (by-sequence.ts), Admin (admin.ts), Recovery (recovery.ts)
//   Catalogue (catalogue.ts)    queues, topics, subscriptions and rules at run time: one skeleton over the entity kinds
//   Transactions (transactions.ts) local transactions and send-via: staged work committed in one write

import { Activity } from './catalog/activity.js';
import { Admin, type BrowsedMessage, type BrowseOptions, type BrowsePage, type EntityInfo, type RedriveOptions, type RedriveResult } from './operations/operator.js';
import type { DeleteMessagesRequest } from './messaging/batch-delete.js';
import { SequenceOps } from './messaging/by-sequence.js';
import { createContext, type BrokerContext, type BrokerCounters, type BrokerDeps } from './runtime/context.js';
import { Deliverer } from './messaging/deliverer.js';
import { Dispatcher, type ConsumerHandle } from './messaging/dispatcher.js';
import { MessageActions, type ActionResult, type ResubmitOptions } from './operations/message-actions.js';
import type { QueuePatch, SubscriptionPatch, TopicPatch } from './catalog/entity-model.js';
import { Catalogue } from './catalog/catalogue.js';
import type { QueueView, RuleView, SubscriptionView, TopicView } from './catalog/views.js';
import { LockManager } from './messaging/locks.js';
import type { QueueState } from './indexes/queue-state.js';
import { Recovery } from './runtime/recovery.js';
import { Router } from './messaging/routing.js';
import { Sender } from './messaging/send.js';
import { Sessions, type SessionGrant } from './messaging/sessions.js';
import { Settlements } from './messaging/settlement.js';
import { Transitions } from './messaging/transitions.js';
import { Transactions, type TxnOp, type TxnOwner } from './messaging/transactions.js';
import { rulesGuarding, rulesNamed, type EntityRules } from './catalog/sas-rules.js';
import type { RuleDescription } from '../filters/index.js';
import type { Consumer, IncomingMessage, ReceiveMode, Settlement, StoredMessage } from './types.js';
import type { BrokerEvents, ManagementPort, MessageCounts, MessageHistoryView, ObservationPort, TopicPaths } from './ports.js';
import type { MessagingPort, ReceiveSource } from './messaging-port.js';

export type { BrokerDeps, BrokerCounters, BrokerEventMap } from './runtime/context.js';
export type { ConsumerHandle } from './messaging/dispatcher.js';
export type { SessionGrant } from './messaging/sessions.js';
export type { EntityInfo, BrowsedMessage, BrowseOptions, BrowsePage, RedriveOptions, RedriveResult } from './operations/operator.js';
export type { ActionResult, ResubmitOptions } from './operations/message-actions.js';
export type { QueueView, QueueCounts, TopicView, SubscriptionView, RuleView } from './catalog/views.js';
export type {
  QueueDescription,
  QueuePatch,
  EntityStatus,
  TopicDescription,
  TopicPatch,
  SubscriptionDescription,
  SubscriptionPatch,
} from './catalog/entity-model.js';
export type { AuthorizationRule, AuthorizationRuleInput, EntityRules } from './catalog/sas-rules.js';
export type { HttpPort, ManagementPort, ObservationPort } from './ports.js';
export type { MessagingPort } from './messaging-port.js';

/** The complete broker: the Service Bus messaging operations plus the operator's ones, over a `Store`. */
export class Broker implements ManagementPort, ObservationPort, MessagingPort {
  /** Counters since start, for logs and the benchmark. */
  readonly counters: BrokerCounters;
  /** Events for metrics and alerting (to follow only: the broker emits them); listeners must not throw. */
  readonly events: BrokerEvents;
  private readonly ctx: BrokerContext;
  private readonly locks: LockManager;
  private readonly sessions: Sessions;
  private readonly dispatcher: Dispatcher;
  private readonly sender: Sender;
  private readonly settlements: Settlements;
  private readonly bySequence: SequenceOps;
  private readonly admin: Admin;
  private readonly actions: MessageActions;
  private readonly catalogue: Catalogue;
  private readonly recovery: Recovery;
  private readonly activity: Activity;
  private readonly transactions: Transactions;

  /**
   * Builds the collaborators over `ctx`, the state they share; a test that must look at the in-memory indexes builds
   * that context itself (`createContext(deps)`) and keeps it, since the broker hands no index out.
   */
  constructor(deps: BrokerDeps, ctx: BrokerContext = createContext(deps)) {
    this.ctx = ctx;
    this.counters = ctx.counters;
    this.events = ctx.events;
    // Whatever changes an entity's messages ends by pumping it; the dispatcher is built last, so the others
    // reach it through this function.
    const pump = (q: QueueState): void => this.dispatcher.pump(q);
    const router = new Router(ctx.entities);
    const transitions = new Transitions(ctx, router, pump);
    this.locks = new LockManager(ctx, (q, row) => transitions.lockEnded(q, row));
    const deliverer = new Deliverer(ctx, this.locks, pump);
    this.sessions = new Sessions(ctx, this.locks, transitions, deliverer);
    this.dispatcher = new Dispatcher(ctx, deliverer, this.sessions, transitions);
    this.sender = new Sender(ctx, router, transitions, pump);
    this.settlements = new Settlements(ctx, this.locks, transitions, (token) => this.dispatcher.completing(token));
    this.bySequence = new SequenceOps(ctx, this.locks, transitions);
    this.admin = new Admin(ctx, this.locks, transitions, pump);
    this.actions = new MessageActions(ctx, router, transitions, pump);
    this.catalogue = new Catalogue(ctx, this.locks, pump);
    this.recovery = new Recovery(ctx, this.locks, this.sessions);
    this.transactions = new Transactions(ctx, this.sender, this.settlements, this.bySequence, this.locks, transitions, pump);
    this.activity = new Activity(ctx, this);
    // Each deadline kind is handled by the collaborator that owns what the deadline ends.
    ctx.scheduler.on('lock', (d) => this.locks.onDeadline(d));
    ctx.scheduler.on('scheduled', (d) => transitions.onScheduledDeadline(d));
    ctx.scheduler.on('ttl', (d) => transitions.onTtlDeadline(d));
    ctx.scheduler.on('session', (d) => this.sessions.onDeadline(d));
  }

  /** Largest message accepted, in bytes (advertised as max-message-size). */
  get maxMessageSize(): number {
    return this.sender.maxMessageSize;
  }

  /** Largest batch transfer accepted, in bytes (advertised as com.microsoft:max-message-batch-size). */
  get maxBatchSize(): number {
    return this.sender.maxBatchSize;
  }

  /** Number of pending scheduler deadlines (for tests and metrics). */
  get deadlines(): number {
    return this.ctx.scheduler.size;
  }

  /** Creates the configured entities and rebuilds every queue's index, locks, deadlines and rules from the store. */
  async start(): Promise<void> {
    await this.recovery.run();
    this.activity.start();
  }

  /**
   * Resolves once the broker is quiet: no write in flight and none started by what the last writes woke (the
   * manual clock waits for this between two deadlines). Bounded, so a broker under steady load still answers.
   */
  async settled(): Promise<void> {
    for (let i = 0; i < 64; i++) {
      await new Promise<void>((r) => setImmediate(r));
      if (this.ctx.journal.pending === 0) return;
      await this.ctx.journal.drain();
    }
  }

  /** Ends the lock of `token` now, as if it had expired (fault injection); an unknown or lapsed token is LockLost. */
  expireLock(token: string): void {
    this.locks.expireNow(token);
  }

  /** Stops timers and waits for writes already issued; new work is refused with ShuttingDown. */
  async stop(): Promise<void> {
    this.ctx.journal.stop();
    this.ctx.scheduler.stop();
    this.activity.stop();
    await this.ctx.journal.drain();
  }

  /** Sends messages; resolves with their sequence numbers once they are on disk (see Sender.send). */
  send(path: string, msgs: IncomingMessage[]): Promise<number[]> {
    return this.sender.send(path, msgs);
  }

  /** Attaches a receiver to a queue, subscription or dead-letter queue path. */
  attach(path: string, consumer: Consumer): ConsumerHandle {
    return this.dispatcher.attach(path, consumer);
  }

  /** Settles a peek-locked message by lock token; fails with LockLost if the lock is not current. */
  settle(token: string, s: Settlement, entityPath?: string): Promise<void> {
    return this.settlements.settle(token, s, entityPath);
  }

  /** Extends a lock by the entity's LockDuration; resolves with the new locked-until (epoch ms). */
  renewLock(token: string, entityPath?: string): Promise<number> {
    return this.locks.renew(token, entityPath);
  }

  /** Peeks messages from sequence number `from` on, without locking (see SequenceOps.peek). */
  peek(path: string, from: number, count: number, sessionId?: string): StoredMessage[] {
    this.activity.touch(path);
    return this.bySequence.peek(path, from, count, sessionId);
  }

  /** Fetches deferred messages by sequence number (see SequenceOps.receiveDeferred). */
  receiveDeferred(path: string, seqs: number[], mode: ReceiveMode): Promise<StoredMessage[]> {
    return this.bySequence.receiveDeferred(path, seqs, mode);
  }

  /** Cancels scheduled messages by the sequence numbers their send reported. */
  cancelScheduled(path: string, seqs: number[]): Promise<void> {
    return this.bySequence.cancelScheduled(path, seqs);
  }

  /** Locks a session for `consumer`, by id or (null) the next available one (see Sessions.accept). */
  acceptSession(path: string, sessionId: string | null, timeoutMs: number, consumer: Consumer): Promise<SessionGrant> {
    return this.sessions.accept(path, sessionId, timeoutMs, consumer);
  }

  /** Extends a session lock by LockDuration; a session not locked (any more) fails with SessionLockLost. */
  renewSessionLock(path: string, sessionId: string): Promise<number> {
    return this.sessions.renew(path, sessionId);
  }

  /** The session's state (null when never set); needs the session lock. */
  getSessionState(path: string, sessionId: string): Uint8Array | null {
    return this.sessions.getState(path, sessionId);
  }

  /** Sets (or with null clears) the session's state, durably; needs the session lock. */
  setSessionState(path: string, sessionId: string, state: Uint8Array | null): Promise<void> {
    return this.sessions.setState(path, sessionId, state);
  }

  /** Ids of sessions selected by get-message-sessions' last-updated-time `since`, paged. */
  listSessions(path: string, since: number, skip: number, top: number): string[] {
    return this.sessions.list(path, since, skip, top);
  }

  /** A subscription's rules, sorted by name (enumerate-rules). */
  listRules(subscriptionPath: string): RuleDescription[] {
    return this.admin.listRules(subscriptionPath);
  }

  /** Adds a rule durably; invalid rules and duplicate names throw RuleDefinitionError. */
  addRule(subscriptionPath: string, rule: RuleDescription): Promise<void> {
    this.activity.touch(subscriptionPath);
    return this.admin.addRule(subscriptionPath, rule);
  }

  /** Removes a rule durably; an unknown name throws RuleDefinitionError (amqp:not-found). */
  removeRule(subscriptionPath: string, name: string): Promise<void> {
    return this.admin.removeRule(subscriptionPath, name);
  }

  // The attach checks and transaction calls of the messaging port (messaging-port.ts), named by what the AMQP layer
  // asks, so it never reaches `entities` or `transactions` itself.

  /** Throws unless a client may send to `address`: a queue or topic (not a subqueue or a subscription). */
  checkSendTarget(address: string): void {
    this.ctx.entities.forSend(address);
  }

  /** Throws unless `address` is an entity a send-via link may send through (a queue or a subscription). */
  checkSendVia(address: string): void {
    this.transactions.viaEntity(address);
  }

  /** The entity a receiver on `address` receives from (its path, whether it requires sessions); throws not-found. */
  receiveSource(address: string): ReceiveSource {
    const q = this.ctx.entities.forReceive(address);
    return { path: q.path, sessionful: q.sessionful };
  }

  /** Throws not-found unless `address` names an entity (queue, topic, subscription or subqueue). */
  checkEntity(address: string): void {
    this.ctx.entities.node(address);
  }

  /** Sends through the entity `via` to `destination` (send-via outside a transaction), durably. */
  sendVia(via: string, destination: string, msgs: IncomingMessage[]): Promise<void> {
    return this.transactions.sendVia(via, destination, msgs);
  }

  /** Declares a local transaction for `owner` (see Transactions.declare); returns its id (hex). */
  declareTransaction(owner: TxnOwner): string {
    return this.transactions.declare(owner);
  }

  /** Stages one piece of work in a transaction of `connection` (see Transactions.stage). */
  stageInTransaction(txn: string, connection: string, op: TxnOp): void {
    this.transactions.stage(txn, connection, op);
  }

  /** Commits, or with `fail` rolls back, a transaction of `connection` (see Transactions.discharge). */
  dischargeTransaction(txn: string, connection: string, fail: boolean): Promise<void> {
    return this.transactions.discharge(txn, connection, fail);
  }

  /** Rolls back the open transactions of `connection`, or of its coordinator link `link` only; returns how many. */
  rollbackTransactions(connection: string, link?: string): number {
    return this.transactions.rollbackOwner(connection, link);
  }

  /** Transactions declared and not yet discharged (for tests and operators: a leak shows here). */
  openTransactions(): number {
    return this.transactions.size;
  }

  /** The SAS rules of the queue or topic `path` is or lies under (a subqueue, a subscription), or null (sas-rules.ts). */
  rulesGuarding(path: string): EntityRules | null {
    return rulesGuarding(this.ctx.entities, path);
  }

  /** Every entity SAS rule named `keyName`, with its entity (for a SASL PLAIN login, which names no entity). */
  rulesNamed(keyName: string): EntityRules[] {
    return rulesNamed(this.ctx.entities, keyName);
  }

  /** A queue's description, dates and live counts (management plane), or undefined when there is none. */
  getQueue(name: string): QueueView | undefined {
    return this.accessed(this.catalogue.getQueue(name));
  }

  /** Queues ordered by name, paged by `skip` and `top`. */
  listQueues(skip: number, top: number): QueueView[] {
    return this.catalogue.listQueues(skip, top).map((v) => this.accessed(v));
  }

  /** Creates a queue durably with the service defaults for what `patch` leaves out (409 if the name is taken). */
  createQueue(name: string, patch: QueuePatch): Promise<QueueView> {
    return this.catalogue.createQueue(name, patch);
  }

  /** Changes a queue durably; the change applies to the next lock, send and delivery. */
  updateQueue(name: string, patch: QueuePatch): Promise<QueueView> {
    return this.catalogue.updateQueue(name, patch);
  }

  /** Deletes a queue with its messages in one write; its receivers end with not-found. */
  async deleteQueue(name: string): Promise<void> {
    await this.catalogue.deleteQueue(name);
    this.activity.forget(name);
  }

  /** A topic's description, dates and subscription count, or undefined. */
  getTopic(name: string): TopicView | undefined {
    return this.accessed(this.catalogue.getTopic(name));
  }

  /** Topics ordered by name, paged. */
  listTopics(skip: number, top: number): TopicView[] {
    return this.catalogue.listTopics(skip, top).map((v) => this.accessed(v));
  }

  /** Creates a topic durably with the service defaults for what `patch` leaves out (409 if the name is taken). */
  createTopic(name: string, patch: TopicPatch): Promise<TopicView> {
    return this.catalogue.createTopic(name, patch);
  }

  /** Changes a topic durably. */
  updateTopic(name: string, patch: TopicPatch): Promise<TopicView> {
    return this.catalogue.updateTopic(name, patch);
  }

  /** Deletes a topic with its subscriptions and their messages in one write. */
  async deleteTopic(name: string): Promise<void> {
    await this.catalogue.deleteTopic(name);
    this.activity.forget(name);
  }

  /** A subscription's description, dates and live counts, or undefined. */
  getSubscription(topic: string, name: string): SubscriptionView | undefined {
    return this.accessed(this.catalogue.getSubscription(topic, name));
  }

  /** A topic's subscriptions ordered by name, paged (not-found for a missing topic). */
  listSubscriptions(topic: string, skip: number, top: number): SubscriptionView[] {
    return this.catalogue.listSubscriptions(topic, skip, top).map((v) => this.accessed(v));
  }

  /** Creates a subscription durably, with `defaultRule` or `$Default` (1=1) as its rule. */
  createSubscription(topic: string, name: string, patch: SubscriptionPatch, defaultRule?: RuleDescription): Promise<SubscriptionView> {
    return this.catalogue.createSubscription(topic, name, patch, defaultRule);
  }

  /** Changes a subscription durably; the change applies to the next lock, send and delivery. */
  updateSubscription(topic: string, name: string, patch: SubscriptionPatch): Promise<SubscriptionView> {
    return this.catalogue.updateSubscription(topic, name, patch);
  }

  /** Deletes a subscription with its messages and rules in one write; its receivers end with not-found. */
  async deleteSubscription(topic: string, name: string): Promise<void> {
    await this.catalogue.deleteSubscription(topic, name);
    this.activity.forget(`${topic}/Subscriptions/${name}`);
  }

  /** Runs one AutoDeleteOnIdle sweep now (the broker runs one every ACTIVITY_SWEEP_MS on its clock). */
  sweepIdle(): Promise<void> {
    return this.activity.sweep();
  }

  // A management view with the entity's AccessedAt.
  private accessed<T extends { name: string; topic?: string }>(v: T): T;
  private accessed<T extends { name: string; topic?: string }>(v: T | undefined): T | undefined;
  private accessed<T extends { name: string; topic?: string }>(v: T | undefined): T | undefined {
    if (!v) return v;
    const path = v.topic === undefined ? v.name : `${v.topic}/Subscriptions/${v.name}`;
    return { ...v, accessedAt: this.activity.accessedAt(path) };
  }

  /** A subscription's rules as the management plane reports them (not-found for a missing subscription). */
  subscriptionRules(topic: string, subscription: string): RuleView[] {
    return this.catalogue.listRules(topic, subscription);
  }

  /** One rule of a subscription, or undefined. */
  getRule(topic: string, subscription: string, name: string): RuleView | undefined {
    return this.catalogue.getRule(topic, subscription, name);
  }

  /** Replaces a rule's filter and action durably (not-found for a missing rule). */
  updateRule(topic: string, subscription: string, rule: RuleDescription): Promise<RuleView> {
    return this.catalogue.updateRule(topic, subscription, rule);
  }

  /** Every queue and subscription with its counts (dead-letter queues are reported with their entity). */
  listEntities(): EntityInfo[] {
    return this.admin.listEntities();
  }

  /** Messages of an entity in sequence order, optionally of some states, with their lock holders (bounded: see browsePage). */
  browse(path: string, opts: BrowseOptions = {}): BrowsedMessage[] {
    return this.admin.browse(path, opts);
  }

  /** One bounded page of a browse, with where to go on from when it stopped before the entity's end. */
  browsePage(path: string, opts: BrowseOptions = {}): BrowsePage {
    return this.admin.browsePage(path, opts);
  }

  /** Deletes every message of an entity (locked ones too; their holders' settlements then fail). */
  purge(path: string): Promise<number> {
    return this.admin.purge(path);
  }

  /** When each queue's and subscription's oldest waiting message was enqueued (see Admin.oldestWaiting). */
  oldestWaiting(): { path: string; enqueuedAt: number | null }[] {
    return this.admin.oldestWaiting();
  }

  /** The broker's clock now, epoch ms (the time enqueued times are measured against). */
  now(): number {
    return this.ctx.clock.now();
  }

  /** Where a resubmit from `path` goes by default (see MessageActions.resubmitTarget). */
  resubmitTarget(path: string): string {
    return this.actions.resubmitTarget(path);
  }

  /** Resubmits copies of messages chosen by sequence number (see MessageActions.resubmit). */
  resubmitMessages(path: string, seqs: number[], opts: ResubmitOptions): Promise<ActionResult> {
    return this.actions.resubmit(path, seqs, opts);
  }

  /** Deletes messages chosen by sequence number, locked ones skipped (see MessageActions.delete). */
  deleteBySequence(path: string, seqs: number[]): Promise<ActionResult> {
    return this.actions.delete(path, seqs);
  }

  /** Dead-letters messages chosen by sequence number with a reason (see MessageActions.deadLetter). */
  deadLetterBySequence(path: string, seqs: number[], reason?: string, description?: string): Promise<ActionResult> {
    return this.actions.deadLetter(path, seqs, reason, description);
  }

  /** Batch delete of the oldest available messages (see Admin.deleteMessages). */
  deleteMessages(path: string, req: DeleteMessagesRequest): Promise<number> {
    return this.admin.deleteMessages(path, req);
  }

  /** Moves dead-lettered messages back to their entity (or `opts.to`), one atomic write each. */
  redrive(dlqPath: string, opts: RedriveOptions = {}): Promise<RedriveResult> {
    return this.admin.redrive(dlqPath, opts);
  }

  // What the transports ask of the registry, answered here so that none of them holds it (ports.ts).

  /** Every message-holding entity's counts by state, dead-letter queues as entities of their own. */
  messageCounts(): MessageCounts[] {
    return this.ctx.entities.all().map((q) => ({ path: q.path, ...q.counts() }));
  }

  /** Every topic with the paths of its subscriptions. */
  topicPaths(): TopicPaths[] {
    return this.ctx.entities.allTopics().map((t) => ({ path: t.path, subscriptions: t.subscriptions.map((s) => s.path) }));
  }

  /** True when the entity at `path` was deleted through the management plane since start. */
  wasDeleted(path: string): boolean {
    return this.ctx.entities.wasDeleted(path);
  }

  /** A message's delivery history (see MessageHistoryView); null when it is not stored or has none. */
  messageHistory(path: string, seq: number): MessageHistoryView | null {
    return this.ctx.history.view(this.ctx.entities.resolve(path), seq);
  }

  /** Overlapping deliveries counted since start, by entity path. */
  overlapCounts(): Record<string, number> {
    return this.ctx.history.overlapCounts();
  }
}
