// A durable inbox store on Cosmos DB (or the embedded @vercel/cosmosdb-server): the idempotent consumer survives a
// host restart, a crash and a second instance of the endpoint, which the process-local MemoryInboxStore cannot.
// One document per (endpoint, MessageId) key in its own container, keyed and partitioned by the inbox key, so both
// operations are point reads/writes: `has` is a read by id, `add` an upsert (recording twice is harmless).
// Retention is checked on read rather than left to Cosmos TTL, because the embedded server has no TTL and the
// answer must not depend on when a background sweep happened to run.
import type { Container, CosmosClient } from '@azure/cosmos';
import { z } from 'zod';
import { cosmosConnectionSchema, createCosmosClient } from '../store/cosmosClient.ts';
import type { InboxStore } from './inbox.ts';

export const cosmosInboxOptionsSchema = cosmosConnectionSchema.extend({
  /** The container of inbox entries (created when missing, partition key /id). */
  container: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[^/\\?#]+$/, 'container name must not contain / \\ ? #')
    .default('inbox'),
  /** An entry older than this no longer counts as handled. Default 7 days, as the in-memory store. */
  retentionMs: z
    .number()
    .int()
    .positive()
    .default(7 * 24 * 3600_000),
});
export type CosmosInboxOptions = z.input<typeof cosmosInboxOptionsSchema>;

const entrySchema = z.object({ id: z.string(), handledAt: z.string() });

export class CosmosInboxStore implements InboxStore {
  private constructor(
    private readonly client: CosmosClient,
    private readonly container: Container,
    private readonly retentionMs: number,
    private readonly now: () => Date,
  ) {}

  /** Validates the options (a bad value throws naming the field), creates database and container when missing. */
  static async open(
    options: CosmosInboxOptions,
    now: () => Date = () => new Date(),
  ): Promise<CosmosInboxStore> {
    const parsed = cosmosInboxOptionsSchema.safeParse(options);
    if (!parsed.success) {
      const detail = parsed.error.issues
        .map((i) => `${i.path.join('.') || 'options'}: ${i.message}`)
        .join('; ');
      throw new Error(`invalid Cosmos inbox settings: ${detail}`);
    }
    const conn = parsed.data;
    const client = createCosmosClient(conn);
    try {
      const { database } = await client.databases.createIfNotExists({ id: conn.database });
      const { container } = await database.containers.createIfNotExists({
        id: conn.container,
        partitionKey: { paths: ['/id'], version: 2 },
      });
      return new CosmosInboxStore(client, container, conn.retentionMs, now);
    } catch (error) {
      client.dispose();
      throw error;
    }
  }

  async has(key: string): Promise<boolean> {
    try {
      const { resource } = await this.container.item(key, key).read();
      if (resource === undefined) return false;
      const entry = entrySchema.safeParse(resource);
      // A document we cannot read is not proof of handling: run the handler rather than drop the message.
      if (!entry.success) return false;
      return this.now().getTime() - Date.parse(entry.data.handledAt) <= this.retentionMs;
    } catch (error) {
      if ((error as { code?: unknown }).code === 404) return false;
      throw error;
    }
  }

  async add(key: string, at: Date): Promise<void> {
    await this.container.items.upsert({ id: key, handledAt: at.toISOString() });
  }

  close(): void {
    this.client.dispose();
  }
}

/** Opens a Cosmos-backed inbox store; pass it as `inbox` to the subscriber host. Call `close()` when done. */
export function createCosmosInboxStore(options: CosmosInboxOptions): Promise<CosmosInboxStore> {
  return CosmosInboxStore.open(options);
}
