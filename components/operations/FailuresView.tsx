'use client';
// Failures: every Failed, DeadLettered and Unsupported event grouped by cause (GET /api/failure-groups), with a
// spark of arrivals, first and last seen, the endpoints affected and the group's note. A group opens its events
// (the Endpoint page filtered by the group), exports them, or is resubmitted / skipped as a whole - as the page
// shows it, within its "Updated in" window and its status (groupSelection.ts; the export and the events link too): the confirmation states the exact count, which is
// the count the job was frozen with, and the endpoints of the rows frozen.
import { useState } from 'react';
import Link from '../Link.tsx';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { BulkJobConfirm } from './BulkJobConfirm.tsx';
import { jobsApi, type FailureGroupItem } from './jobsApi.ts';
import { TABLE_HEAD } from '../table.tsx';
import { useSearchParams } from 'next/navigation';
import { failureGroupsQuery, queryKeys } from '../queries.ts';
import { FAILURE_GROUP_STATUSES, failuresSearch, parseSearch, replaceSearch, type FailuresSearch } from '../urlState.ts';
import { countOf, Timestamp } from '../format.tsx';
import { sparkScale, type SparkWindow } from './sparkScale.ts';
import { groupEventsHref, groupExportHref, groupSelection, groupWhat, WINDOW_LABELS } from './groupSelection.ts';
import { formatLocal, formatUtc, useTimeZoneMode } from '../timeZone.tsx';

/**
 * Arrivals per bucket, the bars relative to the busiest bucket: the top tick says what a full bar is, the caption
 * the total and the window (sparkScale.ts), and screen readers get the whole reading as the chart's name.
 */
function Spark({ values, sparkWindow }: { values: number[]; sparkWindow: SparkWindow | undefined }) {
  const scale = sparkScale(values, sparkWindow);
  const top = Math.max(1, scale.max);
  const height = 24;
  return (
    <div className="inline-flex items-stretch gap-1" data-testid="group-spark">
      <svg width={values.length * 4} height={height} role="img" aria-label={scale.label} className="inline-block">
        {/* The top tick: the height of the busiest bucket. */}
        <line x1={0} x2={values.length * 4} y1={0.5} y2={0.5} className="stroke-slate-300" strokeDasharray="2 2" />
        {values.map((v, i) => (
          <rect key={i} x={i * 4} y={height - (v / top) * height} width={3} height={(v / top) * height} className="fill-red-400" />
        ))}
      </svg>
      {/* Read out already as the chart's name. */}
      <div aria-hidden="true" className="flex flex-col justify-between text-[10px] leading-none tabular-nums text-slate-500">
        <span data-testid="spark-max">{scale.maxLabel}</span>
        <span data-testid="spark-total">{scale.caption}</span>
      </div>
    </div>
  );
}

function GroupRow({
  g,
  sparkWindow,
  countedFrom,
  status,
  onAction,
}: {
  g: FailureGroupItem;
  sparkWindow: SparkWindow | undefined;
  countedFrom: string | null | undefined;
  status: FailuresSearch['status'];
  onAction: (kind: 'resubmit' | 'skip', g: FailureGroupItem) => void;
}) {
  const qc = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(g.note?.note ?? '');
  const save = useMutation({
    mutationFn: () => jobsApi.setNote(g.groupId, text),
    onSuccess: () => {
      setEditing(false);
      void qc.invalidateQueries({ queryKey: queryKeys.failureGroups });
    },
  });
  const single = g.endpoints.length === 1 ? g.endpoints[0]!.endpointId : null;
  return (
    <tr className="border-b border-slate-200 align-top" data-group={g.groupId}>
      <td className="py-2 pr-3 text-right font-semibold tabular-nums" data-testid="group-count">
        {g.count.toLocaleString()}
      </td>
      <td className="py-2 pr-3">
        <div className="text-xs text-slate-500">{g.errorType}</div>
        <div className="font-medium">{g.title}</div>
        {g.example?.errorText && <div className="mt-0.5 line-clamp-2 text-xs text-slate-500">e.g. {g.example.errorText}</div>}
        {g.note && !editing && (
          <div className="mt-1 rounded bg-amber-50 px-2 py-1 text-xs text-amber-900" data-testid="group-note">
            {g.note.note} <span className="text-amber-700">— {g.note.by}, <Timestamp at={g.note.at} /></span>
          </div>
        )}
        {editing ? (
          <div className="mt-1 flex gap-1">
            <input value={text} maxLength={500} onChange={(e) => setText(e.target.value)} className="w-80 rounded border px-2 py-0.5 text-xs" aria-label="note" />
            <button type="button" className="rounded border px-2 text-xs" onClick={() => save.mutate()}>
              Save
            </button>
            {save.error && <span className="text-xs text-red-700">{save.error.message}</span>}
          </div>
        ) : (
          <button type="button" className="mt-1 text-xs text-sky-700" onClick={() => setEditing(true)}>
            {g.note ? 'Edit note' : 'Add note'}
          </button>
        )}
      </td>
      <td className="py-2 pr-3">
        <Spark values={g.spark} sparkWindow={sparkWindow} />
      </td>
      <td className="py-2 pr-3 text-xs text-slate-600">
        {/* Timestamp: local time or UTC as the header's switch says, like every other time in the console. */}
        <div>
          first <Timestamp at={g.firstAt} />
        </div>
        <div>
          last <Timestamp at={g.lastAt} />
        </div>
      </td>
      <td className="py-2 pr-3 text-xs">
        {g.endpoints.map((e) => (
          <div key={e.endpointId}>
            {/* The rows counted beside it: the group on that endpoint, in the "Updated in" window and the status. */}
            <Link className="text-sky-700 hover:underline" href={groupEventsHref(e.endpointId, g.groupId, countedFrom, status)}>
              {e.endpointId}
            </Link>{' '}
            ({e.count.toLocaleString()})
          </div>
        ))}
      </td>
      <td className="py-2 text-xs">
        <div className="flex flex-col gap-1">
          <button type="button" className="rounded bg-sky-600 px-2 py-1 text-white hover:bg-sky-700" onClick={() => onAction('resubmit', g)}>
            Resubmit all
          </button>
          <button type="button" className="rounded border border-slate-300 px-2 py-1 hover:bg-slate-50" onClick={() => onAction('skip', g)}>
            Skip all
          </button>
          {single && (
            // The rows the page counts: the group on that endpoint, in the "Updated in" window and the status.
            <a className="text-sky-700 hover:underline" href={groupExportHref(single, g.groupId, countedFrom, status)}>
              Export CSV
            </a>
          )}
        </div>
      </td>
    </tr>
  );
}

