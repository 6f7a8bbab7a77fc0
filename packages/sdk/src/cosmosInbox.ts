// A durable inbox store on Cosmos DB (or the embedded @vercel/cosmosdb-server): the idempotent consumer survives a
// host restart, a crash and a second instance of the endpoint, which the process-local MemoryInboxStore cannot.
// One document per (endpoint, MessageId) key in its own container, keyed and partitioned by the inbox key, so both
// operations are point reads/writes: `has` is a read by id, `add` an upsert (recording twice is harmless).
// Retention is enforced twice: the container gets a default TTL, so a real account deletes old entries itself
// (otherwise it grows by one document per handled message, forever), and every read checks the age anyway, because
// the embedded server has no TTL and the answer must not depend on when a background sweep happened to run.
// Not re-exported from ./index.ts: this module loads @azure/cosmos, which a host without it should not pay for.
import type { Container, CosmosClient } from '@azure/cosmos';
import { z } from 'zod';
import { describeIssues } from './contract/index.ts';
import { cosmosConnectionSchema, createCosmosClient } from './cosmosClient.ts';
import type { TokenCredential } from './identity/credential.ts';
import { DEFAULT_INBOX_RETENTION_MS } from './inbox.ts';
import type { InboxStore } from './inbox.ts';

export const cosmosInboxOptionsSchema = cosmosConnectionSchema.extend({
  /**
   * Used when there is no `key` (Microsoft Entra sign-in; the identity needs "Cosmos DB Built-in Data
   * Contributor"). Default DefaultAzureCredential.
   */
  credential: z
    .custom<TokenCredential>(
      (v) => typeof v === 'object' && v !== null && typeof (v as { getToken?: unknown }).getToken === 'function',
      'credential must be a TokenCredential (an object with getToken)',
    )
    .optional(),
  /**
   * How many times the Cosmos client retries a 429 itself (honouring the server's retry-after, 30 s in all at
   * most) before `has`/`add` fail. Default 9, the Cosmos SDK's own: an inbox call that still fails is a transient
   * outcome, which holds the session a lock duration and spends a delivery, so a short throttle is better waited
   * out here. (The connection default, 0, is the Resolver's, which runs its own throttle budget.)
   */
  throttleRetries: z.number().int().min(0).max(20).default(9),
  /** The container of inbox entries (created when missing, partition key /id). */
  container: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[^/\\?#]+$/, 'container name must not contain / \\ ? #')
    .default('inbox'),
  /**
   * An entry older than this no longer counts as handled. Default 7 days, as the in-memory store. Also the
   * container's default TTL (rounded up to whole seconds) when this store creates the container.
   */
  retentionMs: z.number().int().positive().default(DEFAULT_INBOX_RETENTION_MS),
});
export type CosmosInboxOptions = z.input<typeof cosmosInboxOptionsSchema>;

const entrySchema = z.object({ id: z.string(), handledAt: z.string() });

export class CosmosInboxStore implements InboxStore {
  private readonly client: CosmosClient;
  private readonly container: Container;
  private readonly retentionMs: number;
  private readonly now: () => Date;

  private constructor(client: CosmosClient, container: Container, retentionMs: number, now: () => Date) {
    this.client = client;
    this.container = container;
    this.retentionMs = retentionMs;
    this.now = now;
  }

  /** Validates the options (a bad value throws naming the field), creates database and container when missing. */
  static async open(
    options: CosmosInboxOptions,
    now: () => Date = () => new Date(),
  ): Promise<CosmosInboxStore> {
    const parsed = cosmosInboxOptionsSchema.safeParse(options);
    if (!parsed.success) throw new Error(`invalid Cosmos inbox settings: ${describeIssues(parsed.error)}`);
    const conn = parsed.data;
    const client = createCosmosClient(conn);
    try {
      const { database } = await client.databases.createIfNotExists({ id: conn.database });
      const { container } = await database.containers.createIfNotExists({
        id: conn.container,
        partitionKey: { paths: ['/id'], version: 2 },
        // createIfNotExists leaves an existing container as it is: one created before this setting existed needs
        // a one-off `container.replace` with the same defaultTtl (see docs/sdk.md).
        defaultTtl: ttlSeconds(conn.retentionMs),
      });
      return new CosmosInboxStore(client, container, conn.retentionMs, now);
    } catch (error) {
      client.dispose();
      throw error;
    }
  }

  async has(key: string): Promise<boolean> {
    // A missing document is `resource: undefined`: the client answers a point read's 404 itself, it does not throw.
    const { resource } = await this.container.item(key, key).read();
    if (resource === undefined) return false;
    const entry = entrySchema.safeParse(resource);
    // A document we cannot read is not proof of handling: run the handler rather than drop the message.
    if (!entry.success) return false;
    return this.now().getTime() - Date.parse(entry.data.handledAt) <= this.retentionMs;
  }

  async add(key: string, at: Date): Promise<void> {
    await this.container.items.upsert({ id: key, handledAt: at.toISOString() });
  }

  close(): void {
    this.client.dispose();
  }
}

/** The container TTL for a retention: whole seconds, rounded up so Cosmos never deletes an entry a read still counts. */
export function ttlSeconds(retentionMs: number): number {
  return Math.ceil(retentionMs / 1000);
}

/** Opens a Cosmos-backed inbox store; pass it as `inbox` to the subscriber host. Call `close()` when done. */
export function createCosmosInboxStore(options: CosmosInboxOptions): Promise<CosmosInboxStore> {
  return CosmosInboxStore.open(options);
}
