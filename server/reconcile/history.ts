// An event's history for reconcile's checks, all pages up to a cap: an event with thousands of entries is a loop,
// and the checks only need its recent responses.
import type { HistoryEntry, MessageStore } from '../../lib/store/index.ts';

const HISTORY_CAP = 2000;

export async function eventHistory(store: MessageStore, eventId: string): Promise<HistoryEntry[]> {
  const out: HistoryEntry[] = [];
  let token: string | undefined;
  do {
    const page = await store.listHistory(eventId, { pageSize: 200, continuationToken: token });
    out.push(...page.items);
    token = page.continuationToken;
  } while (token && out.length < HISTORY_CAP);
  return out;
}
