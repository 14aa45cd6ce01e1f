// Drives the stable administration client (@azure/service-bus 7.9.5), unmodified and with default options,
// through every entity kind. 7.9.5 always dials HTTPS on the port named in Endpoint, so the broker's CA must be
// trusted: the only thing the parent sets is NODE_EXTRA_CA_CERTS (Node reads it at start, hence a child
// process). Prints one JSON object per call: { call, ok, value } or { call, ok: false, code, statusCode }.
//
// Usage: node admin_client_795.mjs <admin connection string> <data connection string> <no-Manage connection string>

import process from 'node:process';
import { ServiceBusAdministrationClient, ServiceBusClient } from '@azure/service-bus';

const [adminCs, dataCs, noManageCs] = process.argv.slice(2);
const admin = new ServiceBusAdministrationClient(adminCs);
const data = new ServiceBusClient(dataCs);
const calls = [];

async function call(name, fn) {
  try {
    const value = await fn();
    calls.push({ call: name, ok: true, value });
    return value;
  } catch (err) {
    calls.push({ call: name, ok: false, code: err.code, statusCode: err.statusCode, message: String(err.message).slice(0, 200) });
    return undefined;
  }
}
const pick = (o, keys) => Object.fromEntries(keys.map((k) => [k, o?.[k]]));

