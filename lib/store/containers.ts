// Containers opened on first use by modules beside the store's own (the audit log, role grants, the replay
// journal, the Agent API's publish records, alerts, leases, metrics): created when missing, opened once per database
// and remembered, with the cases every such module must handle alike, so each handles them here once.
// - Opening is read-then-create, so a second console or process creating the same container at the same moment
//   gets 409, which means it exists now.
// - A failed open (the store briefly unreachable) is forgotten, so the next call tries again instead of failing for
//   the life of the process.
// - A failed open is the store's typed error like any other store call's (rethrowCosmos: a 503, a timeout or a reset
//   is a StoreTransientError, answered 503 "try again"). Each module mapped its own calls but not the open, so a
//   console's first use of the replay journal or the role grants with the store down, or under RBAC without the
//   container, was answered 500 "internal error"; only the publish records had a copy of this mapping.
// - The container is read first, then created only if the read says 404. A 403 on the creation is a
//   ContainerMissingError naming the container (Entra data-plane roles may read containers but not create them); a
//   403 on the read is a ContainerAccessDeniedError: the account refuses this identity altogether (a firewall, key
//   sign-in turned off, no data-plane role), and the container may well exist. Before, both were "missing", which
//   sent the operator to create a container that was there.
// - Such a failure is reported (logged by the console) once per container and kind until the container opens; an
//   open clears it, so a later loss is reported again (reportOnce).
import type { Container, Database } from '@azure/cosmos';
import { ContainerAccessDeniedError, ContainerMissingError, cosmosStatus, rethrowCosmos } from './errors.ts';

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
 * Opens the container, creating it (partitioned on one path) when missing; a concurrent creation is fine. `extras`
 * apply to a container created here only: an existing one is left as it is. Throws a ContainerAccessDeniedError when
 * Cosmos refuses to read it (403), a ContainerMissingError when it is missing and Cosmos refuses its creation (403),
 * and the store's typed error for a store that does not answer (StoreTransientError, StoreThrottledError); other
 * failures as they are.
 */
export async function createContainerIfMissing(database: Database, id: string, partitionKeyPath: string, extras: ContainerExtras = {}): Promise<Container> {
  // Read, then create on 404: as the SDK's createIfNotExists does, but with the read's refusal told apart.
  try {
    const { container } = await database.container(id).read();
    return opened(database, container);
  } catch (err) {
    const status = cosmosStatus(err);
    if (status === 403) throw new ContainerAccessDeniedError(database.id, id);
    if (status !== 404) rethrowCosmos(err, `container ${id} open`);
  }
  try {
    const { container } = await database.containers.create({ id, partitionKey: { paths: [partitionKeyPath], version: 2 }, ...extras });
    return opened(database, container);
  } catch (err) {
    const status = cosmosStatus(err);
    // Created by another process between our read and our create.
    if (status === 409) return opened(database, database.container(id));
    // The read was allowed, so the account lets this identity in: a 403 here is the creation refused.
    if (status === 403) throw new ContainerMissingError(database.id, id);
    rethrowCosmos(err, `container ${id} open`);
  }
}

// Per process, the containers whose failure to open was reported, with the kind (the error's name). On globalThis
// under Symbol.for: Next.js bundles this module into each route chunk, and every copy must share one record.
const reported = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.store.containerFailuresReported')] ??= new Map<string, string>()) as Map<
  string,
  string
>;

const reportKey = (database: string, container: string) => `${database}/${container}`;

function opened(database: Database, container: Container): Container {
  reported.delete(reportKey(database.id, container.id));
  return container;
}

/**
 * True the first time this failure to open a container (of this kind: missing or refused) is reported since the
 * container last opened: every request that needs it meets it until it is fixed, and one log line says so. The
 * console logs it where every answer to a caller is made (server/http.ts).
 */
export function reportOnce(err: ContainerMissingError | ContainerAccessDeniedError): boolean {
  const key = reportKey(err.database, err.container);
  if (reported.get(key) === err.name) return false;
  reported.set(key, err.name);
  return true;
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
