// The transaction coordinator endpoint (AMQP 1.0 part 4, as Service Bus speaks it; docs/wire-contract.md,
// "Transactions"):
// - a sender link whose target is a `coordinator` (capability amqp:local-transactions) is the control link;
//   a `declare` on it is answered with `declared(txn-id)`, a `discharge(txn-id, fail)` with `accepted` once the
//   commit is synced, or `rejected` with amqp:transaction:unknown-id / rollback / timeout;
// - a transfer or disposition whose state is `transactional-state(txn-id)` is staged in that transaction and
//   answered with `transactional-state(txn-id, outcome)` (stageTransfer, stageSettlement);
// - a closed coordinator link or connection rolls its transactions back.
// The wire types are in transaction-types.ts; the transactions themselves are the broker's (messaging port).

import type { MessagingPort, TxnOwner } from '../broker/messaging-port.js';
import type { IncomingMessage, Settlement } from '../broker/types.js';
import { toAmqpError } from './conditions.js';
import type { ConnState } from './connection-state.js';
import type { Endpoint } from './endpoint.js';
import { amqpMessage, type RheaDelivery, type RheaReceiver } from './rhea-types.js';
import { coordinatorAttached, isTransactionGroup } from './transaction-group.js';
import { coordinatorTarget, declared, isCoordinator, readControl, transactionalState } from './transaction-types.js';

/**
 * Who owns the transactions of a coordinator link: its connection and link name. They may span entities once the
 * coordinator's session is a transaction group (transaction-group.ts), which is known only when its entity links
 * attach, possibly after the declare: so it is read when work is staged.
 */
const ownerOf = (connection: string, receiver: RheaReceiver): TxnOwner => ({
  connection,
  link: receiver.name,
  get crossEntity() {
    return isTransactionGroup(receiver.session);
  },
});

/** The coordinator node: a client's sender to the `coordinator` target. */
export const coordinatorEndpoint: Endpoint = {
  node: 'coordinator',
  matches: (l) => l.role === 'sender' && isCoordinator(l.link),

  // No put-token precedes it (the .NET SDK sends none; Service Bus asks none): the link is admitted as it is, and
  // transactional work is staged only by links admitted with their own right (admission.ts). The reply's target is
  // a coordinator offering local transactions.
  attach(l, _address, st, env) {
    const receiver = l.link;
    coordinatorAttached(receiver.session);
    st.admission.admit(receiver);
    (receiver.local.attach as { target?: unknown }).target = coordinatorTarget();
    env.log.debug({ conn: st.id, link: receiver.name }, 'coordinator attached');
  },

  // A declare or discharge on a coordinator link.
  transfer(ctx, st, env) {
    const delivery = ctx.delivery!;
    const broker = st.tenant.broker;
    const connection = st.id;
    const reject = (err: unknown): void => delivery.update(true, amqpMessage.rejected({ error: toAmqpError(err) }).described());
    const control = readControl(ctx);
    if (control?.kind === 'declare') {
      try {
        const id = broker.declareTransaction(ownerOf(connection, ctx.receiver!));
        env.log.debug({ conn: connection, txn: id }, 'transaction declared');
        return delivery.update(true, declared(id));
      } catch (err) {
        return reject(err);
      }
    }
    if (control === undefined) {
      return delivery.update(
        true,
        amqpMessage.rejected({ error: { condition: 'amqp:decode-error', description: 'A coordinator takes declare and discharge messages only.' } }).described(),
      );
    }
    // rhea raises a disposition's event only after the whole read is parsed, so a transactional disposition sent
    // just before this discharge (Proton writes them together) is staged a tick later: discharge after it.
    const { txn, fail } = control;
    setImmediate(() => {
      void broker.dischargeTransaction(txn, connection, fail).then(() => {
        env.log.debug({ conn: connection, txn, fail }, 'transaction discharged');
        delivery.update(true, amqpMessage.accepted().described());
      }, reject);
    });
  },

  // A coordinator link closed: its open transactions roll back (AMQP 1.0 part 4; Service Bus does the same).
  detached(l, st) {
    if (st && l.role === 'sender' && isCoordinator(l.link)) st.tenant.broker.rollbackTransactions(st.id, l.link.name);
  },
};

/** Stages a transfer's messages (sent to `address`, or via it to `destination`); answers transactional-state. */
export function stageTransfer(
  delivery: RheaDelivery,
  txn: string,
  st: ConnState,
  address: string,
  msgs: IncomingMessage[],
  destination?: string,
): void {
  try {
    st.tenant.broker.stageInTransaction(txn, st.id, { kind: 'send', path: address, msgs, destination });
    delivery.update(true, transactionalState(txn, amqpMessage.accepted().described()));
  } catch (err) {
    delivery.update(true, transactionalState(txn, amqpMessage.rejected({ error: toAmqpError(err) }).described()));
  }
}

/** Stages a settlement of a delivery we sent; returns the refusal to echo inside transactional-state, if any. */
export function stageSettlement(broker: MessagingPort, txn: string, connection: string, token: string, settlement: Settlement, entityPath: string): unknown {
  try {
    broker.stageInTransaction(txn, connection, { kind: 'settle', token, settlement, entityPath });
    return undefined;
  } catch (err) {
    return amqpMessage.rejected({ error: toAmqpError(err) }).described();
  }
}

/** A connection closed: every transaction it declared rolls back. */
export function rollbackConnection(st: ConnState): void {
  st.tenant.broker.rollbackTransactions(st.id);
}
