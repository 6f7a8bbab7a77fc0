'use client';
// Topology → Subscriptions: every topic with its subscriptions (status, sessions, forward-to, rules compared with
// the catalog's topology, and the runtime counts); sortable, filterable, refreshed every 10 s. Pause / resume and
// rule restore ask for the typed subscription name; the dead-letter count links to the dead-letter browser.
import Link from '../Link.tsx';
import { useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ErrorBox } from '../format.tsx';
import { comparator, NUMERIC_CELL, SortableTh, TABLE_HEAD, Th, type SortDirection } from '../table.tsx';
import { deadLettersHref, opsApi, type SubscriptionView } from './opsApi.ts';
import { TypedConfirmDialog } from './TypedConfirmDialog.tsx';
import { useCan } from '../audit/accessApi.ts';
import { queryKeys, topologyQuery } from '../queries.ts';
import { subscriptionsSearch, type SubscriptionsSearch } from '../urlState.ts';
import { useUrlSort, useUrlState } from '../useUrlState.ts';
import { UrlFilterBox, useUrlFilter } from '../UrlFilterBox.tsx';

type SortKey = SubscriptionsSearch['sort'];
type Action = { kind: 'pause' | 'resume' | 'restoreRules'; sub: SubscriptionView };

const byName = (a: SubscriptionView, b: SubscriptionView) => a.topic.localeCompare(b.topic) || a.name.localeCompare(b.name);
/** Ascending orders; the headers flip them. */
const sorters: Record<SortKey, (a: SubscriptionView, b: SubscriptionView) => number> = {
  name: byName,
  deadLetter: (a, b) => a.counts.deadLetter - b.counts.deadLetter,
  active: (a, b) => a.counts.active - b.counts.active,
  drift: (a, b) => a.missingRules.length + a.extraRules.length - (b.missingRules.length + b.extraRules.length),
};
/** The direction a column starts in: names A→Z, counts and drift largest first. */
const NATURAL: Record<SortKey, SortDirection> = { name: 'asc', deadLetter: 'desc', active: 'desc', drift: 'desc' };

const ACTION_TEXT: Record<Action['kind'], { title: string; label: string; what: string }> = {
  pause: { title: 'Pause subscription', label: 'Pause', what: 'Receivers will be refused (status ReceiveDisabled); messages keep arriving and wait.' },
  resume: { title: 'Resume subscription', label: 'Resume', what: 'Receivers may take messages again (status Active).' },
  restoreRules: { title: 'Restore missing rules', label: 'Restore rules', what: 'The rules the catalog topology expects are created; rules with other SQL are replaced.' },
};

