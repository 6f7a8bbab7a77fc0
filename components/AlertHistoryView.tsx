'use client';
// Alert history: what fired, when, when it recovered, the page that shows the problem, and whether each notice
// reached its channels. Newest first, refreshed every 15 s; filter (text, firing or recovered), sort and how many of
// the newest are loaded live in the URL (alertHistorySearch), so a reload, a link, Back and Forward restore them.
import Link from './Link.tsx';
import { useMemo } from 'react';
import { useQuery } from '@tanstack/react-query';
import { ErrorBox, Timestamp } from './format.tsx';
import { comparator, SortableTh, TABLE_HEAD, Th, type SortDirection } from './table.tsx';
import { RULE_LABELS, type AlertView } from './admin/alertsApi.ts';
import { alertHistoryQuery } from './queries.ts';
import { ALERT_HISTORY_PAGE, alertHistorySearch, type AlertHistorySearch } from './urlState.ts';
import { useUrlSort, useUrlState } from './useUrlState.ts';
import { UrlFilterBox, useUrlFilter } from './UrlFilterBox.tsx';

type SortKey = AlertHistorySearch['sort'];
const byFired = (a: AlertView, b: AlertView) => a.firedAt.localeCompare(b.firedAt);
/** Ascending orders; the headers flip them. A firing alert (not recovered) counts as the latest recovery. */
const sorters: Record<SortKey, (a: AlertView, b: AlertView) => number> = {
  fired: byFired,
  recovered: (a, b) => (a.recoveredAt ?? '\uffff').localeCompare(b.recoveredAt ?? '\uffff'),
  rule: (a, b) => a.ruleName.localeCompare(b.ruleName),
};
/** Times newest first, names A→Z. */
const NATURAL: Record<SortKey, SortDirection> = { fired: 'desc', recovered: 'desc', rule: 'asc' };

export function AlertHistoryView() {
  const { search, update } = useUrlState(alertHistorySearch);
  const filter = useUrlFilter(search.q, update);
  const { sort, onSort } = useUrlSort(search, NATURAL, update);
  const q = useQuery(alertHistoryQuery(search.limit));
  const loaded = q.data?.alerts ?? [];
  const alerts = useMemo(() => {
    const f = filter.text.trim().toLowerCase();
    return loaded
      .filter((a) => !f || a.ruleName.toLowerCase().includes(f) || (a.summary ?? '').toLowerCase().includes(f))
      .filter((a) => search.state === '' || (search.state === 'firing') === (a.recoveredAt === null))
      .sort(comparator(sorters, sort, (a, b) => byFired(b, a)));
  }, [loaded, filter.text, search.state, sort]);
  // Fewer than asked for: the history has no more.
  const more = loaded.length >= search.limit && search.limit < 1000;
  const header = (key: SortKey, label: string) => <SortableTh label={label} sortKey={key} sort={sort} onSort={onSort} />;
  return (
    <section>
      <div className="mb-3 flex items-baseline gap-3">
        <h1 className="text-xl font-semibold">Alerts</h1>
        <Link href="/admin/alerts" className="text-sm text-sky-700 hover:underline">
          rules and channels
        </Link>
      </div>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <UrlFilterBox filter={filter} label="Filter alerts" placeholder="Filter by rule or what happened" />
        <label className="flex items-center gap-1 text-sm text-slate-600">
          State
          <select
            value={search.state}
            onChange={(e) => update({ state: e.target.value as AlertHistorySearch['state'] })}
            className="rounded border border-slate-300 px-1.5 py-1 text-sm"
          >
            <option value="">all</option>
            <option value="firing">firing</option>
            <option value="recovered">recovered</option>
          </select>
        </label>
      </div>
      <ErrorBox error={q.error} />
      {q.data && loaded.length === 0 ? <p className="text-sm text-slate-500">Nothing has fired.</p> : null}
      {q.data && loaded.length > 0 && alerts.length === 0 ? <p className="text-sm text-slate-500">No alert matches the filter.</p> : null}
      <div className="overflow-x-auto">
      <table className="w-full border-collapse text-sm" data-testid="alert-history">
        <thead className={TABLE_HEAD}>
          <tr>
            {header('rule', 'Rule')}
            <Th>What</Th>
            {header('fired', 'Fired')}
            {header('recovered', 'Recovered')}
            <Th>Notices</Th>
          </tr>
        </thead>
        <tbody>
          {alerts.map((a) => (
            <tr key={a.id} className="border-t border-slate-100 align-top" data-alert={a.id}>
              <td className="py-1">
                <div className="font-medium">{a.ruleName}</div>
                <div className="text-xs text-slate-500">{RULE_LABELS[a.ruleType] ?? a.ruleType}</div>
              </td>
              <td>
                {a.summary !== null && a.link !== null ? (
                  <Link href={a.link} className="text-sky-700 hover:underline">
                    {a.summary}
                  </Link>
                ) : (
                  // A site-wide rule that fired for an endpoint the caller may not read (server/alerts/readScope.ts).
                  <span className="text-slate-500" data-testid="alert-withheld">
                    value {a.value}; what it names is on an endpoint you may not read
                  </span>
                )}
              </td>
              <td className="whitespace-nowrap text-xs">
                <Timestamp at={a.firedAt} />
              </td>
              <td className="whitespace-nowrap text-xs">
                {a.recoveredAt ? <Timestamp at={a.recoveredAt} /> : <span className="font-semibold text-red-700">firing</span>}
                {/* Closed by the operator, not recovered: no "recovered" notice was sent (server/alerts/model.ts closedBy). */}
                {a.closedBy ? <div className="text-slate-500">closed: rule {a.closedBy === 'ruleDeleted' ? 'deleted' : 'disabled'}</div> : null}
              </td>
              <td className="text-xs">
                {a.deliveries.length === 0 ? <span className="text-slate-500">no channel</span> : null}
                {a.deliveries.map((d, i) => (
                  <div key={i} className={d.ok ? 'text-emerald-700' : 'text-red-700'}>
                    {d.notice}: {d.ok ? 'delivered' : (d.error ?? 'failed')}
                  </div>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
      {more ? (
        <button type="button" onClick={() => update({ limit: search.limit + ALERT_HISTORY_PAGE })} disabled={q.isPlaceholderData} className="mt-2 rounded border border-slate-300 px-3 py-1 text-sm">
          {q.isPlaceholderData ? 'Loading…' : 'Show more'}
        </button>
      ) : null}
    </section>
  );
}
