// An event's history on one endpoint for reconcile's checks, all pages up to a cap: an event with thousands of
// entries is a loop, and the checks only need its recent responses.
// One endpoint's only: an event published to several subscribers has a row per endpoint under the same eventId,
// and its history holds every endpoint's entries. Another endpoint's response is no evidence for this row (it
// would "settle" a row its own subscriber never answered), nor its state one to restore.
import type { HistoryEntry, MessageStore } from '../../lib/store/index.ts';

const HISTORY_CAP = 2000;

export async function eventHistory(store: MessageStore, endpointId: string, eventId: string): Promise<HistoryEntry[]> {
  const out: HistoryEntry[] = [];
  let token: string | undefined;
  let read = 0;
  do {
    const page = await store.listHistory(eventId, { pageSize: 200, continuationToken: token });
    read += page.items.length;
    out.push(...page.items.filter((h) => h.endpointId === endpointId));
    token = page.continuationToken;
  } while (token && read < HISTORY_CAP);
  return out;
}
