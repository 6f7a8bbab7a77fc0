// Containers opened on first use by modules beside the store's own (the audit log, role grants, the replay
// journal, the Agent API's publish records, alerts, leases, metrics): created when missing, opened once per database
// and remembered, with the cases every such module must handle alike, so each handles them here once.
// - createIfNotExists is read-then-create, so a second console or process creating the same container at the same
//   moment gets 409, which means it exists now.
// - A failed open (the store briefly unreachable) is forgotten, so the next call tries again instead of failing for
//   the life of the process.
// - A failed open is the store's typed error like any other store call's (rethrowCosmos: a 503, a timeout or a reset
//   is a StoreTransientError, answered 503 "try again"), and a 403 on it is a ContainerMissingError naming the
//   container (Entra data-plane roles may not create containers). Each module mapped its own calls but not the open,
//   so a console's first use of the replay journal or the role grants with the store down, or under RBAC without the
//   container, was answered 500 "internal error"; only the publish records had a copy of this mapping.
import type { Container, Database } from '@azure/cosmos';
import { ContainerMissingError, cosmosStatus, rethrowCosmos } from './errors.ts';

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
 * `extras` apply to a container created here only: createIfNotExists leaves an existing one as it is. Throws a
 * ContainerMissingError when Cosmos refuses the creation (403), and the store's typed error for a store that does
 * not answer (StoreTransientError, StoreThrottledError); other failures as they are.
 */
export async function createContainerIfMissing(database: Database, id: string, partitionKeyPath: string, extras: ContainerExtras = {}): Promise<Container> {
  try {
    const r = await database.containers.createIfNotExists({ id, partitionKey: { paths: [partitionKeyPath], version: 2 }, ...extras });
    return r.container;
  } catch (err) {
    const status = cosmosStatus(err);
    if (status === 409) return database.container(id);
    // Data-plane roles may read an existing container's definition, so a 403 here is, but for an account's own
    // refusals (a firewall), the creation of a missing one.
    if (status === 403) throw new ContainerMissingError(database.id, id);
    rethrowCosmos(err, `container ${id} open`);
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
