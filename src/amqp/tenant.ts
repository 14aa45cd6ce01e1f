// Namespaces as the AMQP server sees them. One broker process can serve several isolated namespaces; a connection
// belongs to one. Service Bus tells namespaces apart by host name (`<name>.servicebus.windows.net`), and the SDK
// sends its connection string's host in the AMQP open's `hostname` even when `customEndpointAddress` points the
// socket elsewhere, so the open's first DNS label picks the namespace. A host that names none (127.0.0.1,
// localhost) leaves the choice to the first token's key name (see `TenantDirectory.byKeyName`).

import { namespaceKeys, type NamespaceKeys } from '../auth/sas.js';
import type { MessagingPort } from '../broker/messaging-port.js';
import type { SharedAccessPolicy } from '../config/types.js';

/** One namespace: its broker (as the messaging port: all the AMQP layer may call) and its keys. */
export interface Tenant {
  /** The namespace name (case kept as declared). */
  readonly name: string;
  readonly broker: MessagingPort;
  /** The keys that open it (`$cbs` tokens, SASL PLAIN). */
  readonly policies: SharedAccessPolicy[];
}

/** The keys that open `tenant`: its policies, and its queues' and topics' SAS rules (each for its own entity). */
export function tenantKeys(tenant: Tenant): NamespaceKeys {
  return namespaceKeys(tenant.policies, tenant.broker);
}

/** Finds the namespace a connection belongs to. */
export interface TenantDirectory {
  /** The first (default) namespace: what a connection uses until, and unless, something picks another. */
  readonly fallback: Tenant;
  /** The namespace whose name is the first DNS label of `host` (case-insensitive), or null. */
  byHost(host: string): Tenant | null;
  /**
   * For a connection whose host names no namespace: the namespace a token's key name selects — the default one
   * when it has that policy, else the namespace of that name (created on first use when auto namespaces are on, and
   * only when `token` verifies against the key it would have: no token, nothing created); null keeps the default
   * (the token is then checked, and refused, there).
   */
  byKeyName(keyName: string, token?: string): Tenant | null | Promise<Tenant | null>;
}

/** The first DNS label of a host name, lower case ('' for an IP address or an empty host). */
export function hostLabel(host: string | undefined): string {
  const h = (host ?? '').trim().toLowerCase();
  if (!h || h.startsWith('[') || /^[\d.]+(:\d+)?$/.test(h)) return '';
  return h.split(/[.:]/)[0] ?? '';
}

/** A directory of one namespace: every connection is served by `tenant`. */
export function singleTenant(tenant: Tenant): TenantDirectory {
  return { fallback: tenant, byHost: () => null, byKeyName: () => null };
}
