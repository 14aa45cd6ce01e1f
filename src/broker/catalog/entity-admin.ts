// Queues created, changed and deleted at run time (the Service Bus management plane). They are the same
// entities as Config.json's: one registry, one QueueState each, the same send and receive paths. Every change
// is one atomic store write of the entity's definition (with, for a delete, everything it holds), so a crash
// leaves either the old entity or the new one, never half of each. An update changes the live settings object,
// so it applies to the next lock, the next send and the next delivery count check (Service Bus "Update Queue").

import type { StoreOp } from '../../store/store.js';
import type { BrokerContext } from '../runtime/context.js';
import { deadLetterSettings, entityKey, type QueueEntry, type StoredQueue, type SubscriptionEntry } from './entities.js';
import {
  applyQueuePatch,
  checkEntityName,
  checkQueueDescription,
  partitionedSizeBytes,
  serviceQueueDefaults,
  type QueueDescription,
  type QueuePatch,
} from './entity-model.js';
import { BrokerError, entityAlreadyExists, entityNotFound } from '../errors.js';
import type { LockManager } from '../messaging/locks.js';
import type { QueueState } from '../indexes/queue-state.js';
import { settleRules } from './sas-rules.js';
import { transferCounts } from '../indexes/transfer-counts.js';
import type { Plan } from '../runtime/journal.js';

/** Live counts of a queue, as Service Bus's CountDetails reports them. */
export interface QueueCounts {
  /** Available and locked messages (Service Bus counts a locked message as active). */
  active: number;
  deadLetter: number;
  scheduled: number;
  /** Messages waiting for transfer to another entity (see transfer-counts.ts). */
  transfer: number;
  transferDeadLetter: number;
  /** Every message of the queue and its dead-letter queue (deferred ones too), as MessageCount. */
  total: number;
  /** Stored bytes of the queue and its dead-letter queue. */
  sizeInBytes: number;
}

/** A queue as the management API reports it. */
export interface QueueView {
  name: string;
  description: QueueDescription;
  createdAt: number;
  updatedAt: number;
  counts: QueueCounts;
  /** Last send, receive, settlement or browse (epoch ms); null or absent when never used. */
  accessedAt?: number | null;
}

/** The management plane's queue operations. */
export class EntityAdmin {
  /** Names being created (lower case), so two concurrent creates of one name cannot both pass the check. */
  private readonly creating = new Set<string>();

  constructor(
    private readonly ctx: BrokerContext,
    private readonly locks: LockManager,
    /** Offers ready messages of an entity to its consumers (the dispatcher's pump). */
    private readonly pump: (q: QueueState) => void,
  ) {}

  /** The queue named `name`, or undefined when there is none. */
  getQueue(name: string): QueueView | undefined {
    const e = this.ctx.entities.queueEntry(name);
    return e && view(e);
  }

  /** Queues ordered by name, `skip` then at most `top` of them. */
  listQueues(skip: number, top: number): QueueView[] {
    return this.ctx.entities.queueEntriesSorted().slice(skip, skip + top).map(view);
  }

