// AMQP over WebSockets: Service Bus's `GET /$servicebus/websocket` upgraded with subprotocol `AMQPWSB10`
// (the AMQP WebSocket binding; .NET offers `amqp`), served on the HTTP port. Each binary WebSocket message carries a piece of the
// AMQP byte stream, so the upgraded WebSocket is turned into a byte stream (ws's createWebSocketStream) and
// handed to AmqpServer.acceptStream: the same frame guard, connection cap, authentication deadline and
// per-connection limits as a TCP connection, and rhea never knows it is not a socket. rhea's own WebSocket
// wrapper (container.websocket_accept) is not used: it exposes no listeners to put the frame guard in front of.

import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, createWebSocketStream, type WebSocket } from 'ws';
import type { ConnectionLimits } from '../config/types.js';
import type { Logger } from '../log/logger.js';

/** The subprotocol of the AMQP WebSocket binding, as the JS and Python SDKs offer it. */
export const AMQP_WS_PROTOCOL = 'AMQPWSB10';

/**
 * The subprotocols Service Bus accepts, in the order it picks one: the binding's name, and `amqp`, which is what
 * the .NET SDK's AMQP library (azure-amqp, WebSocketTransportSettings) offers.
 */
export const AMQP_WS_PROTOCOLS: readonly string[] = [AMQP_WS_PROTOCOL, 'amqp'];

/** The path the Azure SDKs dial (JS without, Python with the trailing slash). */
export const AMQP_WS_PATH = /^\/\$servicebus\/websocket\/?$/i;

/** How long a closing WebSocket waits for the peer's close frame before the socket is cut. */
const CLOSE_TIMEOUT_MS = 1_000;

/** What the WebSocket endpoint needs from its surroundings. */
export interface AmqpWebSocketOptions {
  /** Hands the AMQP byte stream to the AMQP listener (AmqpServer.acceptStream). */
  accept: (stream: Duplex) => void;
  limits: ConnectionLimits;
  log: Logger;
}

/** Upgrades HTTP requests for `/$servicebus/websocket` to AMQP connections; refuses anything else. */
export class AmqpWebSocketEndpoint {
  private readonly wss: WebSocketServer;
  private readonly log: Logger;

  constructor(private readonly opts: AmqpWebSocketOptions) {
    this.log = opts.log;
    this.wss = new WebSocketServer({
      noServer: true,
      // One WebSocket message is held in memory whole before it reaches the frame guard: bound it by the
      // largest frame we accept (clients such as rhea send one frame per message).
      maxPayload: opts.limits.maxFrameSizeBytes,
      // Compression would let a small message inflate past every bound; Service Bus does not offer it either.
      perMessageDeflate: false,
      closeTimeout: CLOSE_TIMEOUT_MS,
      handleProtocols: (offered) => AMQP_WS_PROTOCOLS.find((p) => offered.has(p)) ?? false,
    } as ConstructorParameters<typeof WebSocketServer>[0]);
  }

  /**
   * Handles one HTTP upgrade request. A wrong path (404) or no AMQP subprotocol (400) is refused
   * with a plain HTTP answer before any upgrade, logged once at info, and the socket closed.
   */
  handleUpgrade(req: http.IncomingMessage, socket: net.Socket, head: Buffer): void {
    socket.on('error', () => undefined);
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (!AMQP_WS_PATH.test(path)) return this.refuse(req, socket, 404, 'Not Found', `Nothing to upgrade at ${path}; AMQP over WebSockets is at /$servicebus/websocket.`);
    const offered = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim());
    if (!AMQP_WS_PROTOCOLS.some((p) => offered.includes(p))) {
      return this.refuse(req, socket, 400, 'Bad Request', `AMQP over WebSockets needs the subprotocol ${AMQP_WS_PROTOCOLS.join(' or ')}.`);
    }
    // ws answers a malformed handshake (no key, wrong version, not GET) with its own 400 and closes the socket.
    this.wss.handleUpgrade(req, socket, head, (ws) => this.connect(ws, socket));
  }

  private connect(ws: WebSocket, socket: net.Socket): void {
    socket.setNoDelay(true);
    this.log.debug({ remote: socket.remoteAddress, tls: 'encrypted' in socket }, 'websocket connected');
    const stream = createWebSocketStream(ws);
    // The binding carries AMQP in binary messages only; a text message is a client that speaks something else.
    ws.on('message', (_data: unknown, isBinary: boolean) => {
      if (!isBinary) ws.close(1003, 'AMQP over WebSockets takes binary messages only.');
    });
    ws.on('error', (err: Error) => this.log.info({ reason: err.message, remote: socket.remoteAddress }, 'websocket connection refused'));
    // The stream emits 'close' only once it is destroyed; the AMQP listener releases the connection on
    // 'close', so destroy it when the WebSocket has gone, after rhea has had a turn to read the end.
    ws.once('close', () => {
      const t = setTimeout(() => stream.destroy(), CLOSE_TIMEOUT_MS);
      t.unref();
      stream.once('close', () => clearTimeout(t));
    });
    this.opts.accept(stream);
  }

  private refuse(req: http.IncomingMessage, socket: net.Socket, status: number, reason: string, text: string): void {
    this.log.info({ path: req.url, protocol: req.headers['sec-websocket-protocol'], status, remote: socket.remoteAddress }, 'websocket upgrade refused');
    const body = `${text}\n`;
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    setTimeout(() => socket.destroy(), CLOSE_TIMEOUT_MS).unref();
  }
}
