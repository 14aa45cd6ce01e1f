// Cross-entity transactions as Service Bus runs them (the .NET SDK's EnableCrossEntityTransactions; Service Bus
// "Transfers and Send Via"): the client puts every link on one AMQP session and attaches the transaction coordinator
// on it before any other link, "to let the service know that there will be cross entity transactions on this
// session". On such a session:
// - the first entity a link attaches to is the send-via entity of the session;
// - senders to other entities may join (their sends are routed through the send-via entity), so a transaction
//   declared there may work on several entities;
// - a sender to another entity sends through the send-via entity: in a transaction, its messages go to that
//   entity's transfer queue and are forwarded on commit, and a destination that refuses one leaves it in the send-via
//   entity's transfer dead-letter queue (Service Bus "Transfers and Send Via": the transfer entity "immediately moves
//   the message to the intended destination using the same robust transfer implementation that the autoforward
//   capability relies on");
// - a receiver on another entity is refused with amqp:not-allowed (the SDK's InvalidOperationException): a receive
//   cannot be routed through a different entity.
// A session whose coordinator comes after an entity link is an ordinary session (one entity per transaction).

import { BrokerError } from '../broker/errors.js';
import { entityKey } from '../broker/messaging-port.js';

interface SessionRecord {
  /** An entity link was attached on the session (before any coordinator, the session is not a group). */
  sawEntity: boolean;
  /** The coordinator attached before any entity link: a transaction group. */
  group: boolean;
  /** The group's send-via entity: the first entity a link attached to (entity key). */
  via?: string;
}

const sessions = new WeakMap<object, SessionRecord>();

function record(session: object): SessionRecord {
  let r = sessions.get(session);
  if (!r) sessions.set(session, (r = { sawEntity: false, group: false }));
  return r;
}

/** A coordinator attached on `session`: before any entity link, the session becomes a transaction group. */
export function coordinatorAttached(session: object): void {
  const r = record(session);
  if (!r.sawEntity) r.group = true;
}

/**
 * True when transactions declared on `session` may span entities: the coordinator came first and entity links
 * followed on the same session. A coordinator alone on its session (the SDK's default, without cross-entity
 * transactions) is no group: its transactions keep to one entity.
 */
export function isTransactionGroup(session: object): boolean {
  const r = sessions.get(session);
  return r?.group === true && r.via !== undefined;
}

/**
 * An entity link attaches on `session` (`receives`: a receiver). Returns the refusal when the session is a
 * transaction group whose send-via entity is another entity and the link receives; records the send-via entity
 * when this is the group's first entity link.
 */
export function entityLinkAttached(session: object, address: string, receives: boolean): BrokerError | undefined {
  const r = record(session);
  r.sawEntity = true;
  if (!r.group) return undefined;
  const entity = entityKey(address);
  if (r.via === undefined) {
    r.via = entity;
    return undefined;
  }
  if (!receives || entity === r.via) return undefined;
  return new BrokerError(
    'InvalidOperation',
    `A receive from '${entity}' cannot join this session's cross-entity transactions: its send-via entity is '${r.via}', the first entity it used, and a receive cannot be routed through another entity. Receive from '${r.via}' first, or use a client without cross-entity transactions.`,
  );
}

/**
 * The entity a sender to `address` on `session` sends through: the group's send-via entity when `session` is a
 * transaction group whose send-via entity is another entity; undefined otherwise (the sender sends directly).
 */
export function transferEntity(session: object, address: string): string | undefined {
  const r = sessions.get(session);
  if (r?.group !== true || r.via === undefined || r.via === entityKey(address)) return undefined;
  return r.via;
}
