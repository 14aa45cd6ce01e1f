// `peeklock messages send|resubmit|delete|dead-letter` (the real CLI, `node bin/peeklock.js`, built by
// `npm test`'s pretest) against an in-process broker on 127.0.0.1: typed properties on send, a resubmit of
// dead letters chosen by reason, delete's confirmation and dry run, and one-line errors naming the field.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/child-broker.js';
import { deadLetterAll, startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;
beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'orders' }, { Name: 'jobs' }, { Name: 'audit' }]);
});
afterAll(() => b.close());

const cli = (...args: string[]) => runCli([...args, '--url', b.base]);
const counts = (path: string) => b.broker.listEntities().find((e) => e.path === path)!;

describe('peeklock messages', () => {
  it('sends a message with typed application properties', async () => {
    const r = await cli('messages', 'send', 'jobs', '--body', 'hello', '--message-id', 'job-1', '--subject', 'resize', '-p', 'tenant=contoso', '-p', 'attempt:long=3', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ entity: 'jobs', messageId: 'job-1' });
    const [m] = b.broker.browse('jobs');
    expect(m!.row.messageId).toBe('job-1');
    const peek = await cli('peek', 'jobs', '--json');
    expect(JSON.parse(peek.stdout)[0]).toMatchObject({ subject: 'resize', applicationProperties: { tenant: 'contoso', attempt: 3 }, bodyPreview: 'hello' });
  });

  it('resubmits dead letters chosen by reason, counting first with --dry-run', async () => {
    await deadLetterAll(b.broker, 'orders', [
      { id: 'a', reason: 'Poison' },
      { id: 'b', reason: 'Timeout' },
    ]);
    const dry = await cli('messages', 'resubmit', 'orders', '--dlq', '--reason', 'Poison', '--dry-run');
    expect(dry.stdout).toMatch(/dry run \(orders\/\$DeadLetterQueue -> orders\): 1 message\(s\) would be resubmitted/);
    expect(counts('orders').deadLettered).toBe(2);
    const r = await cli('messages', 'resubmit', 'orders', '--dlq', '--reason', 'Poison');
    expect(r.stdout).toMatch(/resubmitted 1 message/);
    expect(counts('orders')).toMatchObject({ active: 1, deadLettered: 1 });
  });

  it('dead-letters by sequence number and deletes only with --yes', async () => {
    const [seq] = b.broker.browse('orders', { state: 'active' }).map((m) => m.row.seq);
    const dl = await cli('messages', 'dead-letter', 'orders', '--seq', String(seq), '--dead-letter-reason', 'Manual');
    expect(dl.stdout).toMatch(/dead-lettered 1 message/);
    const refused = await cli('messages', 'delete', 'orders', '--dlq', '--all');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/add --yes/);
    const del = await cli('messages', 'delete', 'orders', '--dlq', '--all', '--yes');
    expect(del.stdout).toMatch(/deleted 2 message/);
    expect(counts('orders').deadLettered).toBe(0);
  });

  it('prints a message\'s delivery history: the attempt, how it ended and the dead-letter event (issue 39)', async () => {
    await deadLetterAll(b.broker, 'audit', [{ id: 'h1', reason: 'Broken' }]);
    const [m] = b.broker.browse('audit/$DeadLetterQueue');
    const r = await cli('messages', 'history', 'audit', String(m!.row.seq), '--dlq');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/attempt 1 locked \(receive\) until /);
    expect(r.stdout).toMatch(/attempt 1 ended: deadLettered \(Broken: because Broken\)/);
    expect(r.stdout).toMatch(/deadLettered \(Broken\)/);
    const json = await cli('messages', 'history', 'audit', String(m!.row.seq), '--dlq', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ deliveries: [{ n: 1, end: { how: 'deadLettered', reason: 'Broken' } }], overlaps: [], pattern: null });
    const bad = await cli('messages', 'history', 'jobs', 'x');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/SEQ "x": must be a sequence number/);
  });

  it('reports a bad value as one line naming the field', async () => {
    const r = await cli('messages', 'send', 'jobs', '--body', 'x', '--schedule', 'tomorrow');
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(/^peeklock: BadRequest: scheduledEnqueueTimeUtc = "tomorrow"/);
    const none = await cli('messages', 'delete', 'jobs', '--yes');
    expect(none.stderr).toMatch(/choose the messages/);
  });
});
