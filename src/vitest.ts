// `peeklock/vitest`: a vitest globalSetup that starts one broker for the whole test run and hands its address to
// every test file through vitest's provide/inject (tests run in other processes, so they get the address, not the
// object). In vitest.config.ts: `test: { globalSetup: ['peeklock/vitest'] }`; in a test:
// `const { connectionString } = inject('peeklock')`, and `remoteBroker(inject('peeklock'))` for the clock and
// faults. The broker has the manual clock and fault injection on; PEEKLOCK_CONFIG names a config file with your
// entities (else there are none: create them with the SDK's ServiceBusAdministrationClient). To type
// `inject('peeklock')`, declare `ProvidedContext { peeklock: PeeklockProvided }` in a `declare module 'vitest'`.

import { startBroker } from './app/embedded.js';
import type { BrokerAddress } from './app/remote.js';

export { remoteBroker, type BrokerAddress, type RemoteBroker } from './app/remote.js';

/** What the setup provides to tests as `inject('peeklock')`. */
export interface PeeklockProvided extends BrokerAddress {
  amqpPort: number;
  host: string;
}

/** The slice of vitest's TestProject the setup uses. */
export interface ProvidingProject {
  provide(key: 'peeklock', value: PeeklockProvided): void;
}

/** Starts the broker and provides `peeklock` ({ connectionString, amqpPort, httpPort, host }); returns the teardown. */
export default async function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  const broker = await startBroker({ config: process.env.PEEKLOCK_CONFIG || undefined, clock: 'manual', faults: true });
  project.provide('peeklock', {
    connectionString: broker.connectionString,
    amqpPort: broker.amqpPort,
    httpPort: broker.httpPort,
    host: broker.host,
  });
  return () => broker.stop();
}
