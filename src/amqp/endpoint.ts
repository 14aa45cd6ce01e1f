// The shape every node a client attaches to shares (rhea and aedes likewise keep one module per endpoint): an entity
// sender (entity-sender.ts), an entity receiver (entity-receiver.ts), `$management` (management-link.ts), `$cbs`
// (cbs.ts) and the transaction coordinator (coordinator.ts). The server (server.ts) keeps connections and, in one
// table, routes each attach to the first endpoint that matches it; that endpoint then serves the link's transfers
// and its detach. Also the two attach answers every endpoint gives alike: the echoed termini and the refusal
// (docs/wire-contract.md, "Attach errors"), and the acceptance of a request that a reply will answer.

import type { Faults } from '../broker/runtime/faults.js';
import type { Logger } from '../log/logger.js';
import { toAmqpError } from './conditions.js';
import type { ConnState } from './connection-state.js';
import { processNow, refuseTermini } from './rhea.js';
import { amqpMessage, type RheaContext, type RheaLink, type RheaReceiver, type RheaSender } from './rhea-types.js';
import type { TenantDirectory } from './tenant.js';

/**
 * A link as the client attaches it: its sender (rhea hands us the receiving end) or its receiver (our sending
 * end). The role tells which, so an endpoint serving both sides of a node reads the right link type.
 */
export type ClientLink = { role: 'sender'; link: RheaReceiver } | { role: 'receiver'; link: RheaSender };

/** What the server lends every endpoint: the log, injected faults and the namespaces (for `$cbs` tokens). */
export interface EndpointEnv {
  readonly log: Logger;
  /** Injected faults, asked before each send and `$management` request; absent = none. */
  readonly faults: Faults | undefined;
  readonly tenants: TenantDirectory;
}

/** One kind of node a client attaches to. */
export interface Endpoint {
  /** The node kind, for logs. */
  readonly node: string;
  /** True when this endpoint serves `link`, addressed to (a sender's target) or from (a receiver's source) `address`. */
  matches(link: ClientLink, address: string): boolean;
  /** Answers the attach: admits the link (admission.ts), sets the reply's fields, or refuses it. */
  attach(link: ClientLink, address: string, st: ConnState, env: EndpointEnv): void;
  /** A transfer on a client sender this endpoint took, once the admission rule let it through; it settles it. */
  transfer?(ctx: RheaContext, st: ConnState, env: EndpointEnv): void;
  /** One of its links closed: what the endpoint keeps for it goes with it (`st` is gone when the connection is). */
  detached?(link: ClientLink, st: ConnState | undefined): void;
}

/**
 * The attach reply echoes the client's source and target (uamqp detaches otherwise). A terminus rhea cannot
 * re-encode (a malformed attach) refuses the link with amqp:invalid-field instead of failing the connection.
 * False when the link was refused.
 */
export function echoTermini(link: RheaLink, st: ConnState): boolean {
  const attach = link.remote.attach;
  const echo = (source: unknown, target: unknown): boolean => {
    try {
      link.set_source(source);
      link.set_target(target);
      return true;
    } catch {
      return false;
    }
  };
  if (echo(attach.source ?? {}, attach.target ?? {})) return true;
  // Fields rhea cannot re-encode: echo the addresses alone, as a plain client would have sent them.
  if (echo({ address: attach.source?.address }, { address: attach.target?.address })) return true;
  refuseTermini(link);
  const error = { condition: 'amqp:invalid-field', description: 'The attach source or target is malformed.' };
  st.admission.refused(link, error);
  link.close(error);
  return false;
}

/**
 * Refuses an attach: the reply carries null source and target, then a detach with the error (docs/wire-contract.md,
 * "Attach errors"). A missing entity is named by its full address on the host the client connected to, as Service
 * Bus names it. The link's frames after the refusal get the same error and never reach the node (admission.ts).
 */
export function refuseAttach(link: RheaLink, st: ConnState, err: unknown): void {
  const error = toAmqpError(err, st.host);
  st.admission.refused(link, error);
  refuseTermini(link);
  link.close(error);
}

/**
 * Accepts a `$cbs` or `$management` request and writes its disposition at once, so that it reaches the client
 * before the reply (docs/wire-contract.md, "Request and reply order"). rhea writes a session's transfers before its
 * dispositions in one pass, and uamqp (the Python SDK 7.x), whose request and reply links share a session, cancels a
 * request whose reply comes first; the disposition that follows then lands in freed memory and crashes it.
 */
export function acceptRequest(ctx: RheaContext): void {
  ctx.delivery!.update(true, amqpMessage.accepted().described());
  processNow(ctx.connection);
}
