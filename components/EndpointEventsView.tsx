'use client';
// Endpoint page: the endpoint's events with server-side filters kept in the URL (shareable, survive a reload),
// continuation paging, counts per status, and Resubmit / Skip of the checked rows (across loaded pages) or of every
// event the filter matches ("select all matching"). Either runs on the server as a bulk job (server/operations/)
// over a selection frozen when the confirmation opens, which states exactly how many events it will act on: no
// row limit. The list exports as CSV or JSON with the same filter. The history charts' range is in the URL too
// (`range`, `rangeFrom`/`rangeTo`): a range change keeps the filters and a filter change keeps the range, each a
// history entry of its own.
import Link from './Link.tsx';
import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useMemo, useState, type FormEvent } from 'react';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { endpointHref, eventHref, type EventListItem } from './api.ts';
import { endpointQuery, eventsQuery } from './queries.ts';
import { isActionable } from './eventCommands.ts';
import { EVENT_STATUSES, endpointSearch, eventListSearch, parseSearch, toSearch, type EventListSearch } from './urlState.ts';
import { useUrlState } from './useUrlState.ts';
import { fromInputValue, toInputValue } from './isoTime.ts';
import { useTimeZoneMode } from './timeZone.tsx';
import { Ago, countOf, ErrorBox, formatCount, StatusBadge, useNow } from './format.tsx';
import { useCan } from './audit/accessApi.ts';
import { EndpointHistory } from './charts/HistoryCharts.tsx';
import { failuresHref, type TimeRange } from './charts/metricsApi.ts';
import { endpointSearchFromRange, rangeFromEndpointSearch, withEndpointRange } from './charts/rangeUrl.ts';
import { BulkJobConfirm } from './operations/BulkJobConfirm.tsx';
import type { Selection } from './operations/jobsApi.ts';
import { TABLE_HEAD } from './table.tsx';
import { useRefreshing } from './refreshing.ts';
import { EXACT_ID_FILTERS, type ExactIdFilter } from '../server/exactIdFilters.ts';
import { useExactIdErrors } from './exactIdErrors.tsx';

const STATUSES = EVENT_STATUSES;
type FilterKey = keyof typeof eventListSearch.entries;
/** The filter as the form edits it: every field a string (statuses comma-separated). */
type Filters = Record<FilterKey, string>;
const filtersOf = (parsed: EventListSearch): Filters => ({ ...parsed, status: parsed.status.join(',') });
const stateOf = (f: Filters): EventListSearch => ({ ...f, status: f.status ? (f.status.split(',') as (typeof STATUSES)[number][]) : [] });
/** The query string (and query key) of a filter: one canonical query string per state (urlState.ts). */
const searchOf = (f: Filters) => toSearch(eventListSearch, stateOf(f));
/** The list's id filters, in the form's order. */
const ID_FIELDS = ['eventTypeId', 'eventId', 'sessionId'] as const satisfies readonly ExactIdFilter[];

