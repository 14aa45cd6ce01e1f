// A client's send to an entity, once the admission rule let its transfer through (admission.ts): the size
// check, the decode (a batch's inner messages included), then the store — or staging in a transaction, or
// send-via — and the outcome on the delivery: accepted once durable, rejected with the broker's error
// (docs/wire-contract.md, "Sender links").

import { messageTooLarge } from '../broker/errors.js';
import type { Faults } from '../broker/runtime/faults.js';
import type { Logger } from '../log/logger.js';
import type { ConnState } from './cbs.js';
import { splitTransfer, parseIncoming, BATCH_FORMAT } from './codec.js';
import { toAmqpError } from './conditions.js';
import { transferTxn, type CoordinatorEndpoint } from './coordinator.js';
import { peekLinkState } from './link-state.js';
import { RAW, amqpMessage, type RheaContext } from './rhea-types.js';

/** What a send needs beside its connection: the namespace's coordinator, injected faults, the log. */
export interface SendDeps {
  coordinator: CoordinatorEndpoint;
  faults: Faults | undefined;
  log: Logger;
}

/** Stores (or stages) the message(s) of one transfer to `address` and settles the delivery with the outcome. */
export function receiveSend(ctx: RheaContext, address: string, st: ConnState, deps: SendDeps): void {
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
    // A format-0 transfer was decoded by rhea already; a batch's inner messages are decoded here.
    const decoded = Buffer.isBuffer(ctx.message) ? undefined : ctx.message;
    msgs =
      format === BATCH_FORMAT
        ? splitTransfer(payload, BATCH_FORMAT).map((m) => parseIncoming(m))
        : [parseIncoming(payload, (ctx.message as { [RAW]?: Buffer })[RAW] ? decoded : undefined)];
  } catch (err) {
    deps.log.debug({ err: String(err), entity: address }, 'undecodable message');
    return delivery.update(
      true,
      amqpMessage.rejected({ error: { condition: 'amqp:decode-error', description: 'The message could not be decoded.' } }).described(),
    );
  }
  const accept = (): void => delivery.update(true, amqpMessage.accepted().described());
  const txn = transferTxn(delivery);
  const via = peekLinkState(ctx.receiver)?.via;
  if (txn !== undefined) return deps.coordinator.stageSend(delivery, txn, st.id, address, msgs, via);
  const store = (): Promise<unknown> => (via !== undefined ? broker.transactions.sendVia(address, via, msgs) : broker.send(address, msgs));
  const faults = deps.faults;
  void (faults ? faults.beforeSend(address).then(store) : store()).then(accept, reject);
}
