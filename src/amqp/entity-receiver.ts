// Attaching a session receiver (docs/wire-contract.md, "Session receivers"). The client names a session in
// `source.filter["com.microsoft:session-filter"]`, or sends null to take the next available one, waiting up
// to `com.microsoft:timeout` ms. The attach reply is held back until the broker grants a session; it then
// echoes the granted id in the same filter and carries `com.microsoft:locked-until-utc` as a long of .NET
// ticks. Without a session: a null source, then a detach with the error (timeout or cannot-be-locked).

import rhea, { holdAttachReply, refuseTermini, releaseAttachReply } from './rhea.js';
import type { Broker } from '../broker/broker.js';
import { BrokerError } from '../broker/errors.js';
import { toAmqpError } from './conditions.js';
import type { DeliveryLink } from './delivery-link.js';
import type { RheaSender } from './rhea-types.js';

/** The session filter's key in the source's filter map. */
export const SESSION_FILTER = 'com.microsoft:session-filter';

/** .NET ticks (100 ns since 0001-01-01) for an epoch-ms time, as an AMQP long (beyond 2^53, so 8 bytes). */
export function dotnetTicks(ms: number): unknown {
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
export function unsupportedFilter(sender: RheaSender): BrokerError | undefined {
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
export function wantsSession(sender: RheaSender): boolean {
  const filter = sender.remote.attach.source?.filter;
  return !!filter && SESSION_FILTER in filter;
}

/** Holds the attach reply back, asks the broker for a session, then answers with it or with the error. */
export function attachSessionReceiver(sender: RheaSender, link: DeliveryLink, broker: Broker, address: string): void {
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
