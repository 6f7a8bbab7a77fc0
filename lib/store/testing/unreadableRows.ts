// For tests of lists that must say when rows could not be read: status rows that no longer parse, planted past the
// store (which never writes one) as copies of a row it wrote, with one field broken. A list's query still matches
// them (the fields it filters on are the copied row's), so the list reads them and must name them.
import type { Database } from '@azure/cosmos';
import { CONTAINERS } from '../store.ts';

/**
 * Plants one row per id, each a copy of the store's row of `source` (its event `eventId`, or any row of the
 * endpoint) with `broken` laid over it - an unknown status by default - and updated after every row the store
 * wrote, so a newest-first list reads them on its first page. The ids are the documents' ids and event ids.
 */
export async function plantUnreadableRows(
  database: Database,
  source: { endpointId: string; eventId?: string },
  ids: readonly string[],
  broken: Record<string, unknown> = { status: 'Exploded' },
): Promise<void> {
  const events = database.container(CONTAINERS.events);
  const parameters = [{ name: '@ep', value: source.endpointId }, ...(source.eventId !== undefined ? [{ name: '@ev', value: source.eventId }] : [])];
  const query = `SELECT TOP 1 * FROM c WHERE c.endpointId = @ep${source.eventId !== undefined ? ' AND c.eventId = @ev' : ''}`;
  const { resources } = await events.items.query({ query, parameters }).fetchAll();
  if (resources.length === 0) throw new Error(`plantUnreadableRows: no row of ${JSON.stringify(source)} to copy`);
  // Without Cosmos's system properties (`_rid`, `_etag`, …), which a create does not take.
  const row = Object.fromEntries(Object.entries(resources[0] as Record<string, unknown>).filter(([k]) => !k.startsWith('_')));
  // A day ahead of now, not a fixed date: later than every row the store wrote, whenever the test runs.
  const updatedAt = new Date(Date.now() + 86_400_000).toISOString();
  for (const id of ids) {
    await events.items.create({ ...row, id, eventId: id, eventIdLower: id.toLowerCase(), updatedAt, ...broken });
  }
}
