// Delivery tags carry lock tokens in .NET byte order, and live as long as the lock: they must not pin memory they do
// not use (lock-token.ts).

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { lockTokenToTag, tagToLockToken } from '../../src/amqp/lock-token.js';

describe('lock tokens as delivery tags', () => {
  it('carries the GUID in .NET byte order, and back', () => {
    const token = '00112233-4455-6677-8899-aabbccddeeff';
    expect(Buffer.from(lockTokenToTag(token)).toString('hex')).toBe('33221100554477668899aabbccddeeff');
    for (let i = 0; i < 200; i++) {
      const t = randomUUID();
      expect(tagToLockToken(lockTokenToTag(t))).toBe(t);
    }
  });

  it("keeps no part of Node's shared allocation pool alive: a held tag pins at most a 1 KiB slab of other tags", () => {
    const tags = Array.from({ length: 100 }, () => {
      // What a delivery allocates around its tag (a transfer's bytes) comes from the shared pool.
      Buffer.from('a transfer encoded next to the tag');
      return lockTokenToTag(randomUUID());
    });
    const pool = Buffer.from([1]).buffer;
    for (const tag of tags) {
      expect(tag.buffer).not.toBe(pool);
      expect(tag.buffer.byteLength).toBeLessThanOrEqual(1024);
    }
    // At most three slabs of their own (64 tags each) for 100 tags, not a pool slab per handful of deliveries.
    expect(new Set(tags.map((t) => t.buffer)).size).toBeLessThanOrEqual(3);
  });
});
