// Building Service Bus clients from configuration: every part of NimBus obtains its clients here.
export {
  createServiceBusClients,
  emulatorHttpPolicy,
  DEFAULT_EMULATOR_PORT,
  type CreateServiceBusClientsOptions,
  type ServiceBusClients,
} from './clients.ts';
export {
  parseConnectionString,
  ConnectionStringError,
  type ServiceBusConnectionInfo,
} from './connection-string.ts';
export {
  parseNamespace,
  serviceBusConnectionFromEnv,
  NamespaceError,
  CONNECTION_STRING_VARIABLE,
  NAMESPACE_VARIABLE,
  type ServiceBusConnection,
} from './namespace.ts';
// Entra identity for a namespace (and a Cosmos account) named without a key; @azure/identity loads on first use.
export { defaultAzureCredential, LazyDefaultAzureCredential, type TokenCredential } from '../identity/credential.ts';
export { closeServiceBusClient } from './closeClient.ts';
export {
  boundedClose,
  DEFAULT_CLOSE_TIMEOUT_MS,
  type BoundedCloseOptions,
  type CloseLogger,
} from './boundedClose.ts';
export { tolerateSlowDrain, SESSION_DRAIN_WAIT_MS } from './drainWait.ts';
