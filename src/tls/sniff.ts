// First-byte protocol sniffing, so one port can serve several protocols: every protocol a Service Bus client
// speaks opens with a byte that tells it apart. AMQP's header starts with `A` ("AMQP" + version, AMQP 1.0 §2.2),
// a TLS handshake with record type 0x16 (RFC 8446 §5.1), HTTP/1.x with the method's capital letter. Azure listens
// for TLS only on 5671 and 443; peeklock also accepts TLS on its plain port so that one connection string with a
// single port works whether or not the client insists on TLS.

import type net from 'node:net';

/** What a connection's first byte says it speaks. */
export type SniffedProtocol = 'amqp' | 'tls' | 'http' | 'unknown';

/** HTTP methods' first letters (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT, TRACE). */
const HTTP_FIRST = new Set([...'GHPDOCT'].map((c) => c.charCodeAt(0)));

/** Classifies a connection by its first byte. */
export function classifyFirstByte(byte: number): SniffedProtocol {
  if (byte === 0x41) return 'amqp'; // 'A'
  if (byte === 0x16) return 'tls';
  if (HTTP_FIRST.has(byte)) return 'http';
  return 'unknown';
}

/**
 * Waits for a socket's first bytes without consuming them: they are pushed back (`unshift`) and the socket is
 * left paused, so whoever takes it next reads the stream from its first byte (a `tls.Server`'s
 * `emit('connection', socket)` reads what is buffered; a plain reader must `resume()`). A socket that sends
 * nothing within `timeoutMs`, or closes first, is destroyed and `onProtocol` never called.
 */
export function sniffFirstByte(socket: net.Socket, timeoutMs: number, onProtocol: (protocol: SniffedProtocol) => void): void {
  const timer = setTimeout(() => {
    socket.off('data', onData);
    socket.destroy();
  }, timeoutMs);
  timer.unref();
  const onData = (chunk: Buffer): void => {
    clearTimeout(timer);
    socket.pause();
    socket.unshift(chunk);
    onProtocol(classifyFirstByte(chunk[0]!));
  };
  socket.once('data', onData);
  socket.once('close', () => clearTimeout(timer));
}
