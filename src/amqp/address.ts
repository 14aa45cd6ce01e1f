// Link addresses as clients write them. The .NET and JS SDKs address a link by the entity path (`orders`,
// `orders/$management`); uamqp-based clients (the Python SDK 7.x) write an absolute URL of the namespace
// (`amqps://host/orders`, `sb://host/orders/$management`). Service Bus takes both: the path of the URL names the
// entity, whatever the host.

const ABSOLUTE = /^(?:amqps?|sb|wss?):\/\/[^/]*\/(.*)$/i;

/** The entity path a link address names: the address itself, or the path of an absolute URL. */
export function entityAddress(address: string): string {
  const m = ABSOLUTE.exec(address);
  if (!m) return address;
  // A query string is no part of an entity name; a path written escaped (`my%20queue`) names the same entity.
  const path = m[1]!.replace(/[?#].*$/, '');
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
