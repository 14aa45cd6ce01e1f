// Transactions driven by Apache Qpid Proton's own transaction API (Debian's python3-qpid-proton): a commit of 10
// sends via the input queue plus the input's complete becomes visible at once and entirely; a rollback leaves the
// input locked and stores no send; a transaction whose connection dropped cannot be committed from another; an
// unknown txn-id is refused.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';

const PYTHON = '/usr/bin/python3';
const hasProton = spawnSync(PYTHON, ['-c', 'import proton'], { stdio: 'ignore' }).status === 0;
const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./proton_txn_client.py', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('./proton_txn_example.py', import.meta.url));

let broker: TestBroker;
beforeEach(async () => {
  broker = await startTestBroker(
    [
      { Name: 'q', Properties: { LockDuration: 'PT1M' } },
      { Name: 'out', Properties: {} },
      { Name: 'orders', Properties: {} },
      { Name: 'invoices', Properties: {} },
    ],
    { store: new MemoryStore() },
  );
  await broker.broker.send('q', [{ body: encodeMessage('in'), messageId: 'in' }]);
});
afterEach(async () => broker?.dispose());

// A minimal AMQP message: properties(message-id) and an amqp-value string body.
function encodeMessage(id: string): Uint8Array {
  const str = (s: string): Buffer => Buffer.concat([Buffer.from([0xa1, Buffer.byteLength(s)]), Buffer.from(s)]);
  const props = Buffer.concat([Buffer.from([0x00, 0x53, 0x73, 0xc0]), Buffer.from([str(id).length + 1, 1]), str(id)]);
  return Buffer.concat([props, Buffer.from([0x00, 0x53, 0x77]), str(id)]);
}

async function client(mode: string): Promise<Record<string, unknown>> {
  const { stdout } = await run('timeout', ['60', PYTHON, SCRIPT, mode, String(broker.port)]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

const ids = (path: string): string[] => broker.broker.browse(path).map((m) => m.row.messageId);

describe.skipIf(!hasProton && !process.env.CI)('transactions with Qpid Proton', () => {
  it('commits 10 sends via the input queue and the input complete together: visible at once and entirely', async () => {
    // Watch the broker while the client works: the sends appear all at once, never some of them; the input leaves
    // the index when the commit is issued (as any complete does while it is written) and never comes back.
    const seen = new Set<string>();
    const watch = setInterval(() => seen.add(`${ids('out').length}/${ids('q').length}`), 2);
    const out = await client('commit');
    clearInterval(watch);
    seen.add(`${ids('out').length}/${ids('q').length}`);
    expect(out).toMatchObject({ received: 'in', committed: true });
    expect(ids('out')).toEqual(Array.from({ length: 10 }, (_, i) => `out${i}`));
    expect(ids('q')).toEqual([]);
    expect([...seen].filter((s) => !['0/1', '0/0', '10/0'].includes(s))).toEqual([]);
    expect(seen.has('10/0')).toBe(true);
  });

  it('rolls back: no send is stored and the input stays locked by its receiver', async () => {
    const out = await client('rollback');
    expect(out).toMatchObject({ received: 'in', aborted: true });
    expect(broker.broker.browse('q').map((m) => [m.row.messageId, m.row.state])).toEqual([['in', 'locked']]);
    expect(ids('out')).toEqual([]);
  });

  it('refuses to commit a transaction whose connection dropped, from a new connection, and stores none of it', async () => {
    const out = await client('dropped');
    expect(out).toMatchObject({ declared: true, commitFailed: true, condition: 'amqp:transaction:unknown-id' });
    expect(ids('q')).toEqual(['in']);
    expect(broker.broker.openTransactions()).toBe(0);
  });

  it('refuses a discharge of a txn-id that was never declared', async () => {
    const out = await client('unknown');
    expect(out).toMatchObject({ commitFailed: true, condition: 'amqp:transaction:unknown-id' });
  });

  it('runs the README example: the invoice arrives and the order is completed, together', async () => {
    await broker.broker.send('orders', [{ body: encodeMessage('order-1'), messageId: 'order-1' }]);
    const { stdout } = await run('timeout', ['60', PYTHON, EXAMPLE, String(broker.port)]);
    expect(stdout.trim()).toBe('committed');
    expect(ids('orders')).toEqual([]);
    expect(broker.broker.browse('invoices')).toHaveLength(1);
  });
});
