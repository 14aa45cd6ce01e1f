// Installs the frame guard (frame-guard.ts) on an accepted socket in front of rhea, and owns what the byte
// parser cannot do alone: closing the connection or one link through rhea, marking deliveries rhea is to
// discard (rhea-patches.ts), the authentication deadline, and the polite refusal over the connection cap.

import type { Duplex } from 'node:stream';
import type { ConnectionLimits } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { FrameGuard, SASL_HEADER } from './frame-guard.js';
import { DISCARD, linkKey as key, type RheaConnection } from './rhea-types.js';
import { processNow, remoteLink, saslComplete } from './rhea.js';

/** Time a peer gets to read our close before the socket is destroyed. */
const CLOSE_GRACE_MS = 300;

/** Options for {@link installFrameGuard}. */
export interface GuardOptions {
  limits: ConnectionLimits;
  /** The largest message accepted; one link may buffer this plus one frame. */
  maxMessageSize: number;
  /** The connection is over the connection cap: open it, then close it with amqp:resource-limit-exceeded. */
  overCap: boolean;
  /** Whether the connection holds a SASL PLAIN login or a valid put-token. */
  authenticated: () => boolean;
  /** Whether the client attached a `$cbs` link (it authenticates with put-token and keeps CBS state). */
  usesCbs: () => boolean;
  log: Logger;
  id: string;
}

/** Channel-max advertised in our open: one session per link is how the SDK works (docs/wire-contract.md, "Connection and SASL"). */
export function channelMaxFor(limits: ConnectionLimits): number {
  return Math.min(65_535, limits.maxLinksPerConnection);
}

/**
 * Puts a {@link FrameGuard} between an accepted socket and the rhea connection that already called
 * `accept(socket)`: rhea's data listener is replaced by the guard's. Also arms the authentication
 * deadline and, for a connection over the cap, the polite refusal.
 */