export function SubscriptionsView() {
  const client = useQueryClient();
  // Pause/resume/restore are Owner actions on the topic's endpoint; hidden for everyone else.
  const can = useCan();
  // Filter, "only needing attention" and sort live in the URL (shareable, kept on reload); the text box keeps its
  // own state while typing so the caret never jumps.
  const { search, update } = useUrlState(subscriptionsSearch);
  const filter = useUrlFilter(search.q, update);
  const { attention: onlyAttention } = search;
  const setOnlyAttention = (v: boolean) => update({ attention: v });
  const { sort, onSort } = useUrlSort(search, NATURAL, update);
  const [action, setAction] = useState<Action | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const q = useQuery(topologyQuery());
  const run = useMutation({
    mutationFn: (a: { action: Action; confirm: string }) => opsApi.action(a.action.sub.topic, a.action.sub.name, a.action.kind, a.confirm),
    onSuccess: (result, a) => {
      setMessage(`${ACTION_TEXT[a.action.kind].label}: ${a.action.sub.topic}/${a.action.sub.name} — ${JSON.stringify(result)}`);
      setAction(null);
      void client.invalidateQueries({ queryKey: queryKeys.topology });
    },
  });

  // An action opens its dialog with no error of an earlier one; a failure keeps the dialog open with the error
  // inside it (the page behind a modal dialog is inert and never announced), and closing the dialog forgets it.
  const openAction = (a: Action) => {
    run.reset();
    setAction(a);
  };
  const closeAction = () => {
    setAction(null);
    run.reset();
  };

  const rows = useMemo(() => {
    const f = filter.text.trim().toLowerCase();
    return (q.data?.topics ?? [])
      .flatMap((t) => t.subscriptions)
      .filter((s) => !f || s.topic.toLowerCase().includes(f) || s.name.toLowerCase().includes(f))
      .filter((s) => !onlyAttention || s.counts.deadLetter > 0 || s.missingRules.length > 0 || s.extraRules.length > 0 || s.status !== 'Active')
      .sort(comparator(sorters, sort, byName));
  }, [q.data, filter.text, onlyAttention, sort]);

  const header = (key: SortKey, label: string, numeric = false) => (
    <SortableTh label={label} sortKey={key} sort={sort} onSort={onSort} numeric={numeric} className="px-3 py-2" />
  );

  return (
    <section>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold">Topology · Subscriptions</h1>
        <UrlFilterBox filter={filter} label="Filter subscriptions" placeholder="Filter by topic or subscription" alignEnd />
        <label className="flex items-center gap-1 text-sm text-slate-600">
          <input type="checkbox" checked={onlyAttention} onChange={(e) => setOnlyAttention(e.target.checked)} />
          Only needing attention
        </label>
      </div>
      <ErrorBox error={q.error} />
      {message && (
        <p role="status" className="mb-2 rounded border border-emerald-200 bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
          {message}
        </p>
      )}
      {q.isLoading ? (
        <p className="text-sm text-slate-500">Loading…</p>
      ) : (
        <div className="overflow-x-auto rounded border border-slate-200 bg-white">
          <table className="w-full text-sm">
            <thead className={TABLE_HEAD}>
              <tr>
                {header('name', 'Topic / subscription')}
                <Th className="px-3 py-2">Status</Th>
                <Th className="px-3 py-2">Sessions</Th>
                <Th className="px-3 py-2">Forward to</Th>
                {header('drift', 'Rules')}
                {header('active', 'Active', true)}
                {header('deadLetter', 'Dead letters', true)}
                <Th numeric className="px-3 py-2">
                  Transfer DLQ
                </Th>
                <Th numeric className="px-3 py-2">
                  Scheduled (topic)
                </Th>
                <Th className="px-3 py-2">Actions</Th>
              </tr>
            </thead>
            <tbody>
              {rows.map((s) => (
                <tr key={`${s.topic}/${s.name}`} className="border-t border-slate-100 align-top" data-subscription={`${s.topic}/${s.name}`}>
                  <td className="px-3 py-2">
                    <span className="text-slate-500">{s.topic}</span> / <span className="font-medium">{s.name}</span>
                    {s.purpose && <div className="text-xs text-slate-500">{s.purpose}</div>}
                  </td>
                  <td className={`px-3 py-2 ${s.status === 'Active' ? 'text-emerald-700' : 'font-medium text-amber-700'}`}>{s.status}</td>
                  <td className="px-3 py-2">{s.requiresSession ? 'on' : 'off'}</td>
                  <td className="px-3 py-2">{s.forwardTo ?? <span className="text-slate-500">—</span>}</td>
                  <td className="px-3 py-2">
                    <details>
                      <summary className="cursor-pointer">
                        {s.rules.length} rule{s.rules.length === 1 ? '' : 's'}
                        {s.missingRules.length > 0 && <span className="ml-1 rounded bg-red-100 px-1 text-xs text-red-800">{s.missingRules.length} missing</span>}
                        {s.extraRules.length > 0 && <span className="ml-1 rounded bg-amber-100 px-1 text-xs text-amber-900">{s.extraRules.length} extra</span>}
                        {!s.inTopology && <span className="ml-1 rounded bg-slate-100 px-1 text-xs text-slate-600">not in catalog</span>}
                      </summary>
                      <ul className="mt-1 space-y-1 font-mono text-xs">
                        {s.rules.map((r) => (
                          <li key={r.name}>
                            <b>{r.name}</b>: {r.filter ?? '—'}
                            {r.action ? ` → ${r.action}` : ''}
                          </li>
                        ))}
                        {s.missingRules.map((r) => (
                          <li key={`missing-${r.name}`} className="text-red-700">
                            missing <b>{r.name}</b>: {r.filter}
                            {r.action ? ` → ${r.action}` : ''}
                            {r.changed ? ` (now: ${r.changed})` : ''}
                          </li>
                        ))}
                        {s.extraRules.map((r) => (
                          <li key={`extra-${r}`} className="text-amber-800">
                            extra <b>{r}</b>
                          </li>
                        ))}
                      </ul>
                    </details>
                  </td>
                  <td className={`px-3 py-2 ${NUMERIC_CELL}`}>{s.counts.active.toLocaleString()}</td>
                  <td className={`px-3 py-2 ${NUMERIC_CELL}`}>
                    {s.counts.deadLetter > 0 ? (
                      <Link href={deadLettersHref(s.topic, s.name)} className="font-semibold text-rose-700 hover:underline">
                        {s.counts.deadLetter.toLocaleString()}
                      </Link>
                    ) : (
                      <Link href={deadLettersHref(s.topic, s.name)} className="text-slate-500 hover:underline">
                        0
                      </Link>
                    )}
                  </td>
                  <td className={`px-3 py-2 ${NUMERIC_CELL}`}>{s.counts.transferDeadLetter.toLocaleString()}</td>
                  <td className={`px-3 py-2 ${NUMERIC_CELL}`}>{s.counts.scheduled.toLocaleString()}</td>
                  <td className="space-x-2 whitespace-nowrap px-3 py-2">
                    {!can('subscription.pause', s.topic) ? null : s.status === 'ReceiveDisabled' ? (
                      <button type="button" className="text-sky-700 hover:underline" onClick={() => openAction({ kind: 'resume', sub: s })}>
                        Resume
                      </button>
                    ) : (
                      <button type="button" className="text-sky-700 hover:underline" onClick={() => openAction({ kind: 'pause', sub: s })}>
                        Pause
                      </button>
                    )}
                    {s.missingRules.length > 0 && can('subscription.restoreRules', s.topic) && (
                      <button type="button" className="text-red-700 hover:underline" onClick={() => openAction({ kind: 'restoreRules', sub: s })}>
                        Restore rules
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {action && (
        <TypedConfirmDialog
          title={`${ACTION_TEXT[action.kind].title}: ${action.sub.topic}/${action.sub.name}`}
          expected={action.sub.name}
          confirmLabel={ACTION_TEXT[action.kind].label}
          busy={run.isPending}
          onCancel={closeAction}
          onConfirm={(typed) => run.mutate({ action, confirm: typed })}
        >
          <p>{ACTION_TEXT[action.kind].what}</p>
          {action.kind === 'restoreRules' && (
            <ul className="mt-2 list-disc pl-5 font-mono text-xs">
              {action.sub.missingRules.map((r) => (
                <li key={r.name}>
                  {r.name}: {r.filter}
                  {r.action ? ` → ${r.action}` : ''}
                </li>
              ))}
            </ul>
          )}
          {run.error && (
            <div className="mt-3">
              <ErrorBox error={run.error} />
            </div>
          )}
        </TypedConfirmDialog>
      )}
    </section>
  );
}
