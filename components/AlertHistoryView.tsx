'use client';
// Alert history: what fired, when, when it recovered, the page that shows the problem, and whether each notice
// reached its channels. Newest first, refreshed every 15 s.
import Link from 'next/link';
import { useQuery } from '@tanstack/react-query';
import { ErrorBox, Timestamp } from './format.tsx';
import { TABLE_HEAD } from './table.tsx';
import { RULE_LABELS } from './admin/alertsApi.ts';
import { alertHistoryQuery } from './queries.ts';

export function AlertHistoryView() {
  const q = useQuery(alertHistoryQuery());
  const alerts = q.data?.alerts ?? [];
  return (
    <section>
      <div className="mb-3 flex items-baseline gap-3">
        <h1 className="text-xl font-semibold">Alerts</h1>
        <Link href="/admin/alerts" className="text-sm text-sky-700 hover:underline">
          rules and channels
        </Link>
      </div>
      <ErrorBox error={q.error} />
      {q.data && alerts.length === 0 ? <p className="text-sm text-slate-500">Nothing has fired.</p> : null}
      <div className="overflow-x-auto">
      <table className="w-full border-collapse text-sm" data-testid="alert-history">
        <thead className={TABLE_HEAD}>
          <tr>
            <th scope="col" className="py-1">Rule</th>
            <th scope="col">What</th>
            <th scope="col">Fired</th>
            <th scope="col">Recovered</th>
            <th scope="col">Notices</th>
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
                <Link href={a.link} className="text-sky-700 hover:underline">
                  {a.summary}
                </Link>
              </td>
              <td className="whitespace-nowrap text-xs">
                <Timestamp at={a.firedAt} />
              </td>
              <td className="whitespace-nowrap text-xs">{a.recoveredAt ? <Timestamp at={a.recoveredAt} /> : <span className="font-semibold text-red-700">firing</span>}</td>
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
    </section>
  );
}
