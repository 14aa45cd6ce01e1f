// One connection dispatcher behind every port the broker binds (AMQP 5672, amqps 5671, HTTP 5300, the optional
// HTTPS port). Each client dials the port its SDK derives from the connection string and speaks what that SDK
// speaks there: the JS 7.9.5 and Python 7.8.2 administration clients send HTTPS to the port named in `Endpoint`
// (often the AMQP port), .NET and JS 7.10 send plain HTTP there, the data-plane SDKs send AMQP, TLS or a
// WebSocket upgrade. So every port looks at the first byte (sniff.ts): `A` → AMQP, 0x16 → TLS, then the first
// decrypted byte decides again (`A` → AMQP, an HTTP method letter → the HTTP server, which also upgrades
// `/$servicebus/websocket` for wss), an HTTP method letter → plain HTTP. Service Bus itself serves amqps on 5671
// and HTTPS + wss on 443; peeklock serves every protocol on every port so a single connection string works.
//
// Sockets still being sniffed or in a TLS handshake count against the connection cap (as do HTTP sockets until they
// close, see HttpServer.accept), get the handshake/auth
// deadline, and a failed handshake costs one log line (the error code, never key material) and the socket.

import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { REFUSALS_IN_FLIGHT } from '../amqp/server.js';
import type { ConnectionLimits } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { sniffFirstByte, type SniffedProtocol } from '../tls/sniff.js';

/** How one listening port treats a connection. */
export interface PortRole {
  /** A name for the logs (`amqp`, `amqps`, `http`, `https`). */
  name: string;
  /** Only TLS is accepted (the amqps and HTTPS ports); plain bytes fail the handshake. */
  tlsOnly?: boolean;
  /** Where a first byte that names no protocol goes: the AMQP port's frame guard or the HTTP server's 400. */
  fallback: 'amqp' | 'http';
}

/** What the dispatcher hands sockets to. */
export interface DispatcherOptions {
  host: string;
  limits: ConnectionLimits;
  log: Logger;
  /** The AMQP server's accept (frame guard, cap, rhea). */
  amqp(stream: Duplex): void;
  /** The HTTP server's accept (admin API, health, metrics, explorer, WebSocket upgrades). */
  http(socket: net.Socket): void;
  /** How many connections are being served now, AMQP and HTTP (for the cap). */
  served(): number;
  /** The certificate TLS connections get, or null when TLS is off (`Broker.TlsPort` -1). */
  credentials: { cert: string; key: string } | null;
  /** A TLS handshake must finish within this. */
  handshakeTimeoutMs: number;
}

/** The listening ports and the sniff → TLS → sniff path they share. */
export class ConnectionDispatcher {
  private readonly servers: net.Server[] = [];
  private readonly tlsServer: tls.Server | null = null;
  /** Sockets not yet handed on (first byte pending, TLS handshake in progress, first decrypted byte pending), with their port's role. */
  private readonly pending = new Map<net.Socket, PortRole>();
  private stopping = false;

  constructor(private readonly opts: DispatcherOptions) {
    if (!opts.credentials) return;
    // Not listening itself: sockets are emitted into it. TLS 1.2+ as Service Bus requires.
    const server = tls.createServer(
      { ...opts.credentials, minVersion: 'TLSv1.2', handshakeTimeout: opts.handshakeTimeoutMs },
      (socket) => this.afterHandshake(socket),
    );
    server.on('tlsClientError', (err, socket) => {
      this.opts.log.info({ err: (err as NodeJS.ErrnoException).code ?? err.message, remote: socket.remoteAddress }, 'tls handshake failed');
      socket.destroy();
    });
    this.tlsServer = server;
  }

  /** Binds a port with the given role; resolves with the bound address (port 0 picks a free port). */
  listen(port: number, role: PortRole): Promise<{ host: string; port: number }> {
    const server = net.createServer({ noDelay: true }, (socket) => this.dispatch(socket, role));
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.opts.host, () => {
        server.off('error', reject);
        const a = server.address() as net.AddressInfo;
        resolve({ host: a.address, port: a.port });
      });
    });
  }

  /** Replaces the TLS certificate for new connections on every port (a renewed certificate file, SIGHUP). */
  setTlsCredentials(credentials: { cert: string; key: string }): void {
    this.tlsServer?.setSecureContext({ ...credentials, minVersion: 'TLSv1.2' });
  }

  /**
   * Stops accepting and drops the sockets never handed on; resolves once every port is closed, which waits for
   * the sockets the AMQP and HTTP servers still hold (they close their own).
   */
  stop(): Promise<unknown> {
    this.stopping = true;
    const closed = this.servers.map((s) => (s.listening ? new Promise<void>((r) => s.close(() => r())) : Promise.resolve()));
    for (const s of this.pending.keys()) s.destroy();
    return Promise.all(closed);
  }

  private dispatch(socket: net.Socket, role: PortRole): void {
    socket.on('error', () => undefined);
    if (this.stopping || this.opts.served() + this.pending.size >= this.opts.limits.maxConnections + REFUSALS_IN_FLIGHT) {
      return void socket.destroy();
    }
    this.pending.set(socket, role);
    socket.once('close', () => this.pending.delete(socket));
    if (role.tlsOnly) return this.startTls(socket, role);
    sniffFirstByte(socket, this.opts.limits.authTimeoutMs, (protocol) => {
      if (protocol === 'tls') return this.startTls(socket, role);
      this.handOn(socket, socket, protocol, role);
    });
  }

  // A TLS record on a broker without TLS is refused at once rather than left to time out in a parser.
  private startTls(socket: net.Socket, role: PortRole): void {
    if (!this.tlsServer) {
      this.opts.log.info({ port: role.name, remote: socket.remoteAddress }, 'tls refused: TLS is off (Broker.TlsPort -1)');
      return void socket.destroy();
    }
    this.tlsServer.emit('connection', socket);
  }

  // The decrypted stream is sniffed again: AMQP over TLS (amqps) or HTTP over TLS (HTTPS, wss).
  private afterHandshake(secure: tls.TLSSocket): void {
    // The TCP socket under the TLS one (Node keeps it as `_parent`): its pending entry ends when this one is handed on.
    const raw = (secure as unknown as { _parent?: net.Socket })._parent;
    const role = (raw && this.pending.get(raw)) || { name: 'tls', fallback: 'amqp' as const };
    secure.on('error', () => undefined);
    secure.setNoDelay(true);
    if (this.stopping) return void secure.destroy();
    sniffFirstByte(secure, this.opts.limits.authTimeoutMs, (protocol) => {
      if (protocol === 'tls') {
        this.opts.log.info({ remote: secure.remoteAddress }, 'tls inside tls refused');
        return void secure.destroy();
      }
      this.handOn(secure, raw ?? secure, protocol, role);
    });
  }

  private handOn(stream: net.Socket, raw: net.Socket, protocol: SniffedProtocol, role: PortRole): void {
    this.pending.delete(raw);
    if (this.stopping) return void stream.destroy();
    const to = protocol === 'amqp' ? 'amqp' : protocol === 'http' ? 'http' : role.fallback;
    this.opts.log.debug({ port: role.name, protocol: to, tls: stream !== raw, remote: raw.remoteAddress }, 'connection dispatched');
    if (to === 'amqp') {
      this.opts.amqp(stream);
      stream.resume();
    } else {
      // The HTTP server reads what is buffered and resumes the socket itself.
      this.opts.http(stream);
    }
  }
}
