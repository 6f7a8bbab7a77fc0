'use client';
// Audit page: the console's audit log (server/audit/auditLog.ts), newest first. Filters: endpoint, event id, user,
// action (contains, and does not contain: the demo's agent floods the log), outcome and a time range; "Load more"
// follows the continuation. Filters live in the URL so a link to a filtered view can be shared. The endpoint and event
// ids are taken exactly, spaces and all, by the rule of every id filter (server/exactIdFilters.ts): one the route
// refuses (spaces alone) is not applied, and the box says why (./exactIdErrors.tsx). Every value is rendered as text
// (React escapes it): the log holds user input.
import { useState } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useRouter, useSearchParams } from 'next/navigation';
import { ErrorBox, Timestamp } from '../format.tsx';
import type { AuditRecord } from './accessApi.ts';
import { auditQuery } from '../queries.ts';
import { eventTrailName } from './actionNames.ts';
import { agentCallsRefusal, hidesAgentCalls, withAgentCalls } from './agentCalls.ts';
import { TABLE_HEAD } from '../table.tsx';
import { auditSearch, parseSearch, toSearch, type AuditSearch } from '../urlState.ts';
import { fromInputValue, toInputValue } from '../isoTime.ts';
import { useTimeZoneMode } from '../timeZone.tsx';
import { useExactIdErrors } from '../exactIdErrors.tsx';
import { EXACT_ID_FILTERS, type ExactIdFilter } from '../../server/exactIdFilters.ts';
import { AUDIT_TEXT_FILTER_MAX } from '../../server/audit/auditTextFilters.ts';

type Filters = Record<keyof AuditSearch, string>;
/** The id filters, in the form's order; the user, action and time filters are no ids. */
const ID_FIELDS = ['endpointId', 'eventId'] as const satisfies readonly (ExactIdFilter & keyof Filters)[];
const idFieldOf = (k: keyof Filters) => ID_FIELDS.find((f) => f === k);
/** How long a free-text box's value may be: the route's and the URL state's limit (a longer one would be no filter). */
const textMaxOf = (k: keyof Filters): number | undefined => (Object.hasOwn(AUDIT_TEXT_FILTER_MAX, k) ? AUDIT_TEXT_FILTER_MAX[k as keyof typeof AUDIT_TEXT_FILTER_MAX] : undefined);

const OUTCOME_STYLE: Record<string, string> = {
  succeeded: 'bg-emerald-100 text-emerald-800',
  failed: 'bg-orange-100 text-orange-800',
  denied: 'bg-red-100 text-red-800',
  cancelled: 'bg-slate-200 text-slate-800',
};

function Details({ r }: { r: AuditRecord }) {
  if (!r.details && !r.reason) return null;
  return (
    <details className="text-xs">
      <summary className="cursor-pointer text-slate-500">details</summary>
      {r.reason && <p className="text-red-700">{r.reason}</p>}
      {r.details && <pre className="max-w-xl overflow-auto whitespace-pre-wrap break-all bg-slate-50 p-1">{JSON.stringify(r.details, null, 2)}</pre>}
    </details>
  );
}

/**
 * The "Event / target" column: the event id, the event(s) an Agent API receive handed out (`details.handedOut`: the
 * entry names no event of its own, since the caller asked for any), and the target.
 */
export function auditSubject(r: Pick<AuditRecord, 'eventId' | 'target' | 'details'>): string {
  const handedOut = r.details?.handedOut;
  const handed = (Array.isArray(handedOut) ? handedOut : [handedOut]).filter((id): id is string => typeof id === 'string' && id !== '');
  return [...new Set([r.eventId, ...handed])].concat(r.target).filter(Boolean).join(' · ') || '—';
}

