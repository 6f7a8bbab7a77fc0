// A conditional delete: remove an item only if it is still the version this process read (its etag). The records
// that several console processes move through states under their etags (the Agent API's publish records, the replay
// journal) give a claim up this way, so a claim that someone else has taken over or removed meanwhile is left as it is.
import type { Container, PartitionKey } from '@azure/cosmos';
import { cosmosStatus, rethrowCosmos } from './errors.ts';

/** The item to delete and the version of it that was read. */
export interface ItemVersion {
  id: string;
  partitionKey: PartitionKey;
  etag: string;
}

/**
 * Deletes the item if it is unchanged since `item.etag` was read: true when deleted, false when someone else changed
 * (412) or removed (404) it first. Any other failure is thrown as the store's typed error where it has one
 * (rethrowCosmos: a 503 or a timeout is a StoreTransientError), with `operation` naming what failed.
 */
export async function deleteIfMatch(container: Container, item: ItemVersion, operation: string): Promise<boolean> {
  try {
    await container.item(item.id, item.partitionKey).delete({ accessCondition: { type: 'IfMatch', condition: item.etag } });
    return true;
  } catch (err) {
    const code = cosmosStatus(err);
    if (code === 412 || code === 404) return false;
    rethrowCosmos(err, operation);
  }
}
