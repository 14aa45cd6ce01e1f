// Ending connections from the broker's side, as a Service Bus gateway does when it restarts or an entity's
// namespace goes away: a close frame with `amqp:connection:forced` (the one condition rhea clients treat as
// "reconnect", not as fatal), then the end of the socket, which is what makes the SDKs reconnect at once.

import type { Duplex } from 'node:stream';
import { entityAddress } from './address.js';
import type { RheaConnection, RheaLink } from './rhea-types.js';

/** True when `conn` has a link to `entity` or to a path under it (its dead-letter queue, a topic's subscriptions). */
export function linksTo(conn: RheaConnection, entity: string): boolean {
  const e = entity.toLowerCase();
  let hit = false;
  (conn as unknown as { each_link(f: (l: RheaLink) => void): void }).each_link((l) => {
    const addresses = [l.remote.attach?.target?.address, l.remote.attach?.source?.address].map((a) => entityAddress(a ?? '').toLowerCase());
    if (addresses.some((x) => x === e || x.startsWith(`${e}/`))) hit = true;
  });
  return hit;
}

/**
 * Closes `conn` with `amqp:connection:forced` and `description`, then ends its socket (destroyed if it has not
 * closed within 2 s). Resolves once the socket is closed; at once when there is no socket.
 */
export function forceClose(conn: RheaConnection, socket: Duplex | undefined, description: string): Promise<void> {
  try {
    conn.close({ condition: 'amqp:connection:forced', description });
  } catch {
    /* already closing */
  }
  if (!socket) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const cut = setTimeout(() => socket.destroy(), 2000);
    socket.once('close', () => {
      clearTimeout(cut);
      resolve();
    });
    // A moment for the close frame to leave before the end of the stream.
    setTimeout(() => socket.end(), 20);
  });
}
