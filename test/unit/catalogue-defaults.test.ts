// Service Bus's entity defaults are written once (src/config/defaults.ts): a queue, topic or subscription created
// with no options, and a Config.json entity that sets nothing, all get exactly that table; and the table holds what
// the service reports for an empty create, so an SDK's createQueue("q") keeps getting what it got.

import { describe, expect, it } from 'vitest';
import { SERVICE_BUS_DEFAULTS as D } from '../../src/config/defaults.js';
import { parseConfig } from '../../src/config/load.js';
import { Harness } from './helpers.js';

const queueDefaults = { settings: { ...D.settings }, ...D.entity, ...D.queue };
const { defaultMessageTtlMs, requiresDuplicateDetection, duplicateDetectionWindowMs, maxSizeBytes } = D.settings;
const topicDefaults = { defaultMessageTtlMs, requiresDuplicateDetection, duplicateDetectionWindowMs, maxSizeBytes, ...D.entity, ...D.topic };
const subscriptionDefaults = { settings: { ...D.settings }, ...D.entity, ...D.subscription };

describe('Service Bus defaults', () => {
  it('are the real service\'s for an empty create (REST Create Queue / Topic / Subscription)', () => {
    // The settings are pinned by config.test.ts (a queue with no Properties) and entity-admin.test.ts.
    expect(D.entity).toEqual({ enableBatchedOperations: true, status: 'Active', userMetadata: null, autoDeleteOnIdleMs: null });
    expect(D.queue).toEqual({ enablePartitioning: false, enableExpress: false, maxMessageSizeInKilobytes: 256 });
    expect(D.topic).toEqual({ enablePartitioning: false, enableExpress: false, supportOrdering: true, maxMessageSizeInKilobytes: 256 });
    expect(D.subscription).toEqual({ deadLetteringOnFilterEvaluationExceptions: true });
  });

  it('are what each kind created at run time with no options gets', async () => {
    const h = await Harness.start();
    expect((await h.broker.createQueue('fresh', {})).description).toStrictEqual(queueDefaults);
    expect((await h.broker.createTopic('t', {})).description).toStrictEqual(topicDefaults);
    expect((await h.broker.createSubscription('t', 's', {})).description).toStrictEqual(subscriptionDefaults);
  });

  it('are what a Config.json entity gets for everything its file leaves out', async () => {
    const file = { UserConfig: { Namespaces: [{ Name: 'ns', Queues: [{ Name: 'q' }], Topics: [{ Name: 't', Subscriptions: [{ Name: 's' }] }] }] } };
    const h = new Harness(undefined, undefined, parseConfig(JSON.stringify(file), 'defaults.json'));
    await h.boot();
    expect(h.broker.getQueue('q')!.description).toStrictEqual({ ...queueDefaults, authorizationRules: [] });
    expect(h.broker.getTopic('t')!.description).toStrictEqual({ ...topicDefaults, authorizationRules: [] });
    expect(h.broker.getSubscription('t', 's')!.description).toStrictEqual(subscriptionDefaults);
  });

  it('cannot be changed through an entity or by a caller', async () => {
    const h = await Harness.start();
    const v = await h.broker.createQueue('fresh', {});
    v.description.settings.lockDurationMs = 1;
    expect(() => ((D.settings as { maxDeliveryCount: number }).maxDeliveryCount = 3)).toThrow(TypeError);
    expect((await h.broker.createQueue('next', {})).description).toStrictEqual(queueDefaults);
  });
});
