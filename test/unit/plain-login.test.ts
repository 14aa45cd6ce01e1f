// SASL PLAIN's password check is constant-time: the password is compared as a digest of fixed length with
// crypto.timingSafeEqual, so neither its length nor its first differing byte shows in the time the answer takes.

import { describe, expect, it, vi } from 'vitest';

const calls: number[] = [];
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      calls.push(a.byteLength);
      return real.timingSafeEqual(a, b);
    },
  };
});

const { verifyPlain } = await import('../../src/auth/sas.js');
const POLICIES = [{ name: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE', rights: ['Manage' as const, 'Send' as const, 'Listen' as const] }];

describe('SASL PLAIN password check', () => {
  it('compares equal-length digests in constant time whatever the password length', () => {
    calls.length = 0;
    for (const password of ['x', 'SAS_KEY_VALU', 'SAS_KEY_VALUE_', 'a much longer wrong password than the key']) {
      expect(verifyPlain('RootManageSharedAccessKey', password, POLICIES)).toBeNull();
    }
    expect(verifyPlain('RootManageSharedAccessKey', 'SAS_KEY_VALUE', POLICIES)?.policy).toBe('RootManageSharedAccessKey');
    // One comparison per attempt, every one of the same (digest) length.
    expect(calls).toHaveLength(5);
    expect(new Set(calls).size).toBe(1);
  });
});
