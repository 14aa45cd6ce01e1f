// The `$management` endpoint of an entity (docs/wire-contract.md, "$management"): a client's sender to
// `<entity>/$management` carries requests, its receiver from there takes the replies. A request, once the admission
// rule let its transfer through (admission.ts), is accepted at once, authorised by the right its operation needs,
// run (in a transaction when its transfer carried transactional-state; management.ts has the operations), and
// answered on the reply link named by its reply-to.

import type { TxnOp } from '../broker/messaging-port.js';
import type { Faults } from '../broker/runtime/faults.js';
import type { Logger } from '../log/logger.js';
import { entityAddress } from './address.js';
import { rightForOperation } from './auth.js';
import type { ConnState } from './connection-state.js';
import { acceptRequest, echoTermini, refuseAttach, type Endpoint } from './endpoint.js';
import { handleManagement } from './management.js';
import { replyProperties } from './management-reply.js';
import { echoRequestSettleMode } from './rhea.js';
import type { RheaContext, RheaMessage } from './rhea-types.js';
import { transferTxn } from './transaction-types.js';

const MANAGEMENT_SUFFIX = /\/\$management$/i;

/** The `$management` node of every entity: request and reply links, each request authorised by its operation. */
export const managementEndpoint: Endpoint = {
  node: '$management',
  matches: (_l, address) => MANAGEMENT_SUFFIX.test(address),

  attach(l, address, st) {
    if (!echoTermini(l.link, st)) return;
    echoRequestSettleMode(l.link);
    if (l.role === 'receiver') {
      // Replies are addressed by the request's reply-to: the link's name, or its target address.
      st.replyLinks.set(l.link.name, l.link);
      const target = l.link.remote.attach.target?.address;
      if (target) st.replyLinks.set(target, l.link);
      return st.admission.admit(l.link);
    }
    // Each request is authorised by its node. Before its first token a connection may not know its namespace yet,
    // and an entity's existence is shown only to a claim that covers it.
    const entity = address.replace(MANAGEMENT_SUFFIX, '');
    if (st.bound && st.auth.covers(entity)) {
      try {
        st.tenant.broker.checkEntity(entity);
      } catch (err) {
        return refuseAttach(l.link, st, err);
      }
    }
    st.admission.admit(l.link);
  },

  transfer(ctx, st, env) {
    const address = entityAddress(ctx.receiver!.remote.attach.target?.address ?? '');
    serveManagement(ctx, address.replace(MANAGEMENT_SUFFIX, ''), st, env.log, env.faults);
  },

  // The reply link's records go with it (a connection may open many over its life).
  detached(l, st) {
    if (!st || l.role !== 'receiver') return;
    for (const [key, reply] of st.replyLinks) if (reply === l.link) st.replyLinks.delete(key);
  },
};

/** Serves one `$management` request for `entity` on connection `st` and sends the reply. */
export function serveManagement(ctx: RheaContext, entity: string, st: ConnState, log: Logger, faults: Faults | undefined): void {
  const req = ctx.message as RheaMessage;
  acceptRequest(ctx);
  const authorize = (operation: string): void => st.auth.require(`${entity}/$management`, rightForOperation(operation), st.endpoint);
  // A request whose transfer carried transactional-state works in that transaction (coordinator.ts).
  const txn = transferTxn(ctx.delivery);
  const stage = txn === undefined ? undefined : (op: TxnOp): void => st.tenant.broker.stageInTransaction(txn, st.id, op);
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