export function AuditView() {
  const router = useRouter();
  const params = useSearchParams();
  // The URL holds the filter (auditSearch: times as ISO-8601 with an offset); the form edits times on the wall
  // clock the viewer chose (local unless switched to UTC).
  const zone = useTimeZoneMode();
  const applied = parseSearch(auditSearch, params);
  const appliedQuery = toSearch(auditSearch, applied);
  const [form, setForm] = useState<Filters>(applied);
  const [formKey, setFormKey] = useState(appliedQuery);
  // The ids a Filter refused, and why: shown beside their boxes until edited or the URL changes.
  const idErrors = useExactIdErrors(ID_FIELDS);
  // Why the "Hide agent API calls" box was not applied, shown beside it until the filter is edited or applied.
  const [agentRefusal, setAgentRefusal] = useState<string | undefined>();
  if (formKey !== appliedQuery) {
    // The URL changed (Back, Forward, a link): the form follows it. It shows the parsed filter, never the raw URL:
    // an id the URL state reads as no filter (spaces alone) shows as the empty box it is.
    setFormKey(appliedQuery);
    setForm(applied);
    idErrors.clear();
    setAgentRefusal(undefined);
  }

  const q = useInfiniteQuery(auditQuery(appliedQuery));
  const rows = q.data?.pages.flatMap((p) => p.items) ?? [];

  // An applied filter is a history entry, as on the other list pages: Back undoes it and stays on Audit (replacing
  // the entry made Back leave the page). Applying the filter already shown adds no entry. An id the URL state would
  // read as no filter is not applied: the log would list every entry while the box still showed the id. Whether
  // `next` is (or already was) the applied filter.
  const apply = (next: Filters = form): boolean => {
    if (!idErrors.check(next)) return false;
    const qs = toSearch(auditSearch, parseSearch(auditSearch, next));
    if (qs !== appliedQuery) router.push(`/audit${qs ? `?${qs}` : ''}`);
    return true;
  };
  const input = (k: keyof Filters, label: string, type = 'text', placeholder?: string) => {
    const id = idFieldOf(k);
    return (
      <div className="flex flex-col gap-0.5">
        <label className="flex flex-col text-xs text-slate-600">
          {label}
          <input
            name={k}
            type={type}
            placeholder={placeholder}
            // Times: the form keeps the instant; the input shows and reads it on the chosen wall clock.
            value={type === 'datetime-local' ? toInputValue(form[k], zone) : form[k]}
            onChange={(e) => {
              setForm({ ...form, [k]: type === 'datetime-local' ? fromInputValue(e.target.value, zone) : e.target.value });
              if (id) idErrors.clear(id);
              if (k === 'notAction') setAgentRefusal(undefined);
            }}
            // An id or text box takes at most the route's length: a longer value cannot be typed (or pasted) at all,
            // where the URL state would read it as no filter while the box still showed it.
            {...(id ? { ...idErrors.box(id), maxLength: EXACT_ID_FILTERS[id].max } : textMaxOf(k) !== undefined ? { maxLength: textMaxOf(k) } : {})}
            className="rounded border border-slate-300 px-2 py-1 text-sm text-slate-900 aria-[invalid=true]:border-red-500"
          />
        </label>
        {id ? idErrors.note(id) : null}
      </div>
    );
  };

  return (
    <section>
      <h1 className="mb-3 text-xl font-semibold">Audit</h1>
      <form
        className="mb-3 flex flex-wrap items-end gap-2 rounded border border-slate-200 bg-white p-3"
        onSubmit={(e) => {
          e.preventDefault();
          apply();
        }}
      >
        {input('endpointId', 'Endpoint')}
        {input('eventId', 'Event id')}
        {input('user', 'User')}
        {input('action', 'Action contains', 'text', 'e.g. skip')}
        {input('notAction', 'Action does not contain', 'text', 'e.g. agent.receive, agent.settle')}
        {/* A preset of the filter above (agent.), applied at once: the demo's ledger agent floods the log. The form
            takes it only once applied: a refused apply (an id box's error, or too long a filter) left the box ticked
            over a log it did not filter. */}
        <div className="flex flex-col gap-0.5 self-center">
          <label className="flex items-center gap-1 text-xs text-slate-600">
            <input
              type="checkbox"
              name="hideAgentCalls"
              checked={hidesAgentCalls(form.notAction)}
              aria-describedby={agentRefusal ? 'hide-agent-calls-refused' : undefined}
              onChange={(e) => {
                const next = { ...form, notAction: withAgentCalls(form.notAction, e.target.checked) };
                const refusal = agentCallsRefusal(next.notAction);
                setAgentRefusal(refusal);
                if (refusal !== undefined || !apply(next)) return;
                setForm(next);
              }}
            />
            Hide agent API calls
          </label>
          {agentRefusal ? (
            <p id="hide-agent-calls-refused" role="alert" className="max-w-xs text-xs text-red-700">
              {agentRefusal}
            </p>
          ) : null}
        </div>
        <label className="flex flex-col text-xs text-slate-600">
          Outcome
          <select name="outcome" value={form.outcome} onChange={(e) => setForm({ ...form, outcome: e.target.value })} className="rounded border border-slate-300 px-2 py-1 text-sm text-slate-900">
            <option value="">any</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
            <option value="denied">denied</option>
            <option value="cancelled">cancelled</option>
          </select>
        </label>
        {input('from', 'From', 'datetime-local')}
        {input('to', 'To', 'datetime-local')}
        <button type="submit" className="rounded bg-slate-800 px-3 py-1 text-sm text-white">
          Filter
        </button>
      </form>
      <ErrorBox error={q.error} />
      <div className="overflow-x-auto">
      <table className="w-full border-collapse bg-white text-sm" data-testid="audit-table">
        <thead className={TABLE_HEAD}>
          <tr>
            <th scope="col" className="p-2">Time</th>
            <th scope="col" className="p-2">User</th>
            <th scope="col" className="p-2">Role</th>
            <th scope="col" className="p-2">Action</th>
            <th scope="col" className="p-2">Endpoint</th>
            <th scope="col" className="p-2">Event / target</th>
            <th scope="col" className="p-2">Outcome</th>
            <th scope="col" className="p-2">Details</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} className="border-b border-slate-100 align-top" data-audit-id={r.id}>
              <td className="p-2 whitespace-nowrap">
                <Timestamp at={r.at} />
              </td>
              <td className="p-2" title={`${r.actorKind} ${r.actorId}`}>
                {r.actorName}
              </td>
              <td className="p-2 text-xs">{r.roles}</td>
              <td className="p-2 font-mono text-xs">
                {r.action}
                {/* The same act under the name the event page's audit trail gives it (ResubmitWithChanges…). */}
                {eventTrailName(r) ? <div className="font-sans text-slate-500">{eventTrailName(r)}</div> : null}
              </td>
              <td className="p-2">
                {r.endpointId ?? r.endpoints?.join(', ') ?? '—'}
                {/* An entry over endpoints this reader may not read: only theirs are named (server/audit/readerScope.ts). */}
                {r.otherEndpoints ? <span className="text-slate-500"> +{r.otherEndpoints} other{r.otherEndpoints === 1 ? '' : 's'}</span> : null}
              </td>
              <td className="p-2 font-mono text-xs">{auditSubject(r)}</td>
              <td className="p-2">
                <span className={`rounded px-1.5 py-0.5 text-xs font-medium ${OUTCOME_STYLE[r.outcome] ?? ''}`}>
                  {r.outcome} ({r.status})
                </span>
              </td>
              <td className="p-2">
                <Details r={r} />
              </td>
            </tr>
          ))}
          {!q.isLoading && rows.length === 0 && (
            <tr>
              <td colSpan={8} className="p-4 text-center text-slate-500">
                Nothing recorded with these filters.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      </div>
      {q.hasNextPage && (
        <button type="button" onClick={() => void q.fetchNextPage()} disabled={q.isFetchingNextPage} className="mt-2 rounded border border-slate-300 px-3 py-1 text-sm">
          {q.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </section>
  );
}
