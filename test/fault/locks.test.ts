// The lock promises over real AMQP against a child broker (docs/durability.md, "The promises" and "Restarts: locks
// and delivery counts").
// Locks survive a restart: after kill -9 a locked message stays invisible until its locked-until, then comes back
//     with its count raised; old tokens fail with lock lost; after a downtime longer than the lock everything is
//     back at once.
// One lock at a time, the overlap race, many trials: A completes at locked-until ± 5 ms while B waits for the
//     redelivery; exactly one of {A's complete succeeded, B got the message} holds in every trial.
// Duplicates: duplicate sends with duplicate detection on keep one copy; a repeated settlement changes nothing;
//     an unknown token is answered with lock lost.

import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { connect, drain, sendMany } from '../helpers/amqp-client.js';
import { exited, startChild, writeConfig } from '../helpers/child-broker.js';
import { emit, management, receiveLocked, settle, size, sleep } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const { config, dataDir, dir } = writeConfig([
  { Name: 'q', Properties: { LockDuration: 'PT5S' } },
  { Name: 'race', Properties: { LockDuration: 'PT5S', MaxDeliveryCount: 100 } },
  { Name: 'dd', Properties: { RequiresDuplicateDetection: true, LockDuration: 'PT30S' } },
]);
const args = ['--config', config, '--data-dir', dataDir];
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function lockAll(port: number, entity: string, n: number): Promise<{ conn: Any; got: Awaited<ReturnType<ReturnType<typeof receiveLocked>['waitFor']>> }> {
  const conn = await connect(port);
  const sent = await sendMany(conn, entity, Array.from({ length: n }, (_, i) => `${entity}-${randomUUID()}-${i}`), 100, Buffer.from('x'));
  expect([...sent.values()].every((o) => o === 'ok')).toBe(true);
  const got = await receiveLocked(conn, entity, n).waitFor(n, 10_000);
  expect(got).toHaveLength(n);
  return { conn, got };
}

describe('locks survive kill -9 and restart', () => {
  it('keeps a lock until its locked-until, then redelivers; old tokens are lost', async () => {
    let broker = await startChild(args);
    const { conn, got } = await lockAll(broker.port, 'q', 100);
    const locked = new Map(got.map((m) => [m.id, m.lockedUntil]));
    broker.proc.kill('SIGKILL');
    await exited(broker.proc);
    conn.close();
    broker = await startChild(args);
    const ready = Date.now();
    const c2 = await connect(broker.port);
    const r = receiveLocked(c2, 'q', 200);
    const mgmt = await management(c2, 'q');
    const renew = await Promise.all(got.slice(0, 50).map((m) => mgmt.request('com.microsoft:renew-lock', { 'lock-tokens': [m.token] })));
    const redelivered = (await r.waitFor(100, Math.max(...locked.values()) - Date.now() + 3_000)).slice();
    const early = redelivered.filter((m) => m.at < (locked.get(m.id) ?? 0) - 5).length;
    const wrongCount = redelivered.filter((m) => m.deliveryCount !== 1).length;
    // Action B: kill again while these are locked, stay down longer than the lock: all back at once.
    const again = redelivered.length;
    const until = Math.max(...redelivered.map((m) => m.lockedUntil));
    broker.proc.kill('SIGKILL');
    await exited(broker.proc);
    c2.close();
    await sleep(Math.max(0, until - Date.now()) + 500);
    broker = await startChild(args);
    const t1 = Date.now();
    const c3 = await connect(broker.port);
    const back = await receiveLocked(c3, 'q', 200).waitFor(again, 5_000);
    const firstBackMs = back.length ? back[0]!.at - t1 : -1;
    c3.close();
    broker.proc.kill('SIGTERM');
    await exited(broker.proc);
    emit({
      test: 'locks-restart',
      runs: got.length,
      redelivered: redelivered.length,
      early,
      wrongCount,
      oldTokenRenew: [...new Set(renew.map((x) => `${x.status} ${x.condition ?? ''}`.trim()))],
      readyToFirstRedeliveryMs: again ? Math.min(...redelivered.map((m) => m.at)) - ready : -1,
      downtimeRedelivered: back.length,
      firstBackMs,
    });
    expect(redelivered).toHaveLength(100);
    expect(early).toBe(0);
    expect(wrongCount).toBe(0);
    expect(renew.every((x) => x.status === 410 && x.condition === 'com.microsoft:message-lock-lost')).toBe(true);
    expect(back).toHaveLength(again);
    expect(back.every((m) => m.deliveryCount === 2)).toBe(true);
  }, 60_000);
});

