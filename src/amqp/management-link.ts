// A request on a `$management` node, once the admission rule let its transfer through (admission.ts): accepted at
// once, authorised by the right its operation needs, run (in a transaction when its transfer carried
// transactional-state), and answered on the reply link named by its reply-to (docs/wire-contract.md, "$management").

import type { Faults } from '../broker/runtime/faults.js';
import type { TxnOp } from '../broker/messaging/transactions.js';
import type { Logger } from '../log/logger.js';
import { rightForOperation } from './auth.js';
import type { ConnState } from './cbs.js';
import { transferTxn } from './coordinator.js';
import { handleManagement } from './management.js';
import { replyProperties } from './management-reply.js';
import { amqpMessage, type RheaContext, type RheaMessage } from './rhea-types.js';

/** Serves one `$management` request for `entity` on connection `st` and sends the reply. */
export function serveManagement(ctx: RheaContext, entity: string, st: ConnState, log: Logger, faults: Faults | undefined): void {
  const req = ctx.message as RheaMessage;
  ctx.delivery!.update(true, amqpMessage.accepted().described());
  const authorize = (operation: string): void => st.auth.require(`${entity}/$management`, rightForOperation(operation), st.endpoint);
  // A request whose transfer carried transactional-state works in that transaction (coordinator.ts).
  const txn = transferTxn(ctx.delivery);
  const stage = txn === undefined ? undefined : (op: TxnOp): void => st.tenant.broker.transactions.stage(txn, st.id, op);
  const run = (): ReturnType<typeof handleManagement> => handleManagement(st.tenant.broker, entity, req, log, authorize, stage);
  const handled = faults ? faults.beforeManagement().then(run) : run();
  void handled.then((reply) => {
    const out = req.reply_to ? st.replyLinks.get(req.reply_to) : undefined;
    if (!out || !out.is_open()) return;
    out.send({
      correlation_id: req.message_id,
      to: req.reply_to,
      application_properties: replyProperties(reply),
      body: reply.body ?? null,
    });
  });
}
