// One-off backfill of failure fingerprints (lib/store/fingerprint.ts) onto status rows written before the store
// computed them (`npm run backfill:fingerprints`). Each row is replaced only if unchanged since it was read
// (If-Match its etag): a row the Resolver rewrote meanwhile already carries the fingerprint of its new version.
import { CONTAINERS, type MessageStore } from './store.ts';
import { cosmosStatus, rethrowCosmos } from './errors.ts';
import { FAILURE_STATUSES, fingerprintOf } from './fingerprint.ts';
import { statusRowSchema } from './schemas.ts';
import { endpointsWithFailures, rebuildFailureGroups } from './failureGroupAggregates.ts';

export interface BackfillResult {
  scanned: number;
  updated: number;
  /** Rows that changed between the read and the write (the new version has its own fingerprint). */
  skipped: number;
  /** Rows that do not parse (left as they are). */
  corrupt: number;
  /** Endpoints whose failure-group aggregates were rebuilt from the rows afterwards. */
  endpointsRebuilt: number;
  /** Groups counted by that rebuild (one per endpoint and group). */
  groupsRebuilt: number;
}

/**
 * Gives every failed row without a fingerprint its fingerprint (`all`: recomputes every failed row's, after the
 * rules changed). Pages of 500; `onProgress` after each page. Then rebuilds the failure-group aggregates of every
 * endpoint with failed rows from the rows (`aggregates: false` skips that).
 */
export async function backfillFingerprints(
  store: MessageStore,
  options: { all?: boolean; aggregates?: boolean; onProgress?: (r: BackfillResult) => void } = {},
): Promise<BackfillResult> {
  const events = store.database.container(CONTAINERS.events);
  const where = ['ARRAY_CONTAINS(@statuses, c.status)'];
  if (!options.all) where.push('NOT IS_STRING(c.fingerprint)');
  const iterator = events.items.query<Record<string, unknown> & { _etag?: string }>(
    { query: `SELECT * FROM c WHERE ${where.join(' AND ')}`, parameters: [{ name: '@statuses', value: [...FAILURE_STATUSES] }] },
    { maxItemCount: 500 },
  );
  const result: BackfillResult = { scanned: 0, updated: 0, skipped: 0, corrupt: 0, endpointsRebuilt: 0, groupsRebuilt: 0 };
  while (iterator.hasMoreResults()) {
    let docs: Array<Record<string, unknown> & { _etag?: string }>;
    try {
      docs = (await iterator.fetchNext()).resources ?? [];
    } catch (err) {
      rethrowCosmos(err, 'fingerprint backfill read');
    }
    for (const raw of docs) {
      result.scanned++;
      const parsed = statusRowSchema.safeParse(raw);
      if (!parsed.success) {
        result.corrupt++;
        continue;
      }
      const row = parsed.data;
      const fingerprint = fingerprintOf(row)?.groupId ?? null;
      if (row.fingerprint === fingerprint) continue;
      try {
        await events.item(row.id, [row.endpointId, row.eventId]).replace(
          { ...raw, fingerprint },
          { accessCondition: { type: 'IfMatch', condition: raw._etag ?? '' } },
        );
        result.updated++;
      } catch (err) {
        const code = cosmosStatus(err);
        if (code === 412 || code === 404) result.skipped++;
        else rethrowCosmos(err, 'fingerprint backfill write');
      }
    }
    options.onProgress?.({ ...result });
  }
  if (options.aggregates !== false) {
    // The rows written around the store (above, or by an older version) are in no aggregate yet, and an aggregate
    // that drifted is repaired the same way: every endpoint with failed rows (or group documents) is recounted.
    for (const endpointId of await endpointsWithFailures(store.database)) {
      const r = await rebuildFailureGroups(store.database, endpointId);
      result.endpointsRebuilt++;
      result.groupsRebuilt += r.groups;
      options.onProgress?.({ ...result });
    }
  }
  return result;
}
