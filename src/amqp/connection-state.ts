// What the server remembers about one connection: its namespace (and so the broker, through the messaging port,
// that every endpoint works with), its proof of identity, its admission rule and the per-link records the endpoints
// keep (delivery links, reply links of `$cbs` and `$management`). One per rhea connection, dropped with it.

import type { Admission } from './admission.js';
import type { ConnectionAuth } from './auth.js';
import type { DeliveryLink } from './delivery-link.js';
import type { RheaSender } from './rhea-types.js';
import { hostLabel, type Tenant, type TenantDirectory } from './tenant.js';

/** Per-connection state: its namespace, the links to clean up and the reply links of `$cbs` / `$management`. */
export interface ConnState {
  id: string;
  /** The namespace this connection works in (its `broker` is the messaging port every endpoint calls). */
  tenant: Tenant;
  /** True once the namespace is settled: named by the host, or chosen by the first token or login. */
  bound: boolean;
  deliveryLinks: Set<DeliveryLink>;
  /** Reply links by name and by target address (the client's reply-to). */
  replyLinks: Map<string, RheaSender>;
  cbsLinks: RheaSender[];
  auth: ConnectionAuth;
  /** The admission rule of the connection's links (admission.ts). */
  admission: Admission;
  /** The hostname of the client's AMQP open (the SDK sends its connection string's host), for error texts. */
  host: string;
  /** `sb://<host>/` as the client addressed us, for error texts. */
  endpoint: string;
}

/** The namespace a connection's open hostname names; unbound (the default, for now) when it names none. */
export function tenantForHost(tenants: TenantDirectory, host: string): { tenant: Tenant; bound: boolean } {
  const named = hostLabel(host) ? tenants.byHost(host) : null;
  return named ? { tenant: named, bound: true } : { tenant: tenants.fallback, bound: false };
}
