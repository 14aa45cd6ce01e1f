// Who may talk to the HTTP port from a browser. Any web page the developer visits can make the browser send requests
// to 127.0.0.1, including a WebSocket upgrade to `/$servicebus/websocket` (where the emulator's well-known key opens
// everything), and a page whose own name is re-pointed at 127.0.0.1 (DNS rebinding) even reads the answers. Two
// checks close both, and neither touches an SDK: SDKs send no `Origin`, and they send the host of their connection
// string as `Host`.
//
// - `Host` must be a name no attacker can point at this machine: absent (not a browser), an IP literal, a single
//   label (a container or machine name, resolved inside the network), `localhost` and `*.localhost` (RFC 6761),
//   `*.internal` (reserved for private use, e.g. host.docker.internal), or a configured name (`Broker.Host`,
//   `Broker.Tls.HostNames`, `Broker.AllowedHosts`) with its namespace subdomains (`<namespace>.<name>`, how a
//   namespace is picked by the Host's first label). Anything else is refused with 403.
// - `Origin`, when present on a WebSocket upgrade or a state-changing request (anything but GET, HEAD, OPTIONS), must
//   be the broker's own (the explorer page, same origin) or listed in `Broker.AllowedOrigins`; else 403.

import net from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { BrokerSettings } from '../config/types.js';
import { HttpError } from './http-util.js';

/** What the guard is configured from. */
export type GuardSettings = Pick<BrokerSettings, 'host' | 'tls' | 'allowedHosts' | 'allowedOrigins'>;

/** Checks `Host` and `Origin` of HTTP requests and upgrades against the configuration. */
export class RequestGuard {
  private readonly names: string[];
  private readonly origins: Set<string>;

  constructor(b: GuardSettings) {
    this.names = [b.host, ...(b.tls?.hostNames ?? []), ...(b.allowedHosts ?? [])]
      .map((n) => n.trim().toLowerCase().replace(/^\[|\]$/g, ''))
      .filter((n) => n !== '' && !net.isIP(n));
    this.origins = new Set(b.allowedOrigins ?? []);
  }

  /** Throws a 403 HttpError when `req` comes from a host name or browser origin this broker does not serve. */
  check(req: IncomingMessage, upgrade: boolean): void {
    const host = req.headers.host;
    if (host !== undefined && !this.hostAllowed(host)) {
      throw new HttpError(403, 'Forbidden', `Host '${host}' is not a name this broker serves; add it to Broker.AllowedHosts.`);
    }
    const origin = req.headers.origin;
    const changes = upgrade || !['GET', 'HEAD', 'OPTIONS'].includes(req.method ?? 'GET');
    if (origin !== undefined && changes && !this.originAllowed(origin, host)) {
      throw new HttpError(403, 'Forbidden', `Origin '${origin}' may not use this broker; add it to Broker.AllowedOrigins.`);
    }
  }

  /** True for a Host header (with or without port) no outsider can point at this machine, or a configured one. */
  hostAllowed(header: string): boolean {
    const name = hostName(header);
    if (name === null) return false;
    if (net.isIP(name)) return true;
    if (!name.includes('.') || name === 'localhost' || name.endsWith('.localhost') || name.endsWith('.internal')) return true;
    return this.names.some((n) => name === n || (name.endsWith(`.${n}`) && !name.slice(0, -n.length - 1).includes('.')));
  }

  private originAllowed(origin: string, host: string | undefined): boolean {
    const o = origin.toLowerCase();
    if (this.origins.has(o)) return true;
    // The broker's own pages (the explorer) send their own origin: same scheme-less authority as the Host.
    const m = /^https?:\/\/(.+)$/.exec(o);
    return m !== null && host !== undefined && m[1] === host.toLowerCase();
  }
}

// The host of a Host header without its port: `name`, `name:port`, `[v6]`, `[v6]:port`; null when malformed.
function hostName(header: string): string | null {
  const h = header.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](:\d{1,5})?$/.exec(h);
  if (v6) return v6[1]!;
  const m = /^([a-z0-9_.-]+)(:\d{1,5})?$/.exec(h);
  return m ? m[1]!.replace(/\.$/, '') : null;
}
