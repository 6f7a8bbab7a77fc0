// Containers opened on first use by modules beside the store's own (the audit log, role grants, the replay
// journal): created when missing, opened once per database and remembered, with the two cases every such module
// must handle alike. createIfNotExists is read-then-create, so a second console or process creating the same
// container at the same moment gets 409, which means it exists now. And a failed open (the store briefly
// unreachable) is forgotten, so the next call tries again instead of failing for the life of the process.
import type { Container, Database } from '@azure/cosmos';
import { cosmosStatus } from './errors.ts';

/** Where a module keeps its opened container (often on globalThis, so hot reloads share it). */
export interface ContainerSlot {
  database?: Database;
  container?: Promise<Container>;
}

/** What a container may be created with beside its key: a default time-to-live (seconds) for records that expire. */
export interface ContainerExtras {
  defaultTtl?: number;
}

/**
 * Creates the container (partitioned on one path) when missing and returns it; a concurrent creation is fine.
 * `extras` apply to a container created here only: createIfNotExists leaves an existing one as it is.
 */
export async function createContainerIfMissing(database: Database, id: string, partitionKeyPath: string, extras: ContainerExtras = {}): Promise<Container> {
  try {
    const r = await database.containers.createIfNotExists({ id, partitionKey: { paths: [partitionKeyPath], version: 2 }, ...extras });
    return r.container;
  } catch (err) {
    if (cosmosStatus(err) === 409) return database.container(id);
    throw err;
  }
}

/** The slot's container in `database`, opened at most once at a time; a different database opens afresh. */
export function openContainer(slot: ContainerSlot, database: Database, id: string, partitionKeyPath: string, extras: ContainerExtras = {}): Promise<Container> {
  if (slot.database === database && slot.container) return slot.container;
  slot.database = database;
  const p = createContainerIfMissing(database, id, partitionKeyPath, extras);
  slot.container = p;
  p.catch(() => {
    if (slot.container === p) slot.container = undefined;
  });
  return p;
}
