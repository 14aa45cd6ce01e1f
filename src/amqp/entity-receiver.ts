// The entity receiver endpoint: a client's receiver on a queue, subscription or dead-letter queue, in peek-lock or
// receive-and-delete mode (docs/wire-contract.md, "Receiver links and credit"). The attach is authorised (Listen)
// before the entity is looked up; the link then gets a DeliveryLink (delivery-link.ts), the broker's consumer, which
// sends the deliveries and settles the client's dispositions.
//
// A session receiver (docs/wire-contract.md, "Session receivers") names a session in
// `source.filter["com.microsoft:session-filter"]`, or sends null to take the next available one, waiting up
// to `com.microsoft:timeout` ms. The attach reply is held back until the broker grants a session; it then
// echoes the granted id in the same filter and carries `com.microsoft:locked-until-utc` as a long of .NET
// ticks. Without a session: a null source, then a detach with the error (timeout or cannot-be-locked).

import rhea, { holdAttachReply, refuseTermini, releaseAttachReply } from './rhea.js';
import type { MessagingPort } from '../broker/messaging-port.js';
import type { AttemptHolder } from '../broker/ports.js';
import { BrokerError, requiresSessions } from '../broker/errors.js';
import { toAmqpError } from './conditions.js';
import type { ConnState } from './connection-state.js';
import { stageSettlement } from './coordinator.js';
import { DeliveryLink } from './delivery-link.js';
import { echoTermini, refuseAttach, type Endpoint, type EndpointEnv } from './endpoint.js';
import { linkState, peekLinkState } from './link-state.js';
import type { RheaContext, RheaSender } from './rhea-types.js';
import { entityLinkAttached } from './transaction-group.js';
import type { TransactionalState } from './transaction-types.js';

/** A client's receiver on an entity: whatever receiver no other node takes (the last entry of the table). */
export const entityReceiverEndpoint: Endpoint = {
  node: 'entity receiver',
  matches: (l) => l.role === 'receiver',
  attach: (l, address, st, env) => {
    if (l.role === 'receiver') attachReceiver(l.link, address, st, env);
  },
  // Every per-link record goes with its link: a connection opening a link per message session (accept-next) kept
  // every link it ever had, about 15 KB each, until the connection closed.
  detached(l, st) {
    const link = peekLinkState(l.link)?.delivery;
    link?.close();
    if (link) st?.deliveryLinks.delete(link);
    peekLinkState(l.link)?.unwatch?.();
  },
};

function attachReceiver(sender: RheaSender, address: string, st: ConnState, env: EndpointEnv): void {
  const attach = sender.remote.attach;
  if (!echoTermini(sender, st)) return;
  const mayListen = (): void => st.auth.require(address, 'Listen', st.endpoint);
  try {
    // Authorised before the entity is looked up: a client without the right learns nothing of what exists.
    mayListen();
    const source = st.tenant.broker.receiveSource(address);
    const badFilter = unsupportedFilter(sender);
    if (badFilter) throw badFilter;
    if (source.sessionful && !wantsSession(sender)) {
      throw requiresSessions(source.path);
    }
    const outsideGroup = entityLinkAttached(sender.session, address, true);
    if (outsideGroup) throw outsideGroup;
  } catch (err) {
    return refuseAttach(sender, st, err);
  }
  st.admission.admit(sender, mayListen);
  sender.local.attach.snd_settle_mode = attach.snd_settle_mode ?? 0;
  sender.local.attach.rcv_settle_mode = attach.rcv_settle_mode ?? 0;
  const link = new DeliveryLink(sender, st.tenant.broker, address, env.log, `${st.id}/${sender.name}`, () => st.admission.allows(sender), clientOf(sender, st));
  // When the Listen right lapses the link's credit figure drops to 0 before the link detaches (auth.ts).
  linkState(sender).unwatch = st.auth.watch(sender, address, 'Listen', () => link.refresh());
  linkState(sender).delivery = link;
  st.deliveryLinks.add(link);
  if (wantsSession(sender)) return attachSessionReceiver(sender, link, st.tenant.broker, address);
  // rhea writes pending transfers before attach frames; start a tick later so our attach goes first.
  setImmediate(() => link.start());
  env.log.debug({ conn: st.id, entity: address, mode: link.receiveMode, link: sender.name }, 'receiver attached');
}