export function FailuresView() {
  // The time window and the status live in the URL (failuresSearch): shareable, kept on reload.
  const search = parseSearch(failuresSearch, useSearchParams());
  const { since, status } = search;
  const setSince = (v: string) => replaceSearch(failuresSearch, { ...search, since: v as typeof since });
  const setStatus = (v: string) => replaceSearch(failuresSearch, { ...search, status: v as typeof status });
  const q = useQuery(failureGroupsQuery(search));
  // The window the clicked group was counted in is kept with it: a refresh before the dialog closes moves the page's.
  const [pending, setPending] = useState<{ kind: 'resubmit' | 'skip'; group: FailureGroupItem; countedFrom: string | null; status: typeof status } | null>(null);
  const time = useTimeZoneMode() === 'utc' ? formatUtc : formatLocal;
  const groups = q.data?.groups ?? [];
  return (
    <div>
      <div className="mb-3 flex flex-wrap items-baseline gap-x-4 gap-y-2">
        <h1 className="text-xl font-semibold">Failures</h1>
        <span className="text-sm text-slate-600">{q.data ? `${countOf(q.data.total, 'failed event')} in ${countOf(groups.length, 'group')}` : ''}</span>
        <label className="ml-auto text-sm">
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.target.value)} className="rounded border px-1">
            <option value="">any</option>
            {FAILURE_GROUP_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label className="text-sm">
          Updated in{' '}
          <select value={since} onChange={(e) => setSince(e.target.value)} className="rounded border px-1">
            {Object.entries(WINDOW_LABELS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {q.error && <p className="text-sm text-red-700">{q.error.message}</p>}
      {q.isLoading && <p className="text-sm text-slate-500">Loading…</p>}
      {q.data && groups.length === 0 && <p className="text-sm text-slate-500">{status ? `No ${status} events.` : 'No failed events.'}</p>}
      {groups.length > 0 && (
        <div className="overflow-x-auto">
        <table className="w-full text-sm" data-testid="failure-groups">
          <thead className={TABLE_HEAD}>
            <tr>
              <th scope="col" className="py-1 pr-3 text-right">Events</th>
              <th scope="col" className="py-1 pr-3">Cause</th>
              <th scope="col" className="py-1 pr-3">Arrivals</th>
              <th scope="col" className="py-1 pr-3">Seen</th>
              <th scope="col" className="py-1 pr-3">Endpoints</th>
              <th scope="col" className="py-1" />
            </tr>
          </thead>
          <tbody>
            {groups.map((g) => (
              <GroupRow key={g.groupId} g={g} sparkWindow={q.data?.spark} countedFrom={q.data?.countedFrom} status={status} onAction={(kind, group) => setPending({ kind, group, countedFrom: q.data?.countedFrom ?? null, status })} />
            ))}
          </tbody>
        </table>
        </div>
      )}
      {pending && (
        <BulkJobConfirm
          kind={pending.kind}
          selection={groupSelection(pending.group.groupId, pending.countedFrom, pending.status)}
          what={groupWhat(pending.group.title, pending.countedFrom, time, pending.status)}
          onClose={() => setPending(null)}
        />
      )}
    </div>
  );
}
