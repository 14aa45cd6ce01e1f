// A broker that other machines can reach must not keep the Service Bus emulator's well-known key: anyone who has read
// the emulator's documentation holds it. Told once, loudly, at start.

import net from 'node:net';
import { DEFAULT_BROKER } from '../config/defaults.js';
import type { PeeklockConfig } from '../config/types.js';

/** The emulator's documented key (`SharedAccessKey=SAS_KEY_VALUE`), the default of `Broker.SharedAccessPolicies`. */
const WELL_KNOWN_KEY = DEFAULT_BROKER.policies[0]!.key;

/** True when `host` (Broker.Host) binds only the loopback interface. */
export function isLoopbackBind(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h === '::1') return true;
  return net.isIPv4(h) && h.startsWith('127.');
}

/** A warning line when the broker listens beyond loopback and some namespace still opens with the well-known key. */
export function defaultKeyWarning(config: PeeklockConfig): string | null {
  if (isLoopbackBind(config.broker.host)) return null;
  const policies = [...config.broker.policies, ...(config.namespaces ?? []).flatMap((ns) => ns.policies ?? [])];
  const weak = policies.filter((p) => p.key === WELL_KNOWN_KEY).map((p) => p.name);
  if (!weak.length) return null;
  return (
    `Broker.Host ${config.broker.host} is reachable from other machines, and the policy ${[...new Set(weak)].join(', ')} ` +
    "still has the emulator's well-known default key (Broker.SharedAccessPolicies' default): anyone on the network can use it. " +
    'Set your own keys in SharedAccessPolicies, or bind 127.0.0.1.'
  );
}
