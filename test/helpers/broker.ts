// Starts an in-process broker on 127.0.0.1, port 0, for protocol tests.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startPeeklock, type RunningBroker } from '../../src/app/app.js';
import type { Clock } from '../../src/broker/runtime/clock.js';
import type { Logger } from '../../src/log/logger.js';
import type { Store } from '../../src/store/store.js';
import { testConfig, type QueueSpec } from './config.js';

/** A running test broker plus the connection string the SDK uses for it. */
export interface TestBroker extends RunningBroker {
  connectionString: string;
  dataDir: string;
  /** Closes the broker and removes its data directory. */
  dispose(): Promise<void>;
}

/** Starts a broker with the given queues; LMDB in a fresh temp dir unless a store is given. */
export async function startTestBroker(
  queues: QueueSpec[],
  opts: { store?: Store; clock?: Clock; dataDir?: string; broker?: Record<string, unknown>; topics?: unknown[]; log?: Logger } = {},
): Promise<TestBroker> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'peeklock-test-'));
  const config = testConfig(queues, { DataDir: dataDir, ...opts.broker }, opts.topics);
  const log = opts.log ?? pino({ level: process.env.PEEKLOCK_TEST_LOG ?? 'silent' });
  const running = await startPeeklock({ config, store: opts.store, clock: opts.clock, log });
  return {
    ...running,
    dataDir,
    connectionString: `Endpoint=sb://127.0.0.1:${running.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
    dispose: async () => {
      await running.close();
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