// Who a receiver is, recorded on each delivery attempt (issue 39): the client's container id (its open), our
// connection id, the link name, and the SDK's receiver identifier. The JS SDK sends it as the attach property
// `com.microsoft:receiver-name`; the .NET SDK (and the JS one too) as the receiving link's target address, which
// names the receiving end (AMQP 1.0, 3.5.4). Nothing of it goes back on the wire.
function clientOf(sender: RheaSender, st: ConnState): AttemptHolder {
  const container = sender.connection.remote?.open?.container_id;
  const named = sender.remote.attach.properties?.['com.microsoft:receiver-name'];
  const target = (sender.remote.attach.target as { address?: unknown } | undefined)?.address;
  const receiver = typeof named === 'string' && named ? named : target;
  return {
    ...(typeof container === 'string' ? { container } : {}),
    connection: st.id,
    link: sender.name,
    ...(typeof receiver === 'string' ? { receiver } : {}),
  };
}

/** A disposition inside a transaction on one of our deliveries: staged, answered with transactional-state. */
export function onTransactionalOutcome(ctx: RheaContext, st: ConnState): void {
  const state = ctx.delivery?.remote_state as unknown as TransactionalState;
  const conn = st.id;
  peekLinkState(ctx.sender)?.delivery?.onTransactionalOutcome(ctx.delivery!, state, (token, s, path) =>
    stageSettlement(st.tenant.broker, state.txnId.toString('hex'), conn, token, s, path),
  );
}

/** The session filter's key in the source's filter map. */
const SESSION_FILTER = 'com.microsoft:session-filter';

/** .NET ticks (100 ns since 0001-01-01) for an epoch-ms time, as an AMQP long (beyond 2^53, so 8 bytes). */
function dotnetTicks(ms: number): unknown {
  const ticks = BigInt(ms) * 10_000n + 621_355_968_000_000_000n;
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(ticks);
  return (rhea.types as unknown as { wrap_long(v: Buffer): unknown }).wrap_long(b);
}

/**
 * The refusal of a receiver attach whose source carries a filter Service Bus does not take, or undefined. Service
 * Bus understands the session filter and JMS / Apache selector filters; any other filter type, such as the
 * non-exclusive session filter of .NET SDK 7.21 (`com.microsoft:non-exclusive-session-filter`, a feature of
 * namespaces that have it), is refused with this condition and text. The .NET SDK recognises exactly this answer
 * (amqp:not-allowed, and the text after the last quote) as "not supported here" and raises NotSupportedException.
 */
function unsupportedFilter(sender: RheaSender): BrokerError | undefined {
  const filter = sender.remote.attach.source?.filter;
  if (!filter) return undefined;
  const known = (key: string): boolean => key === SESSION_FILTER || /selector-filter/i.test(key);
  if (Object.keys(filter).every(known)) return undefined;
  return new BrokerError(
    'InvalidOperation',
    `The link '${sender.name}' contains invalid filter type. System only support Jms or Apache selector filter type.`,
  );
}

/** True when the client asks for a message session. */
function wantsSession(sender: RheaSender): boolean {
  const filter = sender.remote.attach.source?.filter;
  return !!filter && SESSION_FILTER in filter;
}

/** Holds the attach reply back, asks the broker for a session, then answers with it or with the error. */
function attachSessionReceiver(sender: RheaSender, link: DeliveryLink, broker: MessagingPort, address: string): void {
  // rhea queued our attach reply when it opened the link; take it back until a session is granted.
  holdAttachReply(sender);
  const attach = sender.remote.attach;
  const requested = attach.source?.filter?.[SESSION_FILTER];
  const timeoutProp = attach.properties?.['com.microsoft:timeout'];
  const timeoutMs = typeof timeoutProp === 'number' && timeoutProp > 0 ? timeoutProp : 60_000;
  const reply = (): void => releaseAttachReply(sender);
  broker.acceptSession(address, typeof requested === 'string' ? requested : null, timeoutMs, link).then(
    (grant) => {
      sender.set_source({ ...attach.source, filter: { [SESSION_FILTER]: grant.sessionId } });
      sender.local.attach.properties = { 'com.microsoft:locked-until-utc': dotnetTicks(grant.lockedUntil) };
      reply();
      // After our attach is written: rhea would otherwise send transfers ahead of it.
      setImmediate(() => link.start());
    },
    (err: unknown) => {
      refuseTermini(sender);
      reply();
      link.close();
      sender.close(toAmqpError(err));
    },
  );
}
