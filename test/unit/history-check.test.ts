// The offline history check the power-cut and kill -9 workloads run on the store a crash left (issue 39), fed
// hand-made rows and histories: what a crash may leave passes (the open attempt unwritten, a lock the restart
// closed), a history ahead of its row or behind it by more than the open attempt does not.

import { describe, expect, it } from 'vitest';
import { historyDisagreement } from '../helpers/history-check.js';
import type { DeliveryAttempt, DeliveryHistory } from '../../src/store/history.js';
import type { MessageRow } from '../../src/store/row.js';

const row = (state: MessageRow['state'], deliveryCount: number, extra: Partial<MessageRow> = {}): MessageRow =>
  ({ seq: 7, messageId: 'm', state, deliveryCount, expiresAt: null, ...(state === 'locked' ? { lock: { token: 't', until: 9_000 } } : {}), ...extra }) as MessageRow;
const attempt = (n: number, how?: NonNullable<DeliveryAttempt['end']>['how'], extra: Partial<DeliveryAttempt> = {}): DeliveryAttempt => ({
  n, via: 'receive', lockedAt: n * 100, lockedUntil: n * 100 + 50, ...(how ? { end: { how, at: n * 100 + 10 } } : {}), ...extra,
});
const history = (attempts: DeliveryAttempt[], events: DeliveryHistory['events'] = []): DeliveryHistory => ({ attempts, events, overlaps: [] });

describe('historyDisagreement', () => {
  it('passes what a crash may leave', () => {
    // Two abandons, the row available again with both counted.
    expect(historyDisagreement(row('active', 2), history([attempt(1, 'abandoned'), attempt(2, 'abandoned')]), false)).toBeUndefined();
    // Locked at the cut, its attempt only in memory (one behind), or written by a renewal (open in the store).
    expect(historyDisagreement(row('locked', 3), history([attempt(1, 'abandoned'), attempt(2, 'lockExpired')]), false)).toBeUndefined();
    expect(historyDisagreement(row('locked', 2), history([attempt(1, 'abandoned'), attempt(2)]), false)).toBeUndefined();
    // Locked at a restart that closed its attempt, and still under that lock.
    const restarted = attempt(2, 'brokerRestarted');
    restarted.end!.lockedUntil = 9_000;
    expect(historyDisagreement(row('locked', 2), history([attempt(1, 'abandoned'), restarted]), false)).toBeUndefined();
    // An attempt that never reached a client is not counted.
    expect(historyDisagreement(row('active', 1), history([attempt(1, 'abandoned'), attempt(2, 'notDelivered')]), false)).toBeUndefined();
    // Dead-lettered by the receiver on its second delivery (not counted), then taken once in the dead-letter queue
    // and abandoned there (not counted either): the copy keeps count 1 and names the reason.
    const dead = history([attempt(1, 'abandoned'), attempt(2, 'deadLettered'), attempt(3, 'abandoned')], [{ kind: 'deadLettered', at: 210, detail: 'test' }]);
    expect(historyDisagreement(row('active', 1, { props: { DeadLetterReason: 'test' } }), dead, true)).toBeUndefined();
    // Redriven: the count starts again.
    const redriven = history([attempt(1, 'lockExpired'), attempt(2, 'lockExpired'), attempt(3, 'abandoned')], [{ kind: 'deadLettered', at: 210 }, { kind: 'redriven', at: 250 }]);
    expect(historyDisagreement(row('active', 1), redriven, false)).toBeUndefined();
  });

  it('names a history ahead of its row', () => {
    expect(historyDisagreement(row('active', 1), history([attempt(1, 'abandoned'), attempt(2, 'abandoned')]), false)).toBe(
      'row 7 (m, active, delivery count 1): its history counts 2 deliveries (ahead of the row), last attempt 2 abandoned',
    );
    expect(historyDisagreement(row('active', 2), history([attempt(1, 'abandoned'), attempt(2)]), false)).toBe(
      'row 7 (m, active, delivery count 2): its history has attempt 2 open, the row holds no lock',
    );
    expect(historyDisagreement(row('locked', 2), history([attempt(1, 'completed'), attempt(2)]), false)).toBe(
      'row 7 (m, locked, delivery count 2): attempt 1 ended completed, yet the row is stored',
    );
    expect(historyDisagreement(row('active', 1), history([attempt(1, 'deadLettered')]), false)).toBe(
      'row 7 (m, active, delivery count 1): attempt 1 ended dead-lettered, no dead-letter move follows',
    );
    const misnamed = history([attempt(1, 'deadLettered')], [{ kind: 'deadLettered', at: 110, detail: 'other' }]);
    expect(historyDisagreement(row('active', 0, { props: { DeadLetterReason: 'test' } }), misnamed, true)).toBe(
      "row 7 (m, active, delivery count 0): its history names dead-letter reason 'other', the row 'test'",
    );
  });

  it('names a history behind its row by more than the open attempt', () => {
    expect(historyDisagreement(row('locked', 3), history([attempt(1, 'abandoned')]), false)).toBe(
      'row 7 (m, locked, delivery count 3): its history counts at most 2 deliveries (behind by more than an open attempt), last attempt 1 abandoned',
    );
    expect(historyDisagreement(row('active', 2), history([attempt(1, 'abandoned')]), false)).toBe(
      'row 7 (m, active, delivery count 2): its history counts at most 1 deliveries (behind by more than an open attempt), last attempt 1 abandoned',
    );
  });
});
