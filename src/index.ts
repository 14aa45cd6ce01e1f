// The package's main export: run a broker inside your own process (tests, tools). The CLI (`peeklock start`) is the
// other way in; both start the same broker.

export {
  startBroker,
  type StartBrokerOptions,
  type EmbeddedBroker,
  type EmbeddedFaults,
  type NamespaceOptions,
  type CreatedNamespace,
} from './app/embedded.js';
export type { SendFailure } from './broker/runtime/faults.js';
export type { QueuePatch, QueueView } from './broker/broker.js';
export { ConfigError } from './config/load.js';
export { remoteBroker, type BrokerAddress, type RemoteBroker } from './app/remote.js';
