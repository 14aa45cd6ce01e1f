// Where AMQP sockets come from: the plain TCP port, the amqps (TLS) port, and TLS arriving on the plain port
// (told apart by its first byte). A socket leaves here only once it is ready to carry AMQP bytes; what an AMQP
// connection then does is server.ts's business. Half-open handshakes and sockets still being sniffed count
// against the connection cap, so a flood of them cannot grow without bound.

import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { ConnectionLimits } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { sniffFirstByte } from '../tls/sniff.js';

/** Connections past the cap that are refused politely at once; beyond these, sockets are dropped. */
export const REFUSALS_IN_FLIGHT = 64;

/** What the listeners need from the AMQP server. */
export interface ListenerOptions {
  host: string;
  port: number;
  limits: ConnectionLimits;
  log: Logger;
  /** Hands a socket that is ready for AMQP bytes to the server (frame guard, cap, rhea). */
  accept(socket: Duplex): void;
  /** How many sockets the server is serving now. */
  served(): number;
}

/** The plain and TLS listeners of one AMQP server. */
export class AmqpListeners {
  private readonly plain: net.Server;
  private tlsServer: tls.Server | null = null;
  /** Plain-port sockets whose first byte has not arrived yet. */
  private readonly sniffing = new Set<net.Socket>();
  /** The TCP sockets under every amqps connection, from accept on (handshakes included). */
  private readonly tlsRaw = new Set<net.Socket>();

  constructor(private readonly opts: ListenerOptions) {
    this.plain = net.createServer({ noDelay: true }, (socket) => this.acceptPlainPort(socket));
  }

  /** Starts listening; resolves with the bound address (port 0 picks a free port). */
  listen(): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.plain.once('error', reject);
      this.plain.listen(this.opts.port, this.opts.host, () => {
        this.plain.off('error', reject);
        const a = this.plain.address() as net.AddressInfo;
        resolve({ host: a.address, port: a.port });
      });
    });
  }

  /**
   * Starts the amqps listener: the same AMQP server behind TLS 1.2+ (Service Bus's port 5671). A socket reaches
   * the server only once its handshake is done; a handshake must finish within `handshakeTimeoutMs`. Resolves
   * with the bound port.
   */
  listenTls(port: number, credentials: { cert: string; key: string }, handshakeTimeoutMs = 10_000): Promise<number> {
    const server = tls.createServer({ ...credentials, minVersion: 'TLSv1.2', handshakeTimeout: handshakeTimeoutMs }, (socket) => {
      socket.setNoDelay(true);
      this.opts.accept(socket);
    });
    // A failed handshake (plain AMQP on this port, a client that distrusts the certificate, a stall) costs one
    // log line and the socket; the error names the cause, never key material.
    server.on('tlsClientError', (err, socket) => {
      this.opts.log.info({ err: (err as NodeJS.ErrnoException).code ?? err.message, remote: socket.remoteAddress }, 'tls handshake failed');
      socket.destroy();
    });
    server.on('connection', (raw: net.Socket) => {
      if (this.tlsRaw.size >= this.opts.limits.maxConnections + REFUSALS_IN_FLIGHT) return void raw.destroy();
      this.tlsRaw.add(raw);
      raw.once('close', () => this.tlsRaw.delete(raw));
    });
    this.tlsServer = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.opts.host, () => {
        server.off('error', reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  }

  /** Replaces the amqps certificate for new connections (a renewed certificate file, SIGHUP). */
  setTlsCredentials(credentials: { cert: string; key: string }): void {
    this.tlsServer?.setSecureContext({ ...credentials, minVersion: 'TLSv1.2' });
  }

  /** Stops accepting; resolves once both listeners are closed (which waits for their sockets to go). */
  stop(): Promise<unknown> {
    const plain = new Promise<void>((r) => this.plain.close(() => r()));
    const tlsServer = this.tlsServer;
    const secure = tlsServer?.listening ? new Promise<void>((r) => tlsServer.close(() => r())) : Promise.resolve();
    return Promise.all([plain, secure]);
  }

  /** Drops the sockets that never became AMQP connections (handshakes and first bytes still pending). */
  destroyPending(): void {
    for (const s of this.tlsRaw) s.destroy();
    for (const s of this.sniffing) s.destroy();
  }

  // With TLS on, the plain port also takes TLS: a first byte 0x16 hands the socket to the amqps listener
  // (its handshake timeout, cap and logging), anything else is AMQP as before (sniff.ts).
  private acceptPlainPort(socket: net.Socket): void {
    const tlsServer = this.tlsServer;
    if (!tlsServer) return this.opts.accept(socket);
    socket.on('error', () => undefined);
    if (this.opts.served() + this.sniffing.size >= this.opts.limits.maxConnections + REFUSALS_IN_FLIGHT) return void socket.destroy();
    this.sniffing.add(socket);
    socket.once('close', () => this.sniffing.delete(socket));
    sniffFirstByte(socket, this.opts.limits.authTimeoutMs, (protocol) => {
      this.sniffing.delete(socket);
      if (protocol === 'tls') return void tlsServer.emit('connection', socket);
      this.opts.accept(socket);
      socket.resume();
    });
  }
}