export function installFrameGuard(socket: Duplex, conn: RheaConnection, opts: GuardOptions): FrameGuard {
  const rheaInput = socket.listeners('data') as ((b: Buffer) => void)[];
  socket.removeAllListeners('data');
  let destroyTimer: NodeJS.Timeout | null = null;
  const destroySoon = (): void => {
    destroyTimer ??= setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
    destroyTimer.unref();
  };
  const rc = conn as unknown as RheaInternals;
  const guard = new FrameGuard(
    {
      maxFrameSize: opts.limits.maxFrameSizeBytes,
      maxLinkTransferBytes: Math.min(opts.maxMessageSize + opts.limits.maxFrameSizeBytes, opts.limits.maxBufferedTransferBytes),
      maxConnTransferBytes: opts.limits.maxBufferedTransferBytes,
      channelMax: channelMaxFor(opts.limits),
      openOnly: opts.overCap,
    },
    {
      forward: (bytes) => {
        for (const f of rheaInput) f.call(socket, bytes);
      },
      closeWithError: (condition, description) => {
        // rhea can write a close only once the AMQP layer is open (before that it has no transport).
        if (!rc.is_remote_open() || rc.is_closed()) return false;
        conn.close({ condition, description });
        return true;
      },
      saslDone: () => saslComplete(conn),
      discardTransfer: (channel, handle, dropped) => {
        const marked = ((rc as unknown as { [DISCARD]?: Map<number, number> })[DISCARD] ??= new Map());
        marked.set(key(channel, handle), (marked.get(key(channel, handle)) ?? 0) + dropped);
      },
      detachLink: (channel, handle, condition, description) => {
        const link = remoteLink(conn, channel, handle);
        if (!link) return false;
        link.close({ condition, description });
        return true;
      },
    },
    (condition, description, amqpUp) => {
      opts.log.info({ conn: opts.id, condition, reason: description }, 'connection refused by the frame guard');
      let closed = false;
      if (amqpUp) {
        try {
          closed = rc.is_remote_open() && !rc.is_closed();
          if (closed) {
            conn.close({ condition, description });
            // rhea writes the close on the next tick; end our side right after it so the peer sees EOF.
            setImmediate(() => socket.end());
          }
        } catch {
          closed = false;
        }
      }
      // Before the AMQP layer is up there is no close frame to send: answer a bad header with ours (AMQP 1.0 §2.2).
      if (!closed && condition === 'amqp:connection:framing-error' && !amqpUp) socket.end(SASL_HEADER);
      else if (!closed) socket.end();
      destroySoon();
    },
  );
  socket.on('data', (chunk: Buffer) => guard.push(chunk));
  // rhea turns an exception while reading a frame (a decode error, a bound in rhea-patches.ts, a protocol
  // violation) into an 'error' or 'protocol_error' event and ends the socket right after it: write an AMQP
  // close naming the cause first, so the peer learns why. Listening here keeps the event from the container.
  const onError = (err: unknown): void => {
    const e = (err ?? {}) as { name?: string; condition?: unknown; message?: string };
    const condition = errorCondition(e);
    opts.log.info({ conn: opts.id, condition, reason: String(e.message ?? err) }, 'connection closed on a protocol error');
    if (e.name === 'ConnectionError') return; // the peer's own close carried the error
    try {
      if (conn.is_open()) {
        conn.close({ condition, description: String(e.message ?? 'Protocol error.').slice(0, 200) });
        processNow(conn);
      }
    } catch {
      /* the socket is gone: nothing to tell */
    }
    destroySoon();
  };
  const events = conn as unknown as { on(e: string, f: (err: unknown) => void): void };
  events.on('error', onError);
  events.on('protocol_error', onError);
  socket.once('close', () => {
    if (destroyTimer) clearTimeout(destroyTimer);
    clearTimeout(authTimer);
  });
  if (opts.overCap) {
    // A listener on the connection itself keeps the event from the container: this connection never
    // reaches the broker's handlers.
    (conn as unknown as { once(e: string, f: () => void): void }).once('connection_open', () => {
      conn.close({ condition: 'amqp:resource-limit-exceeded', description: `The broker allows ${opts.limits.maxConnections} connections.` });
      destroySoon();
    });
  }
  // Service Bus drops a connection that sets no valid token within 20 s (AMQP guide, CBS). A client that
  // uses $cbs (the SDK after a refused put-token, waiting out its retry delay) is closed with
  // amqp:connection:forced: rhea treats every other close condition as fatal and then never emits
  // 'disconnected', so the SDK keeps its $cbs links for a connection that is gone, reopens the same rhea
  // connection on its next attempt, sends the put-token into a session that no longer exists, and 60 s later
  // its request timer reads the wiped link's address and throws a TypeError no one catches. With
  // connection:forced the SDK rebuilds its connection and every retry gets a clean 401.
  const authTimer = setTimeout(() => {
    if (opts.overCap || !opts.authenticated()) {
      const condition = !opts.overCap && opts.usesCbs() ? 'amqp:connection:forced' : 'amqp:unauthorized-access';
      guard.fail(condition, `No valid token was set within ${opts.limits.authTimeoutMs / 1000} s.`);
    }
  }, opts.overCap ? Math.min(5_000, opts.limits.authTimeoutMs) : opts.limits.authTimeoutMs);
  authTimer.unref();
  return guard;
}

/** The AMQP error condition for an exception rhea caught while reading (see installFrameGuard). */
function errorCondition(e: { name?: string; condition?: unknown }): string {
  if (typeof e.condition === 'string') return e.condition;
  if (e.name === 'ProtocolError') return 'amqp:connection:framing-error';
  // rhea's decoder throws its TypeError, Buffer reads a RangeError, deep nesting a stack overflow.
  if (e.name === 'TypeError' || e.name === 'RangeError') return 'amqp:decode-error';
  return 'amqp:internal-error';
}

/** The connection state the guard reads (public rhea methods the typings leave out). */
interface RheaInternals {
  is_remote_open(): boolean;
  is_closed(): boolean;
}