describe('stale lock vs redelivery, over AMQP', () => {
  it('never lets a late complete and a redelivery both happen', async () => {
    const rounds = size(2, 10);
    const per = size(200, 1_000);
    const broker = await startChild(args);
    let violations = 0;
    let aWon = 0;
    let bWon = 0;
    let neither = 0;
    for (let round = 0; round < rounds; round++) {
      const { conn: a, got } = await lockAll(broker.port, 'race', per);
      const b = await connect(broker.port);
      const rb = receiveLocked(b, 'race', per * 2);
      const outcomes = await Promise.all(
        got.map(async (m) => {
          await sleep(Math.max(0, m.lockedUntil - Date.now() + (Math.random() * 10 - 5)));
          return { id: m.id, answer: await settle(m.delivery, 'complete', 5_000) };
        }),
      );
      await sleep(1_500);
      const toB = new Set(rb.got.map((m) => m.id));
      for (const o of outcomes) {
        const okA = o.answer.outcome === 'ok';
        if (okA && toB.has(o.id)) violations++;
        else if (okA) aWon++;
        else if (toB.has(o.id)) bWon++;
        else neither++;
      }
      await Promise.all(rb.got.map((m) => settle(m.delivery, 'complete')));
      a.close();
      b.close();
    }
    broker.proc.kill('SIGTERM');
    await exited(broker.proc);
    emit({ test: 'stale-lock-race', runs: rounds * per, violations, aCompleted: aWon, bRedelivered: bWon, neither });
    expect(violations).toBe(0);
    expect(neither).toBe(0);
    expect(aWon + bWon).toBe(rounds * per);
  }, 120_000);
});

describe('duplicate sends and settlements', () => {
  it('stores one copy per message-id and applies a settlement once', async () => {
    const broker = await startChild(args);
    const conn = await connect(broker.port);
    const ids = Array.from({ length: 200 }, (_, i) => `dup-${i}`);
    const first = await sendMany(conn, 'dd', ids, 50, Buffer.from('one'));
    const second = await sendMany(conn, 'dd', ids, 50, Buffer.from('two'));
    const got = await receiveLocked(conn, 'dd', 400).waitFor(200, 5_000);
    await sleep(500);
    const mgmt = await management(conn, 'dd');
    const m = got[0]!;
    const firstSettle = await mgmt.request('com.microsoft:update-disposition', { 'lock-tokens': [m.token], 'disposition-status': 'completed' });
    const again = await mgmt.request('com.microsoft:update-disposition', { 'lock-tokens': [m.token], 'disposition-status': 'completed' });
    const viaLink = await settle(m.delivery, 'complete');
    const unknown = await mgmt.request('com.microsoft:renew-lock', { 'lock-tokens': [randomUUID()] });
    for (const x of got.slice(1)) await settle(x.delivery, 'complete');
    const left = await drain(conn, 'dd', 300);
    conn.close();
    broker.proc.kill('SIGTERM');
    await exited(broker.proc);
    const copies = new Map<string, number>();
    for (const x of got) copies.set(x.id, (copies.get(x.id) ?? 0) + 1);
    const duplicated = [...copies.values()].filter((n) => n > 1).length;
    emit({
      test: 'duplicates',
      runs: ids.length * 2,
      ok: [...first.values(), ...second.values()].filter((o) => o === 'ok').length,
      stored: got.length,
      duplicated,
      firstSettle: firstSettle.status,
      repeatedSettle: `${again.status} ${again.condition ?? ''}`.trim(),
      repeatedViaLink: viaLink.condition ?? viaLink.outcome,
      unknownToken: `${unknown.status} ${unknown.condition ?? ''}`.trim(),
      leftAfter: left.length,
    });
    expect([...first.values(), ...second.values()].every((o) => o === 'ok')).toBe(true);
    expect(got).toHaveLength(200);
    expect(duplicated).toBe(0);
    expect(firstSettle.status).toBe(200);
    expect(again.status).toBe(410);
    expect(again.condition).toBe('com.microsoft:message-lock-lost');
    expect(viaLink.outcome).toBe('fail');
    expect(unknown.status).toBe(410);
    expect(left).toHaveLength(0);
  }, 60_000);
});
