// Shared bits of the SDK protocol tests.

import { ServiceBusClient } from '@azure/service-bus';
import type { TestBroker } from './broker.js';

/** The ServiceBusError code of a failure (with core-amqp 4.4, several failed attempts arrive as an AggregateError). */
export function codeOf(err: unknown): string | undefined {
  const e = err as { code?: string; errors?: { code?: string }[] } | null | undefined;
  return e?.code ?? e?.errors?.[0]?.code;
}

/** An SDK client for a test broker that fails fast: no retries, 10 s operation timeout. */
export function sdkClient(broker: TestBroker, timeoutInMs = 10_000): ServiceBusClient {
  return new ServiceBusClient(broker.connectionString, { retryOptions: { maxRetries: 0, timeoutInMs } });
}
