// The entity sender endpoint: a client's sender to a queue or topic (docs/wire-contract.md, "Sender links"). The
// attach is authorised (Send, on the target and on a send-via destination) before the entity is looked up, and
// answered with the broker's size limits. Each transfer, once the admission rule let it through (admission.ts),
// is size-checked, decoded (a batch's inner messages included), then stored — or staged in a transaction, or sent
// via — and settled with the outcome: accepted once durable, rejected with the broker's error.

import { messageTooLarge } from '../broker/errors.js';
import { entityAddress } from './address.js';
import { splitTransfer, parseIncoming, BATCH_FORMAT } from './codec.js';
import { toAmqpError } from './conditions.js';
import type { ConnState } from './connection-state.js';
import { stageTransfer } from './coordinator.js';
import { refuseAttach, echoTermini, type Endpoint, type EndpointEnv } from './endpoint.js';
import { linkState, peekLinkState } from './link-state.js';
import { transfersAsBytes } from './raw-transfers.js';
import rhea from './rhea.js';
import { RAW, amqpMessage, type RheaContext, type RheaReceiver } from './rhea-types.js';
import { entityLinkAttached, transferEntity } from './transaction-group.js';
import { badDestination, transferTxn, TRANSFER_DESTINATION } from './transaction-types.js';

/** Sender attach property: the largest batch transfer (a long), which the .NET SDK sizes ServiceBusMessageBatch by. */
const MAX_BATCH_SIZE = 'com.microsoft:max-message-batch-size';

/** A client's sender to an entity: whatever sender no other node takes (the last sender entry of the table). */
export const entitySenderEndpoint: Endpoint = {
  node: 'entity sender',
  matches: (l) => l.role === 'sender',
  attach: (l, address, st, env) => {
    if (l.role === 'sender') attachSender(l.link, address, st, env);
  },
  transfer: (ctx, st, env) => receiveSend(ctx, entityAddress(ctx.receiver!.remote.attach.target?.address ?? ''), st, env),
  detached: (l) => peekLinkState(l.link)?.unwatch?.(),
};

function attachSender(receiver: RheaReceiver, address: string, st: ConnState, env: EndpointEnv): void {
  if (!echoTermini(receiver, st)) return;
  const broker = st.tenant.broker;
  // Send-via: the link's target is the via entity, the destination an attach property; both need Send
  // (Service Bus protocol guide, "Send-via functionality").
  const via = (receiver.remote.attach as { properties?: Record<string, unknown> }).properties?.[TRANSFER_DESTINATION];
  const destination = typeof via === 'string' && via ? entityAddress(via) : undefined;
  const maySend = (): void => {
    st.auth.require(address, 'Send', st.endpoint);
    if (destination !== undefined) st.auth.require(destination, 'Send', st.endpoint);
  };
  try {
    if (via !== undefined && destination === undefined) throw badDestination();
    // Authorised before the entity is looked up: a client without the right learns nothing of what exists.
    maySend();
    // The via entity may be a queue or a subscription (the entity a transaction receives from).
    if (via === undefined) broker.checkSendTarget(address);
    else broker.checkSendVia(address);
    if (destination !== undefined) {
      linkState(receiver).via = destination;
      (receiver.local.attach as { properties?: unknown }).properties = { [TRANSFER_DESTINATION]: via };
    }
    entityLinkAttached(receiver.session, address, false);
    if (destination === undefined) transferThrough(receiver, address, st);
  } catch (err) {
    return refuseAttach(receiver, st, err);
  }
  st.admission.admit(receiver, maySend);
  // Its transfers are read from their bytes alone (parseIncoming's one pass): rhea need not decode them first.
  transfersAsBytes(receiver);
  // Watched until the link closes, so a closed link is not kept until its connection closes.
  linkState(receiver).unwatch = st.auth.watch(receiver, address, 'Send');
  // Without a positive max-message-size the SDK refuses every array send (docs/wire-contract.md, "Sender links").
  receiver.local.attach.max_message_size = broker.maxMessageSize;
  // The .NET SDK sizes a ServiceBusMessageBatch by this long, as Service Bus announces it.
  // (rhea's attach getter returns a copy: assign the whole map.)
  receiver.local.attach.properties = { ...receiver.local.attach.properties, [MAX_BATCH_SIZE]: rhea.types.wrap_long(broker.maxBatchSize) };
  env.log.debug({ conn: st.id, entity: address, link: receiver.name }, 'sender attached');
}

// A sender in a transaction group to another entity than the group's send-via entity: its transactional sends go
// through that entity's transfer queue (transaction-group.ts). An entity that cannot be a transfer entity (a topic,
// which holds no transfer dead-letter queue here) leaves the sender sending directly (docs/fidelity.md, section 6).
function transferThrough(receiver: RheaReceiver, address: string, st: ConnState): void {
  const through = transferEntity(receiver.session, address);
  if (through === undefined) return;
  try {
    st.tenant.broker.checkSendVia(through);
  } catch {
    return;
  }
  linkState(receiver).transferVia = through;
}

/** Stores (or stages) the message(s) of one transfer to `address` and settles the delivery with the outcome. */
function receiveSend(ctx: RheaContext, address: string, st: ConnState, deps: EndpointEnv): void {
  const delivery = ctx.delivery!;
  const broker = st.tenant.broker;
  const host = st.host;
  const reject = (err: unknown): void => delivery.update(true, amqpMessage.rejected({ error: toAmqpError(err, host) }).described());
  let payload: Buffer;
  const format = ctx.format ?? delivery.format ?? 0;
  if (Buffer.isBuffer(ctx.message)) payload = ctx.message;
  else payload = (ctx.message as { [RAW]?: Buffer })[RAW] ?? amqpMessage.encode(ctx.message);
  // The SDK does not check a single message's size itself (docs/wire-contract.md, "Sender links"); nothing is stored, the link stays up.
  const limit = format === BATCH_FORMAT ? broker.maxBatchSize : broker.maxMessageSize;
  if (payload.length > limit) return reject(messageTooLarge(payload.length, limit));
  let msgs;
  try {
    // rhea left the transfer undecoded (transfersAsBytes): each message is read once, here, from its bytes.
    msgs = format === BATCH_FORMAT ? splitTransfer(payload, BATCH_FORMAT).map((m) => parseIncoming(m)) : [parseIncoming(payload)];
  } catch (err) {
    deps.log.debug({ err: String(err), entity: address }, 'undecodable message');
    return delivery.update(
      true,
      amqpMessage.rejected({ error: { condition: 'amqp:decode-error', description: 'The message could not be decoded.' } }).described(),
    );
  }
  const accept = (): void => delivery.update(true, amqpMessage.accepted().described());
  const txn = transferTxn(delivery);
  const ls = peekLinkState(ctx.receiver);
  const via = ls?.via;
  if (txn !== undefined) {
    // A transaction group's sender to another entity stages a send-via through the group's send-via entity.
    const through = via === undefined ? ls?.transferVia : undefined;
    return through === undefined ? stageTransfer(delivery, txn, st, address, msgs, via) : stageTransfer(delivery, txn, st, through, msgs, address);
  }
  const store = (): Promise<unknown> => (via !== undefined ? broker.sendVia(address, via, msgs) : broker.send(address, msgs));
  const faults = deps.faults;
  void (faults ? faults.beforeSend(address).then(store) : store()).then(accept, reject);
}
