// What "Resubmit all" / "Skip all" on the Failures page acts on: the failure group as the page shows it. With an
// "Updated in" window the page counts only the group's rows updated in it (to the hour: the answer's countedFrom),
// so the selection carries that start as `updatedFrom`; without it the job would also act on the group's older rows,
// on endpoints the page never listed. With a status picked the page counts only the group's rows in it, so the
// selection, its words, the export and the links to the group's events carry it too. Kept apart from React so the
// selection, its words and its links are tested.
import type { Selection } from '../../server/operations/selection.ts';
import type { FailureStatus } from '../../lib/store/failureGroupAggregates.ts';
import { endpointHref } from '../api.ts';

/** The page's status filter (the URL's `status`): one of the failure statuses, or '' for all of them. */
type StatusShown = FailureStatus | '';

/** The "Updated in" choices (the URL's `since`, hours back) and how the page and the confirmation say them. */
export const WINDOW_LABELS = { '': 'any time', '1': 'the last hour', '24': 'the last 24 hours', '168': 'the last 7 days' } as const;
export type WindowChoice = keyof typeof WINDOW_LABELS;

/** The selection of a group's rows the page counted: from `countedFrom` (the failure groups answer's), or all; in `status`. */
export function groupSelection(groupId: string, countedFrom: string | null | undefined, status: StatusShown = ''): Selection {
  return { groupId, ...(countedFrom ? { updatedFrom: countedFrom } : {}), ...(status ? { status: [status] } : {}) };
}

/**
 * The confirmation's words for it, before the endpoints (they come from the rows frozen, frozenText.ts). The window
 * is said by its exact start, in the console's time rule (`time`: formatLocal or formatUtc, components/timeZone.tsx):
 * "the last hour" would understate it, as the start is floored to the hour and covers rows up to two hours old.
 */
export function groupWhat(title: string, countedFrom: string | null | undefined, time: (t: Date) => string, status: StatusShown = ''): string {
  return `every ${status ? `${status} ` : ''}event of “${title}”${countedFrom ? ` updated since ${time(new Date(countedFrom))}` : ''}`;
}

/**
 * The group's export on one endpoint, as the page counted it: in its window (the export's `from` is on updatedAt)
 * and its status.
 */
export function groupExportHref(endpointId: string, groupId: string, countedFrom: string | null | undefined, status: StatusShown = ''): string {
  const query = new URLSearchParams({ groupId, ...(countedFrom ? { from: countedFrom } : {}), ...(status ? { status } : {}), format: 'csv' });
  return `/api/endpoints/${encodeURIComponent(endpointId)}/events/export?${query.toString()}`;
}

/**
 * The Endpoint page on the group's rows the page counted on that endpoint ("billingendpoint (2)"): in its window (the
 * page's `from` is on updatedAt, as the count's countedFrom) and its status. With the group alone it opened all the
 * group's rows there, 5 for a row that said 2. No status is every failure status: only failed rows have a group. Its
 * keys in the order the Endpoint page writes them (urlState.ts toSearch, eventListSearch), so it is the page's one
 * URL for that state; written out here, as urlState.ts needs the browser's `window`, and the server's tests import
 * this module (frozenText.test.ts holds it to what the page parses).
 */
export function groupEventsHref(endpointId: string, groupId: string, countedFrom: string | null | undefined, status: StatusShown = ''): string {
  const query = new URLSearchParams({ ...(status ? { status } : {}), ...(countedFrom ? { from: countedFrom } : {}), groupId });
  return endpointHref(endpointId, query.toString());
}
