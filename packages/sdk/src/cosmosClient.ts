// Connecting to a Cosmos DB account (real, or the embedded server that cosmos.ts starts): the connection settings
// and the SDK client. Kept apart from cosmos.ts so that connecting does not load @vercel/cosmosdb-server.
import { CosmosClient } from '@azure/cosmos';
import { z } from 'zod';
import { defaultAzureCredential, type TokenCredential } from './identity/credential.ts';

export const cosmosConnectionSchema = z.object({
  endpoint: z.string().url(),
  /** The account key. Without one the client signs in with Microsoft Entra ID (`credential`, or DefaultAzureCredential). */
  key: z.string().min(1).optional(),
  database: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[^/\\?#]+$/, 'database name must not contain / \\ ? #')
    .default('nimbus'),
  /**
   * How many times the SDK itself retries a 429 before the store raises StoreThrottledError. Default 0: the
   * Resolver runs its own budget (ThrottleRetryCount + DeliveryCount) and must see every throttle; an
   * interactive reader may pass a few.
   */
  throttleRetries: z.number().int().min(0).max(20).default(0),
  /** Per-request timeout of the SDK, ms. */
  requestTimeoutMs: z.number().int().min(100).max(300_000).default(30_000),
});
export type CosmosConnection = z.input<typeof cosmosConnectionSchema> & {
  /** Used when there is no key; default DefaultAzureCredential (managed identity, developer sign-in). */
  credential?: TokenCredential;
};

/**
 * The contradiction between an endpoint and a missing key, as one sentence, or undefined. Microsoft Entra sign-in
 * is for https:// accounts: an http:// endpoint (the embedded server, the emulator) always takes its key.
 */
export function cosmosKeyProblem(endpoint: string | undefined, key: string | undefined): string | undefined {
  if (key !== undefined && key !== '') return undefined;
  if (endpoint === undefined || !/^http:\/\//i.test(endpoint.trim())) return undefined;
  return 'NIMBUS_COSMOS_KEY: not set, but NIMBUS_COSMOS_ENDPOINT is an http:// address (the embedded server takes its key; Microsoft Entra sign-in is for https:// accounts)';
}

/**
 * Builds the SDK client: with the key when there is one, else with a Microsoft Entra token credential (the
 * identity needs the data-plane role "Cosmos DB Built-in Data Contributor"; docs/deploy.md). The key never leaves
 * this object: it is not logged and not put in errors.
 */
export function createCosmosClient(
  conn: z.output<typeof cosmosConnectionSchema> & { credential?: TokenCredential | undefined },
): CosmosClient {
  return new CosmosClient({
    endpoint: conn.endpoint,
    ...(conn.key !== undefined ? { key: conn.key } : { aadCredentials: conn.credential ?? defaultAzureCredential() }),
    connectionPolicy: {
      // The embedded server advertises https locations at GET /; following them fails (EPROTO). A real
      // single-region account loses nothing; multi-region accounts pass the regional endpoint explicitly.
      enableEndpointDiscovery: false,
      requestTimeout: conn.requestTimeoutMs,
      retryOptions: {
        maxRetryAttemptCount: conn.throttleRetries,
        fixedRetryIntervalInMilliseconds: 0,
        maxWaitTimeInSeconds: conn.throttleRetries === 0 ? 0 : 30,
      },
    },
  });
}
