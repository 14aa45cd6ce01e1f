// SASL PLAIN's password check is constant-time: the password is compared as a digest of fixed length with
// crypto.timingSafeEqual, so neither its length nor its first differing byte shows in the time the answer takes,
// and a user name that names no policy is compared against a stand-in key, so it shows no more than a wrong key.

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

const { namespaceKeys, verifyPlain, verifyPlainLogin } = await import('../../src/auth/sas.js');
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

  it('makes the same comparison for an unknown policy name as for a known one (its timing tells nothing)', () => {
    const attempt = (user: string): number[] => {
      calls.length = 0;
      expect(verifyPlainLogin(user, 'wrong password', POLICIES)).toEqual([]);
      return [...calls];
    };
    const known = attempt('RootManageSharedAccessKey');
    expect(known).toHaveLength(1);
    expect(attempt('NoSuchPolicy')).toEqual(known);
    // The same through a namespace's keys (policies plus entity rules, none of them named so), as $cbs and PLAIN use.
    const keys = namespaceKeys(POLICIES, { rulesGuarding: () => null, rulesNamed: () => [] });
    calls.length = 0;
    expect(verifyPlainLogin('NoSuchPolicy', 'wrong password', keys)).toEqual([]);
    expect(calls).toEqual(known);
  });
});
