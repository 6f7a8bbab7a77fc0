// Connecting to a Cosmos DB account (real, or the embedded server that cosmos.ts starts): the connection settings
// and the SDK client. Kept apart from cosmos.ts so that connecting does not load @vercel/cosmosdb-server.
import { CosmosClient } from '@azure/cosmos';
import { z } from 'zod';

export const cosmosConnectionSchema = z.object({
  endpoint: z.string().url(),
  key: z.string().min(1),
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
export type CosmosConnection = z.input<typeof cosmosConnectionSchema>;

/** Builds the SDK client. The key never leaves this object: it is not logged and not put in errors. */
export function createCosmosClient(conn: z.output<typeof cosmosConnectionSchema>): CosmosClient {
  return new CosmosClient({
    endpoint: conn.endpoint,
    key: conn.key,
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
