// Lock tokens are GUIDs. On the wire the delivery tag carries them in .NET `Guid.ToByteArray()` order (the
// first three groups little-endian), which the JS SDK reorders back (`reorderLockToken`), while
// `$management` requests carry them as AMQP uuids in standard (RFC 4122) order
// (docs/wire-contract.md, "Lock tokens"; azure-sdk-for-js PRs #1671, #1842).

const DOTNET_ORDER = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];

/** Standard-order uuid bytes → canonical string. */
export function uuidBytesToString(b: Uint8Array): string {
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Canonical string → standard-order uuid bytes. */
export function uuidStringToBytes(s: string): Buffer {
  return Buffer.from(s.replace(/-/g, ''), 'hex');
}

/** The delivery tag for a lock token: the GUID in .NET byte order. */
export function lockTokenToTag(token: string): Buffer {
  const std = uuidStringToBytes(token);
  return Buffer.from(DOTNET_ORDER.map((i) => std[i]!));
}

/** The lock token a delivery tag carries (inverse of `lockTokenToTag`). */
export function tagToLockToken(tag: Uint8Array): string {
  return uuidBytesToString(Buffer.from(DOTNET_ORDER.map((i) => tag[i] ?? 0)));
}