export function EndpointEventsView({ endpointId }: { endpointId: string }) {
  const router = useRouter();
  // Bulk buttons only for callers who may use them; the server refuses the others anyway.
  const can = useCan();
  const pathname = usePathname();
  const params = useSearchParams();
  const now = useNow(5000);
  // The time inputs follow the viewer's zone switch; what goes into the URL is ISO-8601 with that offset.
  const zone = useTimeZoneMode();
  const toLocalInput = (iso: string) => toInputValue(iso, zone);
  const fromLocalInput = (v: string) => fromInputValue(v, zone);

  const filters = useMemo(() => filtersOf(parseSearch(eventListSearch, params)), [params]);
  const queryString = useMemo(() => searchOf(filters), [filters]);
  const [draft, setDraft] = useState(filters);
  const [draftKey, setDraftKey] = useState(queryString);
  // The draft's ids that Apply refused, and why: shown beside their boxes until edited or the filters change.
  const idErrors = useExactIdErrors(ID_FIELDS);
  if (draftKey !== queryString) {
    // The filters in the URL changed (back/forward, a count link): the form follows them. A chart range change
    // leaves what is typed and not yet applied alone. The form shows the parsed filters, never the raw URL: an id
    // the URL state reads as no filter (spaces alone, too long) shows as the empty box it is.
    setDraftKey(queryString);
    setDraft(filters);
    idErrors.clear();
  }
  const editId = (field: (typeof ID_FIELDS)[number], value: string) => {
    setDraft({ ...draft, [field]: value });
    idErrors.clear(field);
  };
  const selectedStatuses = filters.status ? filters.status.split(',') : [];

  // A chip, Apply, Clear or dropping the failure group is a history entry, as on the other list pages: Back undoes
  // it and stays on this page (replacing the entry made Back leave the endpoint altogether).
  // The chart range goes along as the address bar has it now.
  const apply = (next: Filters) => {
    const current = new URLSearchParams(window.location.search);
    const qs = toSearch(endpointSearch, { ...parseSearch(endpointSearch, current), ...stateOf(next) });
    if (qs === current.toString()) return;
    router.push(`${pathname}${qs ? `?${qs}` : ''}`);
  };
  // The range is written with the history API (no server round trip: the list does not depend on it); the
  // filters go along unchanged.
  const { search, update } = useUrlState(endpointSearch);
  const range = rangeFromEndpointSearch(search);
  const changeRange = (r: TimeRange) => update(endpointSearchFromRange(r, zone), 'push');
  // A failure bar: the filter Monitor's click opens (failuresHref), on this page with the range kept.
  const openFailures = (t: number, bucketSeconds: number) =>
    apply(filtersOf(parseSearch(eventListSearch, new URLSearchParams(failuresHref(endpointId, t, bucketSeconds).split('?')[1]))));
  const toggleStatus = (s: string) => {
    const set = new Set(selectedStatuses);
    if (set.has(s)) set.delete(s);
    else set.add(s);
    apply({ ...filters, status: [...set].join(',') });
  };

  const ep = useQuery(endpointQuery(endpointId)).data?.endpoint;

  const list = useInfiniteQuery(eventsQuery(endpointId, queryString));
  const items = useMemo(() => list.data?.pages.flatMap((p) => p.items) ?? [], [list.data]);
  // Rows the loaded pages matched but could not read (their documents no longer parse): said above the list, so
  // a list missing them does not look whole. A page without the field comes from a replica still on an older
  // version during a rolling deploy: none named.
  const unreadable = useMemo(() => list.data?.pages.flatMap((p) => p.unreadable ?? []) ?? [], [list.data]);
  // Not list.isFetching itself: the server and a hydrating browser can disagree on it (refreshing.ts).
  const refreshing = useRefreshing(list);

  const [selected, setSelected] = useState<Set<string>>(new Set());
  const actionable = items.filter(isActionable);
  const selectedItems = actionable.filter((i) => selected.has(i.eventId));
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const allSelected = actionable.length > 0 && selectedItems.length === actionable.length;

  // Both selections run as a server-side job (server/operations/) with the selection frozen when the confirmation
  // opens: "select all matching" is the current filter, row selection the checked rows of every loaded page. No
  // row limit; the confirmation states the frozen count.
  const [allMatching, setAllMatching] = useState(false);
  const [jobKind, setJobKind] = useState<null | 'resubmit' | 'skip'>(null);
  const matchingSelection = useMemo((): Selection => {
    const statuses = filters.status ? filters.status.split(',') : [];
    return {
      endpointId,
      ...(statuses.length > 0 ? { status: statuses as Selection['status'] } : {}),
      ...(filters.groupId ? { groupId: filters.groupId } : {}),
      ...(filters.eventTypeId ? { eventTypeId: filters.eventTypeId } : {}),
      ...(filters.sessionId ? { sessionId: filters.sessionId } : {}),
      ...(filters.eventId ? { eventIds: [filters.eventId] } : {}),
      ...(filters.from ? { updatedFrom: filters.from } : {}),
      ...(filters.to ? { updatedBefore: filters.to } : {}),
      ...(filters.q ? { errorText: filters.q } : {}),
    };
  }, [filters, endpointId]);
  const rowSelection: Selection = { endpointId, eventIds: selectedItems.map((i) => i.eventId) };
  const act = (kind: 'resubmit' | 'skip') => setJobKind(kind);
  const exportHref = (format: 'csv' | 'json') => `/api/endpoints/${encodeURIComponent(endpointId)}/events/export?${queryString}${queryString ? '&' : ''}format=${format}`;
  // An id the URL state would read as no filter is not applied: the list would show the whole endpoint (and "Select
  // all matching" act on all of it) while the box still showed the id. The box says why instead, and has the focus.
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (idErrors.check(draft)) apply(draft);
  };
  // The applied type is a choice even when the catalog does not list it for this endpoint (a shared link, a type
  // with spaces): the box then shows the filter the list is under, not "any".
  const typeOptions = [...new Set([...(ep?.consumes ?? []), ...(ep?.produces ?? []), ...(filters.eventTypeId ? [filters.eventTypeId] : [])])].sort();
  const countFor = (s: string): number | undefined => {
    const c = ep?.counts;
    if (!c) return undefined;
    switch (s) {
      case 'Failed':
        return c.failed - c.deadLettered - c.unsupported;
      case 'DeadLettered':
        return c.deadLettered;
      case 'Unsupported':
        return c.unsupported;
      case 'Deferred':
        return c.deferred;
      case 'Pending':
        return c.pending - c.handoff;
      case 'Handoff':
        return c.handoff;
      case 'Completed':
        return c.completed;
      case 'Skipped':
        return c.skipped;
    }
    return undefined;
  };

  return (
    <section>
      <nav className="mb-1 text-sm text-slate-500">
        <Link href="/" className="hover:underline">
          Endpoints
        </Link>{' '}
        / <span className="text-slate-700">{endpointId}</span>
      </nav>
      <div className="mb-3 flex flex-wrap items-baseline gap-3">
        <h1 className="text-xl font-semibold">{endpointId}</h1>
        {ep?.owner ? <span className="text-sm text-slate-500">{ep.owner}</span> : null}
        {ep?.description ? <span className="text-sm text-slate-500">— {ep.description}</span> : null}
        {/* The status chips' zeros are not a quiet endpoint: its counter document no longer parses (logged). */}
        {ep?.countersUnreadable ? (
          <span className="text-sm text-red-700" data-counters-unreadable>
            counts unreadable: shown as 0
          </span>
        ) : null}
      </div>

      <EndpointHistory endpointId={endpointId} range={range} onRangeChange={changeRange} onOpenFailures={openFailures} />

      <div className="mb-3 flex flex-wrap gap-1.5" aria-label="Status filter">
        {STATUSES.map((s) => {
          const on = selectedStatuses.includes(s);
          const n = countFor(s);
          return (
            <button
              key={s}
              type="button"
              aria-pressed={on}
              onClick={() => toggleStatus(s)}
              className={`rounded-full border px-2.5 py-0.5 text-xs ${on ? 'border-slate-800 bg-slate-800 text-white' : 'border-slate-300 bg-white text-slate-700 hover:bg-slate-100'}`}
            >
              {s}
              {n !== undefined ? <span className="ml-1 font-semibold">{formatCount(n)}</span> : null}
            </button>
          );
        })}
        {selectedStatuses.length > 0 ? (
          <button type="button" onClick={() => apply({ ...filters, status: '' })} className="px-2 text-xs text-sky-700 hover:underline">
            all statuses
          </button>
        ) : null}
      </div>

      <form onSubmit={submit} className="mb-3 grid grid-cols-2 gap-2 rounded border border-slate-200 bg-white p-3 text-sm md:grid-cols-4 lg:grid-cols-7">
        {/* Each error note is outside its label, so the box's name stays its label alone. */}
        <div className="flex flex-col gap-0.5">
          <label className="flex flex-col gap-0.5">
            <span className="text-xs text-slate-500">Event type</span>
            <select
              value={draft.eventTypeId}
              onChange={(e) => editId('eventTypeId', e.target.value)}
              {...idErrors.box('eventTypeId')}
              className="rounded border border-slate-300 px-1 py-1"
            >
              <option value="">any</option>
              {typeOptions.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
          {idErrors.note('eventTypeId')}
        </div>
        {(['eventId', 'sessionId'] as const).map((field) => (
          <div key={field} className="flex flex-col gap-0.5">
            <label className="flex flex-col gap-0.5">
              <span className="text-xs text-slate-500">{field === 'eventId' ? 'Event id' : 'Session id'}</span>
              {/* maxLength: an id longer than the list takes cannot be typed (or pasted) at all. */}
              <input
                value={draft[field]}
                maxLength={EXACT_ID_FILTERS[field].max}
                onChange={(e) => editId(field, e.target.value)}
                {...idErrors.box(field)}
                className="rounded border border-slate-300 px-2 py-1 aria-[invalid=true]:border-red-500"
              />
            </label>
            {idErrors.note(field)}
          </div>
        ))}
        <label className="flex flex-col gap-0.5">
          <span className="text-xs text-slate-500">Updated from</span>
          <input type="datetime-local" value={toLocalInput(draft.from)} onChange={(e) => setDraft({ ...draft, from: fromLocalInput(e.target.value) })} className="rounded border border-slate-300 px-1 py-1" />
        </label>
        <label className="flex flex-col gap-0.5">
          <span className="text-xs text-slate-500">Updated before</span>
          <input type="datetime-local" value={toLocalInput(draft.to)} onChange={(e) => setDraft({ ...draft, to: fromLocalInput(e.target.value) })} className="rounded border border-slate-300 px-1 py-1" />
        </label>
        <label className="flex flex-col gap-0.5">
          <span className="text-xs text-slate-500">Error text contains</span>
          <input name="q" value={draft.q} onChange={(e) => setDraft({ ...draft, q: e.target.value })} className="rounded border border-slate-300 px-2 py-1" />
        </label>
        <div className="flex items-end gap-2">
          <button type="submit" className="rounded bg-slate-800 px-3 py-1 text-white hover:bg-slate-700">
            Apply
          </button>
          <button type="button" onClick={() => apply({ status: '', eventTypeId: '', sessionId: '', eventId: '', from: '', to: '', q: '', groupId: '' })} className="rounded border border-slate-300 px-3 py-1 hover:bg-slate-50">
            Clear
          </button>
        </div>
      </form>

      <div className="mb-2 flex flex-wrap items-center gap-2 text-sm">
        <span className="text-slate-600" data-testid="selection-count">{allMatching ? 'all events matching the filter selected' : `${selectedItems.length} selected`}</span>
        {(can('resubmit', endpointId) || can('skip', endpointId)) && (
          <button type="button" onClick={() => setAllMatching(!allMatching)} className="rounded border border-slate-300 px-2 py-1 text-xs hover:bg-slate-50" aria-pressed={allMatching}>
            {allMatching ? 'Select rows instead' : 'Select all matching'}
          </button>
        )}
        {can('resubmit', endpointId) && <button type="button" disabled={!allMatching && selectedItems.length === 0} onClick={() => act('resubmit')} className="rounded bg-sky-600 px-3 py-1 text-white hover:bg-sky-700 disabled:opacity-40">
          {allMatching ? 'Resubmit all matching' : 'Resubmit selected'}
        </button>}
        {can('skip', endpointId) && <button type="button" disabled={!allMatching && selectedItems.length === 0} onClick={() => act('skip')} className="rounded border border-red-300 px-3 py-1 text-red-700 hover:bg-red-50 disabled:opacity-40">
          {allMatching ? 'Skip all matching' : 'Skip selected'}
        </button>}
        {filters.groupId ? (
          <button type="button" onClick={() => apply({ ...filters, groupId: '' })} className="rounded bg-amber-100 px-2 py-0.5 text-xs text-amber-900">
            failure group {filters.groupId.slice(0, 8)} ×
          </button>
        ) : null}
        <a href={exportHref('csv')} className="text-xs text-sky-700 hover:underline">
          Export CSV
        </a>
        <a href={exportHref('json')} className="text-xs text-sky-700 hover:underline">
          Export JSON
        </a>
        <span className="ml-auto text-xs text-slate-500">{refreshing ? 'refreshing…' : `${items.length} shown`}</span>
      </div>
      <ErrorBox error={list.error} />
      {unreadable.length > 0 ? (
        <p className="mb-2 text-sm text-red-700" data-unreadable-rows title={unreadable.map((u) => `${u.id}: ${u.issues}`).join('\n')}>
          {countOf(unreadable.length, 'row')} could not be read and {unreadable.length === 1 ? 'is' : 'are'} not shown: {unreadable.map((u) => u.id).join(', ')}
        </p>
      ) : null}

      <div className="overflow-x-auto rounded border border-slate-200 bg-white">
        <table className="min-w-full text-sm" data-testid="events-table">
          <thead className={TABLE_HEAD}>
            <tr>
              <th scope="col" className="w-8 px-2 py-2">
                <input
                  type="checkbox"
                  aria-label="Select all actionable events"
                  checked={allSelected}
                  disabled={actionable.length === 0}
                  onChange={() => setSelected(allSelected ? new Set() : new Set(actionable.map((i) => i.eventId)))}
                />
              </th>
              <th scope="col" className="px-2 py-2">Status</th>
              <th scope="col" className="px-2 py-2">Event id</th>
              <th scope="col" className="px-2 py-2">Event type</th>
              <th scope="col" className="px-2 py-2">Session</th>
              <th scope="col" className="px-2 py-2">Error</th>
              <th scope="col" className="px-2 py-2 text-right">Updated</th>
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-100">
            {items.map((i) => (
              <tr key={`${i.eventId}\u0000${i.sessionId}`} className="hover:bg-slate-50">
                <td className="px-2 py-1">
                  {isActionable(i) ? (
                    <input type="checkbox" aria-label={`Select ${i.eventId}`} checked={selected.has(i.eventId)} onChange={() => toggle(i.eventId)} />
                  ) : null}
                </td>
                <td className="px-2 py-1">
                  <StatusBadge status={i.status} subStatus={i.subStatus} />
                  <HoldsBack row={i} />
                </td>
                {/* elementtiming: when the list is first painted (bench/console.ts, Element Timing API). */}
                <td className="px-2 py-1 font-mono text-xs" {...{ elementtiming: 'event-rows' }}>
                  <Link href={eventHref(endpointId, i.eventId)} className="text-sky-700 hover:underline">
                    {i.eventId}
                  </Link>
                </td>
                <td className="px-2 py-1">{i.eventTypeId ?? '—'}</td>
                <td className="px-2 py-1 font-mono text-xs">
                  {i.sessionId ? (
                    // The session's events, on the chart range shown (the other filters are dropped: it is a new question).
                    <Link href={withEndpointRange(endpointHref(endpointId, new URLSearchParams({ sessionId: i.sessionId }).toString()), range, zone)} className="hover:underline">
                      {i.sessionId}
                    </Link>
                  ) : (
                    '—'
                  )}
                </td>
                <td className="max-w-md truncate px-2 py-1 text-xs text-red-800" title={i.errorText ?? ''}>
                  {i.errorText ?? ''}
                </td>
                <td className="px-2 py-1 text-right text-xs text-slate-600">
                  <Ago at={i.updatedAt} now={now} />
                </td>
              </tr>
            ))}
            {list.isPending ? (
              <tr>
                <td colSpan={7} className="px-3 py-4 text-center text-slate-500">
                  Loading…
                </td>
              </tr>
            ) : items.length === 0 ? (
              <tr>
                <td colSpan={7} className="px-3 py-4 text-center text-slate-500">
                  No events match these filters.
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
      {list.hasNextPage ? (
        <button type="button" onClick={() => list.fetchNextPage()} disabled={list.isFetchingNextPage} className="mt-2 rounded border border-slate-300 bg-white px-3 py-1 text-sm hover:bg-slate-50">
          {list.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      ) : null}

      {jobKind ? (
        <BulkJobConfirm
          kind={jobKind}
          selection={allMatching ? matchingSelection : rowSelection}
          what={allMatching ? `every actionable event on ${endpointId} matching the filter` : `the ${selectedItems.length} selected on ${endpointId}`}
          onClose={(confirmed) => {
            setJobKind(null);
            setAllMatching(false);
            if (confirmed) setSelected(new Set());
          }}
        />
      ) : null}
    </section>
  );
}

/**
 * "holds back N" under the status of a row that blocks its session (a failure, or a Pending handoff): the events
 * parked behind this very event (server/heldBack.ts), which a resubmit, a skip or the handoff's settlement releases.
 * Nothing when none are parked behind it, or when the server could not tell (its parked read stopped at its cap).
 */
function HoldsBack({ row }: { row: EventListItem }) {
  const held = row.holdsBack;
  if (!held || held.count === 0) return null;
  const n = `${formatCount(held.count)}${held.atLeast ? '+' : ''}`;
  return (
    <div className="whitespace-nowrap text-xs text-slate-600" data-testid="holds-back" title={`${n} ${held.count === 1 && !held.atLeast ? 'event' : 'events'} of session ${row.sessionId} parked behind this one`}>
      holds back {n}
    </div>
  );
}
