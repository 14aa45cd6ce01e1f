// Where a sent message lands. A queue keeps it, unless it auto-forwards (ForwardTo); a topic fans it out to
// each subscription by the subscription's rules (docs/filters.md, "Fan-out"), and each copy is then treated as
// a send to that subscription (which may forward again). Routing only decides placements; the caller writes
// them all in one store transaction, so a crash never leaves some subscriptions with the message and others
// without, and a forward never both keeps and moves a message.

import type { Entities } from '../catalog/entities.js';
import { ignoreTtl, newRow } from '../indexes/rows.js';
import type { QueueState } from '../indexes/queue-state.js';
import type { TopicState } from '../indexes/topic-state.js';
import type { IncomingMessage, MessageRow } from '../types.js';

/** Service Bus dead-letters a message after more than four auto-forwarding hops (MaxTransferHopCountExceeded). */
export const MAX_FORWARD_HOPS = 4;

/** One stored copy to write: the entity, its new row and its body. */
export interface Placement {
  q: QueueState;
  row: MessageRow;
  body: Uint8Array;
  /** Set when copies of one topic send share its body: the [topic qid, topic seq] it is stored under. */
  shared?: [number, number];
}

/**
 * A sequence number reserved for a message before it is routed (a schedule-message staged in a transaction): the
 * entity that numbers it and the number. Routing gives the message that number where it lands in `owner`.
 */
export interface ReservedSeq {
  owner: QueueState | TopicState;
  seq: number;
}

/** Decides the placements of one message sent to `target`. */
export class Router {
  /** Topics that handed out a sequence number since the last `takeNumberedTopics()`. */
  private readonly numbered = new Set<TopicState>();

  constructor(private readonly entities: Entities) {}

  /**
   * The topics whose sequence numbers routing advanced since the last call: their marks must go into the same
   * store write as the placements, or a restart could hand out a topic number twice (a topic keeps no rows of its
   * own to recover its numbering from).
   */
  takeNumberedTopics(): TopicState[] {
    const topics = [...this.numbered];
    this.numbered.clear();
    return topics;
  }

  /**
   * Appends where `m` lands when sent to `target` at `now`; returns the topic sequence number when it lands in a
   * topic (sent to one, or forwarded to one by ForwardTo). With `reserved`, the entity that reserved the number
   * uses it instead of taking the next one.
   */
  route(
    target: QueueState | TopicState,
    m: IncomingMessage,
    now: number,
    out: Placement[],
    hops = 0,
    reserved?: ReservedSeq,
  ): number | undefined {
    if (target.kind === 'topic') {
      const topicSeq = reserved?.owner === target ? reserved.seq : target.nextSeq++;
      this.numbered.add(target);
      const first = out.length;
      this.fanOut(target, m, now, out, hops, topicSeq);
      // Two or more copies of one send store its body once, under the topic's number (a copy forwarded on to
      // another topic included: the outermost topic's body is the one kept).
      if (out.length - first >= 2) for (let i = first; i < out.length; i++) if (out[i]!.body === m.body) out[i]!.shared = [target.id, topicSeq];
      return topicSeq;
    }
    return this.toQueue(target, m, now, out, hops, undefined, undefined, reserved);
  }

  /**
   * The entity whose sequence numbers a message sent to `target` is reported by: a topic, or the queue it is
   * stored in after following ForwardTo (as `route` does; a chain too long ends where the dead-letter happens).
   */
  numbering(target: QueueState | TopicState): QueueState | TopicState {
    let at = target;
    for (let hops = 0; at.kind !== 'topic' && at.settings.forwardTo && hops < MAX_FORWARD_HOPS; hops++) {
      at = this.entities.forSend(at.settings.forwardTo);
    }
    return at;
  }

  private fanOut(t: TopicState, m: IncomingMessage, now: number, out: Placement[], hops: number, topicSeq: number): void {
    let view: unknown;
    const viewOf = (): unknown => (view ??= m.view?.() ?? null);
    for (const sub of t.subscriptions) {
      const plan = sub.rules?.plan(viewOf()) ?? { copies: [] };
      if (plan.error) {
        // A filter that throws dead-letters the message in that subscription (EnableDeadLetteringOnFilter-
        // EvaluationExceptions defaults to true; reason = the exception's type name).
        this.toDeadLetter(sub, m, now, out, plan.error.reason, plan.error.description, topicSeq);
      }
      for (const copy of plan.copies) {
        const props = { ...(m.patch?.props ?? {}), ...(copy.props ?? {}) };
        if (copy.ruleName) props.RuleName = copy.ruleName;
        const sys = { ...(m.patch?.sys ?? {}), ...(copy.sys ?? {}) };
        const variant: IncomingMessage = { ...m, patch: { ...m.patch, props, sys } };
        if (typeof copy.sys?.sessionId === 'string') variant.sessionId = copy.sys.sessionId;
        this.toQueue(sub, variant, now, out, hops, t.settings.defaultMessageTtlMs, topicSeq);
      }
    }
  }

  private toQueue(
    q: QueueState,
    m: IncomingMessage,
    now: number,
    out: Placement[],
    hops: number,
    topicTtlMs?: number | null,
    topicSeq?: number,
    reserved?: ReservedSeq,
  ): number | undefined {
    const forwardTo = q.settings.forwardTo;
    if (forwardTo) {
      if (hops >= MAX_FORWARD_HOPS) {
        this.toDeadLetter(q, m, now, out, 'MaxTransferHopCountExceeded', 'The message exceeded the maximum number of auto-forwarding hops.', topicSeq);
        return undefined;
      }
      // A queue that forwards to a topic reports the topic's number, as a send to the topic would.
      return this.route(this.entities.forSend(forwardTo), m, now, out, hops + 1, reserved);
    }
    if (q.sessionful && !m.sessionId) {
      // A session-enabled subscription (or forward target) dead-letters messages without a session id; the
      // topic still accepts the send (docs/filters.md, "Sessions and forwarding").
      this.toDeadLetter(q, m, now, out, 'Session id is null.', "Session enabled entity doesn't allow a message whose session identifier is null.", topicSeq);
      return undefined;
    }
    const row = newRow(q, m, reserved?.owner === q ? reserved.seq : q.nextSeq++, now, topicTtlMs);
    if (topicSeq !== undefined) row.topicSeq = topicSeq;
    if (row.props && !Object.keys(row.props).length) delete row.props;
    if (row.sys && !Object.keys(row.sys).length) delete row.sys;
    out.push({ q, row, body: m.body });
    return undefined;
  }

  private toDeadLetter(
    q: QueueState,
    m: IncomingMessage,
    now: number,
    out: Placement[],
    reason: string,
    description: string,
    topicSeq?: number,
  ): void {
    if (!q.dlq) return;
    const row = newRow(q, m, q.nextSeq++, now);
    ignoreTtl(row);
    row.state = 'active';
    delete row.scheduledAt;
    row.props = { ...(row.props ?? {}), DeadLetterReason: reason, DeadLetterErrorDescription: description };
    if (topicSeq !== undefined) row.topicSeq = topicSeq;
    out.push({ q: q.dlq, row, body: m.body });
  }
}