// Queues
await call('createQueue(q1)', async () => pick(await admin.createQueue('q1'), ['name', 'lockDuration', 'maxDeliveryCount']));
await call('createQueue(q1) again', () => admin.createQueue('q1'));
await call('getQueue(q1)', async () => pick(await admin.getQueue('q1'), ['name', 'lockDuration']));
await call('getQueue(missing)', () => admin.getQueue('missing'));
await call('queueExists(q1)', () => admin.queueExists('q1'));
await call('queueExists(missing)', () => admin.queueExists('missing'));
await call('updateQueue(q1, lockDuration PT45S)', async () => {
  const q = await admin.getQueue('q1');
  return pick(await admin.updateQueue({ ...q, lockDuration: 'PT45S', maxDeliveryCount: 4 }), ['lockDuration', 'maxDeliveryCount']);
});
await call('getQueueRuntimeProperties(q1) after 3 sends, 1 schedule, 1 dead-letter', async () => {
  const sender = data.createSender('q1');
  await sender.sendMessages([{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
  await sender.scheduleMessages({ body: 'later' }, new Date(Date.now() + 3_600_000));
  const receiver = data.createReceiver('q1');
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  await receiver.deadLetterMessage(m, { deadLetterReason: 'test', deadLetterErrorDescription: 'admin 7.9.5' });
  await receiver.close();
  const rt = await admin.getQueueRuntimeProperties('q1');
  return pick(rt, ['activeMessageCount', 'deadLetterMessageCount', 'scheduledMessageCount', 'totalMessageCount']);
});
await call('listQueues() 250 queues byPage({ maxPageSize: 100 })', async () => {
  const names = Array.from({ length: 249 }, (_, i) => `page-${String(i).padStart(3, '0')}`);
  for (let i = 0; i < names.length; i += 25) await Promise.all(names.slice(i, i + 25).map((n) => admin.createQueue(n)));
  const sizes = [];
  for await (const page of admin.listQueues().byPage({ maxPageSize: 100 })) sizes.push(page.length);
  return sizes;
});
await call('deleteQueue(q1)', async () => (await admin.deleteQueue('q1'), true));
await call('deleteQueue(q1) again', () => admin.deleteQueue('q1'));

// Topics
await call('createTopic(t1)', async () => pick(await admin.createTopic('t1'), ['name', 'status']));
await call('createTopic(t1) again', () => admin.createTopic('t1'));
await call('getTopic(t1)', async () => pick(await admin.getTopic('t1'), ['name']));
await call('topicExists(t1)', () => admin.topicExists('t1'));
await call('updateTopic(t1, ttl PT1H)', async () => {
  const t = await admin.getTopic('t1');
  return pick(await admin.updateTopic({ ...t, defaultMessageTimeToLive: 'PT1H' }), ['defaultMessageTimeToLive']);
});
await call('listTopics()', async () => {
  const names = [];
  for await (const t of admin.listTopics()) names.push(t.name);
  return names;
});

// Subscriptions
await call('createSubscription(t1, all)', async () => pick(await admin.createSubscription('t1', 'all'), ['subscriptionName', 'lockDuration']));
await call('getRule(t1, all, $Default)', async () => (await admin.getRule('t1', 'all', '$Default')).filter);
await call('createSubscription(t1, red) with a default rule', async () =>
  pick(await admin.createSubscription('t1', 'red', { defaultRuleOptions: { name: 'only-red', filter: { sqlExpression: "color = 'red'" } } }), ['subscriptionName']),
);
await call('createSubscription(t1, all) again', () => admin.createSubscription('t1', 'all'));
await call('getSubscription(t1, all)', async () => pick(await admin.getSubscription('t1', 'all'), ['subscriptionName', 'topicName']));
await call('subscriptionExists(t1, all)', () => admin.subscriptionExists('t1', 'all'));
await call('subscriptionExists(t1, missing)', () => admin.subscriptionExists('t1', 'missing'));
await call('updateSubscription(t1, all, lockDuration PT2M)', async () => {
  const s = await admin.getSubscription('t1', 'all');
  return pick(await admin.updateSubscription({ ...s, lockDuration: 'PT2M' }), ['lockDuration']);
});
await call('listSubscriptions(t1)', async () => {
  const names = [];
  for await (const s of admin.listSubscriptions('t1')) names.push(s.subscriptionName);
  return names;
});
await call('listRules(t1, red)', async () => {
  const names = [];
  for await (const r of admin.listRules('t1', 'red')) names.push(r.name);
  return names;
});

// Rules
await call('deleteRule(t1, all, $Default)', async () => (await admin.deleteRule('t1', 'all', '$Default'), true));
await call('createRule(t1, all, big) SQL filter and action', async () =>
  pick(await admin.createRule('t1', 'all', 'big', { sqlExpression: 'size > 10' }, { sqlExpression: "SET tier = 'big'" }), ['name', 'filter', 'action']),
);
await call('createRule(t1, all, param) SQL filter with parameters', async () =>
  (await admin.createRule('t1', 'all', 'param', { sqlExpression: 'size > @min', sqlParameters: { '@min': 100 } })).filter,
);
await call('createRule(t1, all, vip) correlation filter', async () =>
  (await admin.createRule('t1', 'all', 'vip', { correlationId: 'c1', applicationProperties: { level: 'gold', n: 3, ok: true } })).filter,
);
await call('createRule(t1, all, big) again', () => admin.createRule('t1', 'all', 'big', { sqlExpression: '1=1' }));
await call('getRule(t1, all, vip)', async () => pick(await admin.getRule('t1', 'all', 'vip'), ['name', 'filter']));
await call('ruleExists(t1, all, big)', () => admin.ruleExists('t1', 'all', 'big'));
await call('updateRule(t1, all, big) filter size > 20', async () => {
  const r = await admin.getRule('t1', 'all', 'big');
  return (await admin.updateRule('t1', 'all', { ...r, filter: { sqlExpression: 'size > 20' } })).filter;
});
await call('routing through the rules (sent: size 1, size 30, correlation c1)', async () => {
  await data.createSender('t1').sendMessages([
    { body: 'small', applicationProperties: { size: 1 } },
    { body: 'large', applicationProperties: { size: 30 } },
    { body: 'gold', correlationId: 'c1', applicationProperties: { level: 'gold', n: 3, ok: true } },
  ]);
  const receiver = data.createReceiver('t1', 'all', { receiveMode: 'receiveAndDelete' });
  const got = [];
  for (let i = 0; i < 5 && got.length < 2; i++) got.push(...(await receiver.receiveMessages(10, { maxWaitTimeInMs: 1000 })));
  await receiver.close();
  return got.map((m) => ({ body: m.body, tier: m.applicationProperties?.tier ?? null })).sort((a, b) => a.body.localeCompare(b.body));
});
await call('listRules(t1, all)', async () => {
  const names = [];
  for await (const r of admin.listRules('t1', 'all')) names.push(r.name);
  return names;
});
await call('deleteRule(t1, all, vip)', async () => (await admin.deleteRule('t1', 'all', 'vip'), true));
await call('getRule(t1, all, vip) after delete', () => admin.getRule('t1', 'all', 'vip'));
await call('deleteSubscription(t1, red)', async () => (await admin.deleteSubscription('t1', 'red'), true));
await call('getTopicRuntimeProperties(t1)', async () => pick(await admin.getTopicRuntimeProperties('t1'), ['subscriptionCount']));
await call('deleteTopic(t1)', async () => (await admin.deleteTopic('t1'), true));
await call('topicExists(t1) after delete', () => admin.topicExists('t1'));
await call('getNamespaceProperties()', async () => pick(await admin.getNamespaceProperties(), ['name', 'messagingSku']));

// Forwarding and entity SAS rules, as the SDK's atomManagement tests send them (name or absolute URI; two rules)
const endpoint = `sb://${/Endpoint=sb:\/\/([^;/]+)/.exec(adminCs)[1]}/`;
const fwd = (o) => ({ forwardTo: o?.forwardTo, forwardDeadLetteredMessagesTo: o?.forwardDeadLetteredMessagesTo });
await call('forwarding: createQueue(fq1) forwardTo a name', async () => {
  await admin.createQueue('fwd-target');
  return fwd(await admin.createQueue('fq1', { forwardTo: 'fwd-target', forwardDeadLetteredMessagesTo: 'fwd-target' }));
});
await call('forwarding: createQueue(fq2) forwardTo an absolute URI', async () =>
  fwd(await admin.createQueue('fq2', { forwardTo: `${endpoint}fwd-target`, forwardDeadLetteredMessagesTo: `${endpoint}fwd-target` })),
);
await call('forwarding: updateQueue(fq2) forwardTo a name', async () =>
  fwd(await admin.updateQueue({ ...(await admin.getQueue('fq2')), forwardTo: 'fwd-target', forwardDeadLetteredMessagesTo: 'fwd-target' })),
);
await call('forwarding: createSubscription(ft, s1) forwardTo an upper-case absolute URI', async () => {
  await admin.createTopic('ft');
  const upper = `${endpoint}fwd-target`.toUpperCase();
  return fwd(await admin.createSubscription('ft', 's1', { forwardTo: upper, forwardDeadLetteredMessagesTo: upper }));
});
await call('forwarding: updateSubscription(ft, s1) forwardTo a name', async () =>
  fwd(await admin.updateSubscription({ ...(await admin.getSubscription('ft', 's1')), forwardTo: 'fwd-target', forwardDeadLetteredMessagesTo: 'fwd-target' })),
);
const rules = [
  { claimType: 'SharedAccessKey', accessRights: ['Send'], keyName: 'allClaims_v2', primaryKey: 'Ua5eLqBFbZhhBvFXvpTzLR1Vr2aDHy2BvOq0Fu4kcRw=', secondaryKey: 'm1+4E94Mc7Xm3Pl1DFXsHYgCNzXrcdpJH5Iq+m9QbHo=' },
  { claimType: 'SharedAccessKey', accessRights: ['Listen'], keyName: 'allClaims_v3', primaryKey: 'Ua5eLqBFbZhhBvFXvpTzLR1Vr2aDHy2BvOq0Fu4kcRw=', secondaryKey: 'm1+4E94Mc7Xm3Pl1DFXsHYgCNzXrcdpJH5Iq+m9QbHo=' },
];
await call('authorizationRules: createQueue(rq) with two rules', async () => (await admin.createQueue('rq', { authorizationRules: rules })).authorizationRules);
await call('authorizationRules: getQueue(rq)', async () => (await admin.getQueue('rq')).authorizationRules);
await call('authorizationRules: updateQueue(rq) with one rule', async () =>
  (await admin.updateQueue({ ...(await admin.getQueue('rq')), authorizationRules: [rules[1]] })).authorizationRules,
);
await call('partitioning: createQueue(pq) partitioned', async () => (await admin.createQueue('pq', { enablePartitioning: true })).maxSizeInMegabytes);

// A policy without Manage
const noManage = new ServiceBusAdministrationClient(noManageCs);
await call('createQueue(x) without Manage', () => noManage.createQueue('x'));

await data.close();
process.stdout.write(JSON.stringify(calls) + '\n');
