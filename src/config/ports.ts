// The ports a broker binds beside its AMQP port. Unset, each moves with the AMQP port (its default + (AMQP port −
// 5672)), so two brokers that differ only in `--port` do not collide: 5672 → HTTP 5300, amqps 5671; 5673 → 5301,
// 5670. The bound ports are in the `listening` line.

import type { BrokerSettings } from './types.js';

/** The HTTP port of the emulator (and peeklock's default, next to AMQP's 5672). */
export const DEFAULT_HTTP_PORT = 5300;
/** The AMQP port the port rules count from. */
export const DEFAULT_AMQP_PORT = 5672;
/** The amqps port of Service Bus, and peeklock's default next to AMQP's 5672. */
export const DEFAULT_TLS_PORT = 5671;

// A derived port outside 1024..65535 gives 0: any free port.
function derivedPort(base: number, amqpPort: number): number {
  const derived = base + (amqpPort - DEFAULT_AMQP_PORT);
  return derived >= 1024 && derived <= 65535 ? derived : 0;
}

/**
 * The HTTP port to bind when `HttpPort` is not set: 5300 + (port − 5672). AMQP port 0 gives 0 (any free port:
 * tests, embedding).
 */
export function effectiveHttpPort(b: Pick<BrokerSettings, 'port' | 'httpPort'>): number {
  if (b.httpPort !== undefined) return b.httpPort;
  return b.port === 0 ? 0 : derivedPort(DEFAULT_HTTP_PORT, b.port);
}

/**
 * The amqps port to bind, or -1 for none: 5671 + (port − 5672) when unset. With AMQP port 0 (tests, embedding) TLS
 * is off unless asked for: generating a CA costs a second a start.
 */
export function effectiveTlsPort(b: Pick<BrokerSettings, 'port' | 'tlsPort'>): number {
  if (b.tlsPort !== undefined) return b.tlsPort;
  return b.port === 0 ? -1 : derivedPort(DEFAULT_TLS_PORT, b.port);
}
