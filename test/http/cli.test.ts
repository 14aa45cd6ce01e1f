// The admin subcommands of the real CLI (`node bin/peeklock.js …`, built by `npm test`'s pretest) against
// an in-process broker on 127.0.0.1: tables, --json, peek views, purge confirmation, redrive with its
// idempotency reminder, and one-line errors for an unreachable broker, a wrong key and a key without Manage.

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_NOTE } from '../../src/cli/admin.js';
import { runCli } from '../helpers/child-broker.js';
import { deadLetterAll, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;
const POLICIES = [
  { Name: 'RootManageSharedAccessKey', Key: 'SAS_KEY_VALUE', Rights: ['Manage', 'Send', 'Listen'] },
  { Name: 'listener', Key: 'listen-key', Rights: ['Listen'] },
];

beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'orders' }, { Name: 'jobs' }], { broker: { SharedAccessPolicies: POLICIES } });
  await deadLetterAll(b.broker, 'orders', [
    { id: 'm1', reason: 'Poison', props: { tenant: 'x' } },
    { id: 'm2', reason: 'Timeout', props: { tenant: 'y' } },
    { id: 'm3', reason: 'Poison', props: { tenant: 'y' } },
  ]);
});
afterAll(() => b.close());

const cli = (...args: string[]) => runCli([...args, '--url', b.base]);

/** A port on 127.0.0.1 with nothing listening (bound, then released). */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('peeklock entities / peek', () => {
  it('prints a table of queues with counts and marks an alerting dead-letter queue', async () => {
    const r = await cli('entities');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ENTITY\s+ACTIVE\s+LOCKED\s+SCHEDULED\s+DEFERRED\s+DEAD-LETTERED\s+BYTES\s+CONSUMERS$/);
    expect(lines[1]).toMatch(/^orders\s+0\s+0\s+0\s+0\s+3 !\s+0\s+0$/);
    expect(lines[2]).toMatch(/^jobs\s+0\s+0\s+0\s+0\s+0\s+0\s+0$/);
    expect(lines[3]).toMatch(/^! = dead-letter depth/);
  });

  it('prints JSON with --json', async () => {
    const r = await cli('entities', '--json');
    expect(JSON.parse(r.stdout).map((e: { path: string; deadLettered: number }) => [e.path, e.deadLettered])).toEqual([
      ['orders', 3],
      ['jobs', 0],
    ]);
  });

  it('peeks the dead-letter queue with reasons and body previews', async () => {
    const r = await cli('peek', 'orders', '--dlq', '--count', '2');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^SEQ\s+STATE\s+DELIVERIES\s+LOCKED-UNTIL\s+LOCK-HOLDER\s+ENQUEUED\/DUE\s+REASON\s+BODY$/);
    // Received once and dead-lettered: an explicit dead-letter is not a failed delivery, so 0 deliveries.
    expect(lines[1]).toMatch(/^\s*1\s+active\s+0\s+\S+Z\s+Poison\s+body of m1$/);
    const json = JSON.parse((await cli('peek', 'orders', '--dlq', '--json')).stdout);
    expect(json.map((m: { messageId: string }) => m.messageId)).toEqual(['m1', 'm2', 'm3']);
    expect((await cli('peek', 'jobs')).stdout.trim()).toBe('(no messages)');
  });

  it('refuses conflicting or out-of-range options', async () => {
    const both = await cli('peek', 'orders', '--dlq', '--deferred');
    expect(both.code).toBe(1);
    expect(both.stderr).toBe('peeklock: choose one of --dlq, --scheduled, --deferred (got --dlq --deferred)\n');
    const count = await cli('peek', 'orders', '--count', '0');
    expect(count.code).toBe(2);
    expect(count.stderr.trim().split('\n')).toHaveLength(1);
    expect(count.stderr).toMatch(/--count.*must be an integer from 1 to 1000/);
  });
});

describe('peeklock redrive / purge', () => {
  it('dry-runs, then redrives with filters, always with the idempotency reminder', async () => {
    const dry = await cli('redrive', 'orders', '--reason', 'Poison', '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stderr).toContain(IDEMPOTENCY_NOTE);
    expect(dry.stdout.trim()).toBe(
      'dry run (orders/$DeadLetterQueue -> orders): would move 2, skip 1; nothing was moved',
    );
    const real = await cli('redrive', 'orders', '--reason', 'Poison', '--where', 'tenant=y', '--rate', '1000');
    expect(real.code).toBe(0);
    expect(real.stdout.trim()).toBe('orders/$DeadLetterQueue -> orders: moved 1, skipped 2, failed 0');
    const json = JSON.parse((await cli('redrive', 'orders', '--max', '1', '--to', 'jobs', '--json')).stdout);
    expect(json).toMatchObject({ to: 'jobs', moved: 1, skipped: 0, failed: 0, dryRun: false });
    expect(b.broker.listEntities().map((e) => [e.path, e.active, e.deadLettered])).toEqual([
      ['orders', 1, 1],
      ['jobs', 1, 0],
    ]);
    const badWhere = await cli('redrive', 'orders', '--where', 'novalue');
    expect(badWhere.code).toBe(2);
    expect(badWhere.stderr).toMatch(/--where.*must be key=value/);
  });

  it('purges only with --yes', async () => {
    const no = await cli('purge', 'orders', '--dlq');
    expect(no.code).toBe(1);
    expect(no.stderr).toBe(
      "peeklock: purge deletes the dead-letter queue of 'orders' for good; add --yes to confirm\n",
    );
    const yes = await cli('purge', 'orders', '--dlq', '--yes');
    expect(yes.stdout.trim()).toBe('purged 1 message(s) from orders/$DeadLetterQueue');
    expect(b.broker.listEntities()[0]).toMatchObject({ active: 1, deadLettered: 0 });
  });
});

describe('errors', () => {
  it('says so in one line when the broker is not reachable', async () => {
    const r = await runCli(['entities', '--url', `http://127.0.0.1:${await deadPort()}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^peeklock: cannot reach the broker at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\); is it running, and is --url its HTTP port\?\n$/,
    );
  });

  it('says so in one line when the key is wrong or lacks Manage', async () => {
    const wrong = await cli('entities', '--key', 'nope');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(
      "peeklock: the broker refused the key 'RootManageSharedAccessKey': The token signature does not match.\n",
    );
    const listen = await cli('peek', 'orders', '--key-name', 'listener', '--key', 'listen-key');
    expect(listen.code).toBe(1);
    expect(listen.stderr).toBe(
      "peeklock: The policy 'listener' lacks the Manage right the admin API needs. Use a policy with Manage (--key-name, --key).\n",
    );
  });

  it('names an unknown entity', async () => {
    const r = await cli('peek', 'nope');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("peeklock: EntityNotFound: The messaging entity 'nope' could not be found.\n");
  });
});
