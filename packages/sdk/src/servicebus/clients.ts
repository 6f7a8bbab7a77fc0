// The one place our code builds Service Bus clients. For the embedded emulator (UseDevelopmentEmulator=true)
// the data-plane client already speaks plain AMQP, but the admin client always builds https:// URLs; a
// pipeline policy sends those requests over plain HTTP to the emulator's port instead.

import {
  ServiceBusAdministrationClient,
  ServiceBusClient,
  type ServiceBusAdministrationClientOptions,
  type ServiceBusClientOptions,
} from '@azure/service-bus';
import { parseConnectionString, type ServiceBusConnectionInfo } from './connection-string.ts';
import { parseNamespace, type ServiceBusConnection } from './namespace.ts';
import { defaultAzureCredential } from '../identity/credential.ts';
import { unrefTimersOnClose } from './closeClient.ts';
import { boundedClose, type CloseLogger } from './boundedClose.ts';
import { defaultSdkLogger } from '../logger.ts';

// The policy type of the admin client's own pipeline (core-rest-pipeline is not a direct dependency).
type PipelinePolicy = Parameters<ServiceBusAdministrationClient['pipeline']['addPolicy']>[0];

/** The AMQP port core-amqp uses for the emulator when the Endpoint names none; the admin plane shares it. */
export const DEFAULT_EMULATOR_PORT = 5672;

export interface ServiceBusClients {
  client: ServiceBusClient;
  admin: ServiceBusAdministrationClient;
  isEmulator: boolean;
  /** What the connection setting says, without secrets. */
  info: ServiceBusConnectionInfo;
  /**
   * Closes the data-plane client (its links, then its connection), waiting at most `closeTimeoutMs`: a close the
   * broker had not answered when the connection dropped never ends by itself (boundedClose.ts). Past the bound it is
   * abandoned with a warning and this resolves.
   */
  close(): Promise<void>;
}

export interface CreateServiceBusClientsOptions {
  client?: ServiceBusClientOptions;
  /** Options for the admin client (retry and user-agent settings; see the SDK). */
  admin?: ServiceBusAdministrationClientOptions;
  /** The longest close() waits; default 30 s (DEFAULT_CLOSE_TIMEOUT_MS). */
  closeTimeoutMs?: number;
  /** Told when close() is abandoned; default the SDK's logger (NIMBUS_LOG_LEVEL). */
  logger?: CloseLogger;
}

/**
 * Rewrites the admin client's https://host[:port]/… URLs to http:// on the emulator's host and port. The port
 * is set explicitly: a URL object drops :443 for https, which would otherwise turn into port 80.
 */
export function emulatorHttpPolicy(hostname: string, port: number): PipelinePolicy {
  return {
    name: 'nimbusEmulatorPlainHttp',
    sendRequest(request, next) {
      const url = new URL(request.url);
      if (url.protocol === 'https:') {
        url.protocol = 'http:';
        url.hostname = hostname;
        url.port = String(port);
        request.url = url.toString();
      }
      request.allowInsecureConnection = true;
      return next(request);
    },
  };
}

/**
 * Builds the data-plane and admin clients from a connection string (SAS key; the emulator too) or a namespace
 * with a token credential (Microsoft Entra: managed identity, developer sign-in). Both clients share the credential.
 */
export function createServiceBusClients(
  connection: ServiceBusConnection,
  options: CreateServiceBusClientsOptions = {},
): ServiceBusClients {
  if (typeof connection !== 'string') {
    const fullyQualifiedNamespace = parseNamespace(connection.fullyQualifiedNamespace);
    const credential = connection.credential ?? defaultAzureCredential();
    // Its close() leaves nothing that keeps the process alive (closeClient.ts): a SIGTERM handler that closes the client
    // lets the process exit.
    const client = unrefTimersOnClose(new ServiceBusClient(fullyQualifiedNamespace, credential, options.client));
    const admin = new ServiceBusAdministrationClient(fullyQualifiedNamespace, credential, options.admin);
    return { client, admin, isEmulator: false, info: namespaceInfo(fullyQualifiedNamespace), close: boundedClientClose(client, options) };
  }
  const info = parseConnectionString(connection);
  const client = unrefTimersOnClose(new ServiceBusClient(info.connectionString, options.client));
  const admin = new ServiceBusAdministrationClient(info.connectionString, options.admin);
  if (info.useDevelopmentEmulator) {
    // additionalPolicies in the constructor options are not applied by this SDK version; addPolicy is.
    admin.pipeline.addPolicy(emulatorHttpPolicy(info.hostname, info.port ?? DEFAULT_EMULATOR_PORT));
  }
  return {
    client,
    admin,
    isEmulator: info.useDevelopmentEmulator,
    info,
    close: boundedClientClose(client, options),
  };
}

/** The clients' close(): the client's, bounded; a close abandoned is not an error (the caller goes on shutting down). */
function boundedClientClose(client: ServiceBusClient, options: CreateServiceBusClientsOptions): () => Promise<void> {
  return async () => {
    await boundedClose('closing the Service Bus client', () => client.close(), {
      timeoutMs: options.closeTimeoutMs,
      logger: options.logger ?? defaultSdkLogger(),
      details: { namespace: client.fullyQualifiedNamespace },
    });
  };
}

/** What a namespace connection says, in the shape a connection string's info has (there is no secret in it). */
function namespaceInfo(fullyQualifiedNamespace: string): ServiceBusConnectionInfo {
  const [hostname, port] = fullyQualifiedNamespace.split(':') as [string, string | undefined];
  const endpoint = `sb://${fullyQualifiedNamespace}/`;
  const info = {
    endpoint,
    hostname,
    ...(port === undefined ? {} : { port: Number(port) }),
    fullyQualifiedNamespace,
    authentication: 'tokenCredential',
    useDevelopmentEmulator: false,
    redacted: `Endpoint=${endpoint};Authentication=TokenCredential`,
  } as const;
  // No connection string exists on this path; the property stays for the interface, empty and not enumerable.
  Object.defineProperty(info, 'connectionString', { value: '', enumerable: false });
  return info as typeof info & { readonly connectionString: string };
}
