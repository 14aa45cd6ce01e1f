// The one error table: every failure code reaches each transport as the condition, $management status and HTTP
// status the Azure SDK and an operator expect, and nothing unexpected leaks its internals to a client.

import { describe, expect, it } from 'vitest';
import { translate } from '@azure/core-amqp';
import { AuthError } from '../../src/auth/sas.js';
import {
  BrokerError,
  entityNotFound,
  lockLost,
  messageTooLarge,
  requiresSessions,
  sessionLockLost,
  type BrokerErrorCode,
} from '../../src/broker/errors.js';
import { wireError } from '../../src/errors/table.js';
import { RuleDefinitionError } from '../../src/filters/errors.js';

/** The core-amqp error name the SDK turns each broker code into (its ServiceBusError code in the comment). */
const SDK_NAMES: Record<BrokerErrorCode, string> = {
  EntityNotFound: 'MessagingEntityNotFoundError', // MessagingEntityNotFound
  LockLost: 'MessageLockLostError', // MessageLockLost
  SessionLockLost: 'SessionLockLostError', // SessionLockLost
  SessionCannotBeLocked: 'SessionCannotBeLockedError', // SessionCannotBeLocked
  Timeout: 'ServiceUnavailableError', // ServiceTimeout
  MessageNotFound: 'MessageNotFoundError', // MessageNotFound
  MessageTooLarge: 'MessageTooLargeError', // MessageSizeExceeded
  InvalidOperation: 'InvalidOperationError', // GeneralError
  Unauthorized: 'UnauthorizedError', // UnauthorizedAccess
  QuotaExceeded: 'QuotaExceededError', // QuotaExceeded
  ServerBusy: 'ServerBusyError', // ServiceBusy
  StoreUnavailable: 'ServerBusyError', // ServiceBusy
  ShuttingDown: 'ServerBusyError', // ServiceBusy
  Internal: 'InternalServerError', // GeneralError
  ArgumentOutOfRange: 'ArgumentOutOfRangeError', // GeneralError
  InvalidArgument: 'ArgumentError', // GeneralError
  EntityAlreadyExists: 'MessagingEntityAlreadyExistsError', // MessagingEntityAlreadyExists
  EntityDisabled: 'MessagingEntityDisabledError', // MessagingEntityDisabled
  // The JS SDK has no transactions; the AMQP 1.0 transaction conditions reach it as a plain MessagingError.
  TransactionUnknown: 'MessagingError',
  TransactionRolledBack: 'MessagingError',
  TransactionTimeout: 'MessagingError',
};

describe('the error table', () => {
  it('gives every broker code the condition the SDK maps to its error', () => {
    for (const [code, name] of Object.entries(SDK_NAMES)) {
      // A missing entity is told apart from other amqp:not-found errors by its description.
      const err = code === 'EntityNotFound' ? entityNotFound('q') : new BrokerError(code as BrokerErrorCode, 'x');
      const { condition, description } = wireError(err);
      const translated = translate({ condition, description }) as Error & { code?: string };
      expect(`${code}: ${translated.code ?? translated.name}`).toBe(`${code}: ${name}`);
    }
  });

  it('answers transaction failures with the AMQP 1.0 transaction conditions', () => {
    expect(wireError(new BrokerError('TransactionUnknown', 'x')).condition).toBe('amqp:transaction:unknown-id');
    expect(wireError(new BrokerError('TransactionRolledBack', 'x')).condition).toBe('amqp:transaction:rollback');
    expect(wireError(new BrokerError('TransactionTimeout', 'x')).condition).toBe('amqp:transaction:timeout');
  });

  it('gives the same failure the same status on $management and on HTTP where they share meaning', () => {
    expect(wireError(lockLost())).toMatchObject({ status: 410, http: 410 });
    expect(wireError(entityNotFound('q'))).toMatchObject({ status: 404, http: 404, code: 'EntityNotFound' });
    expect(wireError(new BrokerError('StoreUnavailable', 'disk'))).toMatchObject({ status: 503, http: 503 });
    expect(wireError(messageTooLarge(2, 1))).toMatchObject({ status: 413, http: 413 });
  });

  it('names a missing entity by its full address when the client host is known', () => {
    expect(wireError(entityNotFound('orders'), '127.0.0.1').description).toBe(
      "The messaging entity 'sb://127.0.0.1/orders' could not be found.",
    );
    expect(wireError(entityNotFound('orders')).description).toBe("The messaging entity 'orders' could not be found.");
  });

  it('maps rule refusals to non-retryable conditions', () => {
    const exists = wireError(new RuleDefinitionError('AlreadyExists', 'dup'));
    expect(exists).toMatchObject({ condition: 'com.microsoft:entity-already-exists', status: 409, description: 'dup' });
    for (const code of ['InvalidArgument', 'ArgumentOutOfRange', 'AlreadyExists', 'NotFound'] as const) {
      const { condition } = wireError(new RuleDefinitionError(code, 'x'));
      expect(`${code}: ${(translate({ condition, description: 'x' }) as { retryable?: boolean }).retryable}`).toBe(`${code}: false`);
    }
  });

  it('maps a refused credential to UnauthorizedAccess with its reason', () => {
    const e = wireError(new AuthError('The token has expired.'));
    expect(e).toMatchObject({ code: 'Unauthorized', condition: 'amqp:unauthorized-access', status: 401, http: 401 });
    expect(e.description).toBe('The token has expired.');
  });

  it('hides the text of an unexpected error', () => {
    const e = wireError(new TypeError('secret internals at /srv/x.js:12'));
    expect(e).toMatchObject({ code: 'Internal', condition: 'amqp:internal-error', status: 500, http: 500 });
    expect(e.description).not.toContain('secret');
  });

  it('builds each repeated message in one factory', () => {
    expect(messageTooLarge(300, 200).message).toBe('The received message (size 300 bytes) exceeds the limit (200 bytes).');
    expect(messageTooLarge(300, 200, 'q').message).toBe(
      "The received message (size 300 bytes) exceeds the limit (200 bytes) of entity 'q'.",
    );
    expect(requiresSessions('q').code).toBe('InvalidOperation');
    expect(sessionLockLost('s1').message).toContain("Session id: 's1'.");
    expect(sessionLockLost().code).toBe('SessionLockLost');
  });
});
