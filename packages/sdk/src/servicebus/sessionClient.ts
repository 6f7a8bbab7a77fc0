// A second Service Bus client on its own AMQP connection, for a host's session receivers. Why: an
// acceptNextSession already waiting on the broker cannot be cancelled (@azure/service-bus 7.9 drops the abort signal
// once the link attach is on the wire) and its attach timer keeps Node alive for the connection's 60 s operation
// timeout, even after client.close(). The broker's wait for a free session is the client's `retryOptions.timeoutInMs`,
// a per-client setting, so the only way to bound a pending accept without changing the caller's client (whose
// senders need a normal operation timeout) is a client of our own with a short one: a host's stop() then waits at
// most that long for its accepts to come back, and closes the connection.
//
// The caller's client does not expose its credential, so it is read from the client's connection context (the
// connection string or token credential it was built with). That is an internal of @azure/service-bus, checked
// here: when it is not there (another version, a mock), undefined is answered and the caller keeps the shared client.
import { ServiceBusClient } from '@azure/service-bus';
import type { ServiceBusClientOptions, TokenCredential } from '@azure/service-bus';
import { unrefTimersOnClose } from './closeClient.ts';

interface ConnectionContextLike {
  config?: { connectionString?: unknown };
  tokenCredential?: unknown;
}

const isTokenCredential = (value: unknown): value is TokenCredential =>
  typeof value === 'object' && value !== null && typeof (value as TokenCredential).getToken === 'function';

/**
 * A client on a new connection to the same namespace with the same credential, or undefined when unknown. Its close()
 * leaves nothing that keeps the process alive (closeClient.ts): the host closes it right after start()'s check or at
 * stop(), when its handshake may still be running.
 */
export function dedicatedClient(
  client: ServiceBusClient,
  options: ServiceBusClientOptions,
): ServiceBusClient | undefined {
  const context = (client as unknown as { _connectionContext?: ConnectionContextLike })._connectionContext;
  const connectionString = context?.config?.connectionString;
  // A SAS connection string carries its key; a client built from a credential carries the credential itself.
  if (typeof connectionString === 'string' && connectionString.includes('SharedAccess'))
    return unrefTimersOnClose(new ServiceBusClient(connectionString, options));
  if (isTokenCredential(context?.tokenCredential))
    return unrefTimersOnClose(
      new ServiceBusClient(client.fullyQualifiedNamespace, context.tokenCredential, options),
    );
  return undefined;
}
