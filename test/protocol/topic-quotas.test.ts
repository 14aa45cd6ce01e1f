// The per-topic quotas and the enumerate-rules bound on the wire (issue 38 item 4): a rule or subscription past
// Service Bus's quota is refused with amqp:resource-limit-exceeded on `$management` and HTTP 403 on the management
// plane (which the JS administration client maps to QuotaExceededError), and one enumerate-rules reply lists at
// most MAX_RULES_PAGE rules, the clients paging on with `skip`.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import rhea from 'rhea';
import { ServiceBusAdministrationClient } from '@azure/service-bus-beta';
import { MAX_SQL_FILTERS_PER_TOPIC } from '../../src/filters/rules.js';
import { MAX_RULES_PAGE } from '../../src/broker/runtime/limits.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { connect } from '../helpers/amqp-client.js';
import { startTestBroker, type TestBroker } from '../helpers/broker.js';
import { management, type Management } from '../helpers/fault.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const t = rhea.types as Any;
const RULES_PER_SUB = 100;
const SUBS = MAX_SQL_FILTERS_PER_TOPIC / RULES_PER_SUB;

let broker: TestBroker;
let conn: Any;
let mgmt: Management;
let admin: ServiceBusAdministrationClient;

beforeAll(async () => {
  broker = await startTestBroker([], { store: new MemoryStore() });
  await broker.broker.createTopic('t', {});
  // The topic filled to its SQL quota in-process: SUBS subscriptions, each with $Default and 99 more SQL rules.
  for (let s = 0; s < SUBS; s++) {
    await broker.broker.createSubscription('t', `s${s}`, {});
    for (let r = 1; r < RULES_PER_SUB; r++) {
      await broker.broker.addRule(`t/Subscriptions/s${s}`, { name: `r${r}`, filter: { type: 'sql', expression: `n = ${r}` }, action: null });
    }
  }
  conn = await connect(broker.port);
  mgmt = await management(conn, 't/Subscriptions/s0');
  const cs = `Endpoint=sb://127.0.0.1:${broker.httpPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`;
  admin = new ServiceBusAdministrationClient(cs, { retryOptions: { maxRetries: 0 } });
}, 120_000);

afterAll(async () => {
  conn?.close();
  await broker?.dispose();
});

describe('per-topic quotas on the wire', () => {
  it('refuses add-rule past the SQL filter quota with amqp:resource-limit-exceeded; a correlation rule still fits', async () => {
    const sql = await mgmt.request('com.microsoft:add-rule', {
      'rule-name': 'over',
      'rule-description': { 'sql-filter': { expression: '1=1' }, 'correlation-filter': null, 'sql-rule-action': null },
    });
    expect({ status: sql.status, condition: sql.condition }).toEqual({ status: 403, condition: 'amqp:resource-limit-exceeded' });
    const corr = await mgmt.request('com.microsoft:add-rule', {
      'rule-name': 'corr',
      'rule-description': { 'sql-filter': null, 'correlation-filter': { 'correlation-id': 'x' }, 'sql-rule-action': null },
    });
    expect(corr.status).toBe(200);
  });

  it('refuses a rule and a subscription past the quota over the management plane with 403 (QuotaExceededError)', async () => {
    await expect(admin.createRule('t', 's1', 'over', { sqlExpression: '1=1' })).rejects.toMatchObject({ code: 'QuotaExceededError', statusCode: 403 });
    // A new subscription brings its $Default rule, a SQL filter.
    await expect(admin.createSubscription('t', 'extra')).rejects.toMatchObject({ code: 'QuotaExceededError', statusCode: 403 });
    expect(await admin.subscriptionExists('t', 'extra')).toBe(false);
  });
});

describe('enumerate-rules', () => {
  it(`lists at most MAX_RULES_PAGE (${MAX_RULES_PAGE}) rules per reply and pages on with skip`, async () => {
    const sub = 't/Subscriptions/many';
    await broker.broker.createSubscription('t', 'many', {}, { name: 'c0', filter: { type: 'correlation', label: 'c0' }, action: null });
    for (let r = 1; r < MAX_RULES_PAGE + 5; r++) await broker.broker.addRule(sub, { name: `c${r}`, filter: { type: 'correlation', label: `c${r}` }, action: null });
    const m = await management(conn, sub);
    const first = await m.request('com.microsoft:enumerate-rules', { top: t.wrap_int(2_147_483_647), skip: t.wrap_int(0) });
    expect(first.status).toBe(200);
    expect(first.body.rules).toHaveLength(MAX_RULES_PAGE);
    const rest = await m.request('com.microsoft:enumerate-rules', { top: t.wrap_int(2_147_483_647), skip: t.wrap_int(MAX_RULES_PAGE) });
    expect(rest.body.rules).toHaveLength(5);
    m.close();
  });
});
