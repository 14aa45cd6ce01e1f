// `peeklock entities create|update|delete|list` (the real CLI, `node bin/peeklock.js`) against an in-process broker:
// every kind through the management plane, options mapped to properties, and one-line refusals with exit 2 for bad
// input (naming the option and its range) and exit 1 for what the broker refuses.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/child-broker.js';
import { startHttpBroker, type HttpBroker } from '../helpers/http.js';

let b: HttpBroker;

beforeAll(async () => {
  b = await startHttpBroker([{ Name: 'configured' }], {
    broker: {
      SharedAccessPolicies: [
        { Name: 'RootManageSharedAccessKey', Key: 'SAS_KEY_VALUE', Rights: ['Manage', 'Send', 'Listen'] },
        { Name: 'listener', Key: 'listen-key', Rights: ['Listen'] },
      ],
    },
  });
});
afterAll(() => b.close());

const cli = (...args: string[]) => runCli(['entities', ...args, '--url', b.base]);

describe('peeklock entities create / update / delete / list', () => {
  it('creates a queue with the given properties and the service defaults for the rest, updates and deletes it', async () => {
    const created = await cli('create', 'queue', 'orders', '--lock-duration', 'PT30S', '--max-delivery-count', '4', '--requires-session', '--user-metadata', 'team a');
    expect(created).toMatchObject({ code: 0, stdout: "created queue 'orders'\n" });
    const q = b.broker.getQueue('orders')!;
    expect(q.description.settings).toMatchObject({ lockDurationMs: 30_000, maxDeliveryCount: 4, requiresSession: true, defaultMessageTtlMs: null });
    expect(q.description.userMetadata).toBe('team a');
    const updated = await cli('update', 'queue', 'orders', '--max-delivery-count', '7', '--json');
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ MaxDeliveryCount: '7', LockDuration: 'PT30S' });
    const listed = await cli('list', 'queues');
    expect(listed.stdout).toMatch(/^NAME\s+LOCK\s+MAX-DELIVERY\s+SESSIONS\s+STATUS\s+ACTIVE\s+DEAD-LETTERED\s+FORWARD-TO$/m);
    expect(listed.stdout).toMatch(/^orders\s+PT30S\s+7\s+true\s+Active\s+0\s+0\s*$/m);
    expect(listed.stdout).toMatch(/^configured\s/m);
    expect((await cli('delete', 'queue', 'orders')).stdout).toBe("deleted queue 'orders'\n");
    expect(b.broker.getQueue('orders')).toBeUndefined();
  });

  it('creates a topic, a subscription with a forward and a SQL default rule, and SQL and correlation rules', async () => {
    expect((await cli('create', 'queue', 'sink')).code).toBe(0);
    expect((await cli('create', 'topic', 'events', '--default-message-ttl', 'P1D')).code).toBe(0);
    const sub = await cli('create', 'subscription', 'events', 'audit', '--forward-to', 'sink', '--sql-filter', 'size > @min', '--param', '@min=10');
    expect(sub.code).toBe(0);
    expect(b.broker.getSubscription('events', 'audit')!.description.settings.forwardTo).toBe('sink');
    expect(b.broker.getRule('events', 'audit', '$Default')!.description.filter).toEqual({ type: 'sql', expression: 'size > @min', parameters: { '@min': 10 } });
    expect((await cli('create', 'subscription', 'events', 'all')).code).toBe(0);
    const corr = await cli('create', 'rule', 'events', 'all', 'vip', '--correlation', 'correlation-id=c1', '--correlation', 'tier=gold', '--sql-action', "SET seen = 'yes'");
    expect(corr.code).toBe(0);
    expect(b.broker.getRule('events', 'all', 'vip')!.description).toMatchObject({
      filter: { type: 'correlation', correlationId: 'c1', properties: { tier: 'gold' } },
      action: "SET seen = 'yes'",
    });
    const rules = await cli('list', 'rules', 'events', 'all');
    expect(rules.stdout).toMatch(/^\$Default\s+1=1\s*$/m);
    expect(rules.stdout).toMatch(/^vip\s+CorrelationId=c1\s+SET seen = 'yes'$/m);
    const subs = await cli('list', 'subscriptions', 'events');
    expect(subs.stdout).toMatch(/^audit\s+PT1M\s+10\s+false\s+Active\s+0\s+0\s+sink$/m);
    expect((await cli('list', 'topics')).stdout).toMatch(/^events\s+2\s+P1D\s+Active$/m);
    expect((await cli('update', 'rule', 'events', 'all', 'vip', '--sql-filter', "tier = 'silver'")).code).toBe(0);
    expect(b.broker.getRule('events', 'all', 'vip')!.description).toMatchObject({ filter: { type: 'sql', expression: "tier = 'silver'" }, action: null });
    expect((await cli('delete', 'rule', 'events', 'all', 'vip')).code).toBe(0);
    expect((await cli('delete', 'subscription', 'events', 'all')).code).toBe(0);
    expect((await cli('delete', 'topic', 'events')).code).toBe(0);
    expect(b.broker.getTopic('events')).toBeUndefined();
  });

  it('refuses out-of-range and misplaced options in one line naming the option, with exit 2, sending nothing', async () => {
    const lock = await cli('create', 'queue', 'bad', '--lock-duration', 'PT1H');
    expect(lock.code).toBe(2);
    expect(lock.stderr).toBe("peeklock: option '--lock-duration <iso>' argument 'PT1H' is invalid. must be an ISO 8601 duration, PT5S to PT5M\n");
    const mdc = await cli('create', 'queue', 'bad', '--max-delivery-count', '0');
    expect(mdc).toMatchObject({ code: 2, stderr: "peeklock: option '--max-delivery-count <n>' argument '0' is invalid. must be an integer from 1 to 2147483647\n" });
    const idle = await cli('create', 'queue', 'bad', '--auto-delete-on-idle', 'PT1M');
    expect(idle.stderr).toMatch(/^peeklock: option '--auto-delete-on-idle <iso>' argument 'PT1M' is invalid\. must be an ISO 8601 duration, at least PT5M\n$/);
    const status = await cli('create', 'queue', 'bad', '--status', 'Paused');
    expect(status.code).toBe(2);
    expect(status.stderr.split('\n')).toHaveLength(2);
    expect(status.stderr).toMatch(/--status/);
    const misplaced = await cli('create', 'topic', 'bad', '--lock-duration', 'PT30S');
    expect(misplaced).toMatchObject({ code: 2, stderr: 'peeklock: --lock-duration does not apply to a topic\n' });
    const names = await cli('create', 'subscription', 'only-topic');
    expect(names).toMatchObject({ code: 2, stderr: 'peeklock: a subscription is named by <topic> <subscription>; got 1 name(s)\n' });
    const kind = await cli('create', 'exchange', 'x');
    expect(kind.code).toBe(2);
    expect(kind.stderr).toMatch(/^peeklock: unknown entity kind 'exchange'; expected one of queue, topic, subscription, rule\n$/);
    const rule = await cli('create', 'rule', 't', 's', 'r');
    expect(rule).toMatchObject({ code: 2, stderr: 'peeklock: a rule needs --sql-filter <expr> or --correlation <key=value>\n' });
    expect(b.broker.getQueue('bad')).toBeUndefined();
  });

  it("reports the broker's refusals in one line with exit 1: a taken name, a missing entity, a bad filter, a key without Manage", async () => {
    const dup = await cli('create', 'queue', 'configured');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/^peeklock: .*configured.* already exists.*\n$/);
    const missing = await cli('delete', 'queue', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^peeklock: .*nope.*could not be found.*\n$/);
    await cli('create', 'topic', 'tt');
    await cli('create', 'subscription', 'tt', 'ss');
    const sql = await cli('create', 'rule', 'tt', 'ss', 'r', '--sql-filter', 'a = @missing');
    expect(sql.code).toBe(1);
    expect(sql.stderr).toMatch(/^peeklock: .*@missing.*\n$/);
    const denied = await runCli(['entities', 'create', 'queue', 'x', '--url', b.base, '--key-name', 'listener', '--key', 'listen-key']);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^peeklock: the broker refused the key 'listener': Manage,EntityRead claims required.*\n$/);
  });
});