  /** Creates a queue with the service defaults for whatever `patch` leaves out; a taken name fails with 409. */
  async createQueue(name: string, patch: QueuePatch): Promise<QueueView> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    checkEntityName(name);
    const now = clock.now();
    const description = settle(serviceQueueDefaults(), patch, true, now);
    checkQueueDescription(description);
    this.checkForwarding(name, description);
    const key = entityKey(name);
    if (entities.exists(name) || this.creating.has(key)) throw entityAlreadyExists(name);
    this.creating.add(key);
    let entry: QueueEntry;
    try {
      entry = await entities.addQueue(name, description, { createdAt: now, updatedAt: now, origin: 'runtime', configHash: null });
    } finally {
      this.creating.delete(key);
    }
    // A name used before keeps its store id; whatever an earlier entity of that name left is cleared with it. The
    // claim is the registration: the queue exists for routing at once, and is removed again if its record is not
    // durable.
    return journal.run({
      ops: [...clearOps(entry.q), recordOp(entry)],
      applied: () => {
        entities.markDeleted(name, false);
        return view(entry);
      },
      undo: () => entities.removeQueue(entry),
    });
  }

  /** Changes a queue; absent properties keep their values. RequiresSession cannot change (as in Service Bus). */
  async updateQueue(name: string, patch: QueuePatch): Promise<QueueView> {
    const { entities, journal, clock } = this.ctx;
    journal.assertRunning();
    const entry = entities.queueEntry(name);
    if (!entry) throw entityNotFound(name);
    const next = settle(entry.description, patch, false, clock.now());
    checkQueueDescription(next);
    this.checkForwarding(entry.q.path, next);
    if (next.settings.requiresSession !== entry.description.settings.requiresSession) {
      throw new BrokerError('InvalidOperation', `RequiresSession of '${entry.q.path}' cannot be changed after it is created.`);
    }
    return journal.run(this.updatePlan(entry, { ...entry, description: next, updatedAt: clock.now() }));
  }

  // Nothing is claimed: the new settings apply only once the record is durable, so a failed update changes nothing.
  // They apply in place: every collaborator reads the settings of the QueueState it holds at the moment it decides.
  /** The plan of a queue update: store the new record, then apply its settings to the live queue. */
  private updatePlan(entry: QueueEntry, updated: QueueEntry): Plan<QueueView> {
    const next = updated.description;
    return {
      ops: [recordOp(updated)],
      applied: () => {
        applyUpdate(entry, next, updated.updatedAt, this.pump);
        return view(entry);
      },
    };
  }

  /**
   * Deletes a queue and its dead-letter queue with every message, in one store write. Its receivers are
   * detached with not-found, locks on its messages end, and later sends find no entity. A Config.json queue
   * comes back at the next start, as the file still declares it.
   */
  async deleteQueue(name: string): Promise<void> {
    const { entities, journal } = this.ctx;
    journal.assertRunning();
    const entry = entities.queueEntry(name);
    if (!entry) throw entityNotFound(name);
    // Out of the registry first (the claim): a send routed after this point fails, so nothing lands behind the
    // clear. Back in it if the delete is not durable.
    entities.removeQueue(entry);
    await journal.run({
      ops: [...clearOps(entry.q), { op: 'entity', path: entry.q.path, record: null }],
      applied: () => {
        entities.markDeleted(entry.q.path);
        for (const q of [entry.q, entry.q.dlq, entry.q.tdlq]) if (q) endReceivers(this.locks, q);
      },
      undo: () => entities.restoreQueue(entry),
    });
  }

  // ForwardTo and ForwardDeadLetteredMessagesTo must name an existing queue or topic other than the entity itself.
  private checkForwarding(name: string, d: QueueDescription): void {
    for (const [prop, target] of [
      ['ForwardTo', d.settings.forwardTo],
      ['ForwardDeadLetteredMessagesTo', d.settings.forwardDeadLetteredMessagesTo],
    ] as const) {
      if (target === null) continue;
      if (target.toLowerCase() === name.toLowerCase()) {
        throw new BrokerError('InvalidOperation', `${prop} of '${name}' cannot be the entity itself.`);
      }
      try {
        this.ctx.entities.forSend(target);
      } catch {
        throw new BrokerError('InvalidOperation', `${prop} of '${name}' names '${target}', which is not a queue or topic.`);
      }
    }
  }
}

// A queue's description after a create (`created`) or update: the patch applied, the SAS rules given settled
// (sas-rules.ts), and a partitioned queue's size made the total of its 16 partitions.
function settle(base: QueueDescription, patch: QueuePatch, created: boolean, now: number): QueueDescription {
  const next = applyQueuePatch(base, patch);
  if (patch.authorizationRules) next.authorizationRules = settleRules(patch.authorizationRules, base.authorizationRules ?? [], now);
  if (next.enablePartitioning && (created || patch.settings?.maxSizeBytes !== undefined || !base.enablePartitioning)) {
    next.settings.maxSizeBytes = partitionedSizeBytes(next.settings.maxSizeBytes);
  }
  return next;
}

/** Ends the locks on a deleted entity's messages and detaches its receivers with not-found. */
export function endReceivers(locks: LockManager, q: QueueState): void {
  for (const row of q.rows.values()) if (row.lock) locks.release(row.lock.token);
  const gone = entityNotFound(q.path);
  for (const c of q.consumers.splice(0)) c.entityDeleted?.(gone);
}

/**
 * Applies a durable update of a queue or subscription to the live entity: its settings (and its dead-letter queues'),
 * status and description. In place, since every collaborator reads the settings of the QueueState it holds.
 */
export function applyUpdate<D extends QueueEntry['description'] | SubscriptionEntry['description']>(
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

/** The store ops that empty a queue or subscription and its dead-letter queue, in the same write as its delete. */
export function clearOps(q: QueueState): StoreOp[] {
  return [q, q.dlq, q.tdlq].filter((x): x is QueueState => x !== null).map((x) => ({ op: 'clear', qid: x.id }));
}

/** The live counts of a queue or subscription as the management plane reports them (CountDetails, SizeInBytes). */
export function queueCounts(q: QueueState): QueueCounts {
  const c = q.counts();
  const dlq = q.dlq;
  const t = transferCounts(q);
  return {
    active: c.active + c.locked,
    deadLetter: dlq?.size ?? 0,
    scheduled: c.scheduled,
    transfer: t.transfer,
    transferDeadLetter: t.transferDeadLetter,
    total: q.size + (dlq?.size ?? 0) + t.transferDeadLetter,
    sizeInBytes: q.bytes + (dlq?.bytes ?? 0),
  };
}

function recordOp(entry: QueueEntry): StoreOp {
  const stored: StoredQueue = { description: entry.description, configHash: entry.configHash };
  return {
    op: 'entity',
    path: entry.q.path,
    record: { path: entry.q.path, kind: 'queue', description: stored, createdAt: entry.createdAt, updatedAt: entry.updatedAt },
  };
}

function view(e: QueueEntry): QueueView {
  return {
    name: e.q.path,
    description: e.description,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
    counts: queueCounts(e.q),
  };
}
