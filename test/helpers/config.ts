// Builds configs for tests without a file.

import { parseConfig } from '../../src/config/load.js';
import type { PeeklockConfig } from '../../src/config/types.js';

/** A queue as written in the emulator config's `Queues[]`. */
export interface QueueSpec {
  Name: string;
  Properties?: Record<string, unknown>;
}

/** A validated config with the given queues, bound to 127.0.0.1 on an ephemeral port. */
export function testConfig(queues: QueueSpec[], broker: Record<string, unknown> = {}, topics: unknown[] = []): PeeklockConfig {
  const text = JSON.stringify({
    UserConfig: { Namespaces: [{ Name: 'sbemulatorns', Queues: queues, Topics: topics }], Logging: { Type: 'Console' } },
    Broker: { Host: '127.0.0.1', Port: 0, LogLevel: 'silent', ...broker },
  });
  return parseConfig(text, 'test');
}
