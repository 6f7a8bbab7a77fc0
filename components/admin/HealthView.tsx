'use client';
// Admin → Health: the heartbeat settings (off by default), "Send now", the Resolver's liveness and every
// endpoint's heartbeat: status (On / Unsupported / Off / Pending / Unknown), round trip, last seen, SDK version
// and whether it is included in the scheduled probes. Refreshes every 5 s. An endpoint whose probe is overdue while
// it keeps answering other messages is marked busy beside its last status (the probe is queued behind its backlog,
// server/heartbeat/evidence.ts), and a round trip longer than the timeout is marked late: a slow endpoint must not
// read as a dead one. One whose probe is overdue while its last answer cannot be read says "evidence unknown" (the
// server keeps checking, and turns the probe Off only if that lasts two timeouts).
// The settings form shows the server's values, refreshed with the page, except the fields this operator has changed;
// Save sends only those, with the settings version they are based on (heartbeatSettingsForm.ts). If another Owner
// changed one of them meanwhile the server refuses the save (409, nothing applied): the page says so, shows the
// server's values for those fields and keeps the operator's own beside them to re-apply. Without the permission to
// change them the fields are read-only.
import Link from '../Link.tsx';
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Ago, ErrorBox, useNow } from '../format.tsx';
import { opsApi, type HealthOverview } from '../topology/opsApi.ts';
import { useCan, useMe } from '../audit/accessApi.ts';
import { NUMERIC_CELL, TABLE_HEAD } from '../table.tsx';
import { EvidenceUnknown } from '../EvidenceUnknown.tsx';
import { healthQuery, queryKeys } from '../queries.ts';
import { formatMs } from '../charts/duration.ts';
import { ApiError } from '../api.ts';
import { afterConflict, edit, NO_EDITS, reapply, saveBody, type ConflictingField, type Edits, type SettingsField } from './heartbeatSettingsForm.ts';

const FIELD_LABEL: Record<SettingsField, string> = {
  enabled: 'Send probes on a schedule',
  intervalSeconds: 'Interval (seconds)',
  timeoutSeconds: 'Timeout (seconds)',
};

const shown = (v: boolean | number | string) => (typeof v === 'boolean' ? (v ? 'on' : 'off') : String(v));

const isConflict = (err: unknown) => err instanceof ApiError && err.status === 409;

const STATUS_STYLE: Record<string, string> = {
  On: 'bg-emerald-100 text-emerald-800',
  Off: 'bg-red-100 text-red-800',
  Pending: 'bg-sky-100 text-sky-800',
  Unsupported: 'bg-orange-100 text-orange-800',
  Unknown: 'bg-slate-100 text-slate-600',
};

function Status({ s }: { s: string }) {
  return <span className={`rounded px-1.5 py-0.5 text-xs font-medium ${STATUS_STYLE[s] ?? STATUS_STYLE.Unknown}`} data-heartbeat-status={s}>{s}</span>;
}

type EndpointRow = HealthOverview['endpoints'][number];

/** Why an endpoint with an overdue probe is not Off: it answered other messages meanwhile. */
function Busy({ e, now }: { e: EndpointRow; now: number }) {
  const behind = e.backlog ? `queued behind ${e.backlog} pending message${e.backlog === 1 ? '' : 's'}` : 'queued';
  return (
    <span className="block text-xs text-amber-800" data-heartbeat-busy>
      Busy — probe {behind}; last answered a message <Ago at={e.lastHandledAt} now={now} />
    </span>
  );
}

/** A refused save, inside the form: what changed on the server and the operator's own values, to re-apply. */
function SaveConflict({ fields, onReapply }: { fields: ConflictingField[]; onReapply: () => void }) {
  return (
    <div role="alert" data-testid="heartbeat-settings-conflict" className="rounded border border-amber-300 bg-amber-50 px-3 py-2 text-amber-900">
      <p className="font-medium">Not saved: another Owner changed the settings after this page read them. Nothing of your save was applied.</p>
      {fields.length > 0 ? (
        <>
          <p className="mt-1">The form now shows their values for the fields you had changed too:</p>
          <ul className="mt-1 list-disc pl-5">
            {fields.map((f) => (
              <li key={f.field}>
                {FIELD_LABEL[f.field]}: now {shown(f.theirs)}, yours {shown(f.yours)}
              </li>
            ))}
          </ul>
          <button type="button" onClick={onReapply} className="mt-2 rounded border border-amber-400 bg-white px-3 py-1 hover:bg-amber-100">
            Re-apply my changes
          </button>
        </>
      ) : (
        <p className="mt-1">Their change does not touch the fields you edited; check the form and Save again.</p>
      )}
    </div>
  );
}

export function HealthView() {
  const now = useNow(5000);
  const client = useQueryClient();
  // Settings are the Owner's, a probe the Operator's: hidden or read-only for the others (the server refuses).
  const can = useCan();
  const q = useQuery(healthQuery());
  const me = useMe();
  const canEdit = can('heartbeat.settings');
  // Only the fields the operator changed; every other field shows the server's value as the page refreshes.
  const [edits, setEdits] = useState<Edits>(NO_EDITS);
  const draft = edits.draft;
  // The operator's edits a refused save left out of the form (another Owner changed those fields), to re-apply.
  const [conflict, setConflict] = useState<{ fields: ConflictingField[] } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const current = q.data?.settings;
  const form = current && {
    enabled: draft.enabled ?? current.enabled,
    intervalSeconds: draft.intervalSeconds ?? String(current.intervalSeconds),
    timeoutSeconds: draft.timeoutSeconds ?? String(current.timeoutSeconds),
  };
  const change = <F extends SettingsField>(field: F, value: NonNullable<Edits['draft'][F]>) => current && setEdits(edit(edits, current, field, value));
  const changed = Object.keys(draft).length > 0;
  const invalidate = () => void client.invalidateQueries({ queryKey: queryKeys.health });
  const save = useMutation({
    // The edits go in as the mutation's variables, so a refused save is sorted out against what was sent.
    mutationFn: (sent: Edits) => opsApi.saveHeartbeatSettings(saveBody(sent, current!)),
    onSuccess: (saved) => {
      // The stored values and their version at once (clamped by the server), then the page's next read.
      client.setQueryData(healthQuery().queryKey, (old) =>
        old
          ? { ...old, settings: { ...old.settings, enabled: saved.enabled, intervalSeconds: saved.intervalSeconds, timeoutSeconds: saved.timeoutSeconds, version: saved.version } }
          : old,
      );
      setEdits(NO_EDITS);
      setConflict(null);
      setNotice(`Saved: ${saved.enabled ? 'enabled' : 'disabled'}, every ${saved.intervalSeconds} s, timeout ${saved.timeoutSeconds} s.`);
      invalidate();
    },
    onError: async (err, sent) => {
      if (!isConflict(err)) return;
      setNotice(null);
      // Nothing was applied: read the server's values again and sort the edits against them.
      const fresh = (await q.refetch()).data?.settings;
      if (!fresh) return;
      const r = afterConflict(sent, fresh);
      setEdits(r.edits);
      setConflict({ fields: r.conflicts });
    },
  });
  const sendNow = useMutation({ mutationFn: opsApi.sendHeartbeatNow, onSuccess: (r) => (setNotice(`Sent ${r.count} probes.`), invalidate()) });
  const toggle = useMutation({ mutationFn: (a: { endpointId: string; included: boolean }) => opsApi.setHeartbeatIncluded(a.endpointId, a.included), onSuccess: invalidate });
  const r = q.data?.resolver;

  return (
    <section>
      <div className="mb-3 flex items-baseline gap-3">
        <h1 className="text-xl font-semibold">Admin · Health</h1>
        <Link href="/admin/alerts" className="text-sm text-sky-700 hover:underline">
          Admin · Alerts
        </Link>
      </div>
      <ErrorBox error={q.error ?? (isConflict(save.error) ? null : save.error) ?? sendNow.error ?? toggle.error} />
      {notice && (
        <p role="status" className="mb-2 rounded border border-emerald-200 bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
          {notice}
        </p>
      )}
      <div className="mb-4 grid gap-4 md:grid-cols-2">
        <form
          className="rounded border border-slate-200 bg-white p-3 text-sm"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate(edits);
          }}
        >
          <h2 className="mb-2 font-semibold">Heartbeat schedule</h2>
          {form && (
            <div className="space-y-2">
              {conflict && current && <SaveConflict fields={conflict.fields} onReapply={() => (setEdits(reapply(edits, current, conflict.fields)), setConflict(null))} />}
              <fieldset disabled={!canEdit || save.isPending} className="space-y-2" data-testid="heartbeat-settings">
                <label className="flex items-center gap-2">
                  <input type="checkbox" checked={form.enabled} onChange={(e) => change('enabled', e.target.checked)} /> Send probes on a schedule
                </label>
                <label className="block">
                  Interval (seconds, at least 30)
                  <input type="number" min={30} value={form.intervalSeconds} onChange={(e) => change('intervalSeconds', e.target.value)} className="ml-2 w-24 rounded border border-slate-300 px-1 disabled:bg-slate-50" />
                </label>
                <label className="block">
                  Timeout (seconds, 5 to the interval)
                  <input type="number" min={5} value={form.timeoutSeconds} onChange={(e) => change('timeoutSeconds', e.target.value)} className="ml-2 w-24 rounded border border-slate-300 px-1 disabled:bg-slate-50" />
                </label>
              </fieldset>
              {me.data && !canEdit && <p className="text-xs text-slate-500">Only an Owner can change the schedule.</p>}
              <div className="flex gap-2">
                {canEdit && <button type="submit" disabled={save.isPending || !changed} className="rounded bg-sky-600 px-3 py-1 font-medium text-white hover:bg-sky-700 disabled:opacity-50">
                  Save
                </button>}
                {canEdit && changed && <button type="button" disabled={save.isPending} onClick={() => (setEdits(NO_EDITS), setConflict(null))} className="rounded border border-slate-300 px-3 py-1 hover:bg-slate-50 disabled:opacity-50">
                  Discard changes
                </button>}
                {can('heartbeat.send') && <button type="button" disabled={sendNow.isPending} onClick={() => sendNow.mutate()} className="rounded border border-sky-600 px-3 py-1 text-sky-700 hover:bg-sky-50 disabled:opacity-50">
                  Send now
                </button>}
              </div>
              <p className="text-xs text-slate-500">
                Last scheduled send: <Ago at={q.data?.settings.lastSentAt ?? null} now={now} />
              </p>
            </div>
          )}
        </form>
        <div className="rounded border border-slate-200 bg-white p-3 text-sm" data-resolver-health>
          <h2 className="mb-2 font-semibold">Resolver</h2>
          {r && (
            <dl className="grid grid-cols-2 gap-1">
              <dt className="text-slate-500">Status</dt>
              <dd>
                <Status s={r.status} /> {r.probeInFlight && <span className="text-xs text-sky-700">probe in flight</span>}
              </dd>
              <dt className="text-slate-500">Last seen</dt>
              <dd>
                <Ago at={r.lastSeenAt} now={now} />
              </dd>
              <dt className="text-slate-500">Round trip</dt>
              <dd>{r.roundTripMs == null ? '—' : formatMs(r.roundTripMs)}</dd>
              <dt className="text-slate-500">Version</dt>
              <dd>{r.version ?? '—'}</dd>
              <dt className="text-slate-500">Last probe</dt>
              <dd>
                <Ago at={r.lastProbeSentAt} now={now} />
              </dd>
            </dl>
          )}
          <p className="mt-2 text-xs text-slate-500">Every endpoint Off at once usually means the Resolver is down.</p>
        </div>
      </div>
      <div className="overflow-x-auto rounded border border-slate-200 bg-white">
        <table className="w-full text-sm">
          <thead className={TABLE_HEAD}>
            <tr>
              <th scope="col" className="px-3 py-2">Endpoint</th>
              <th scope="col" className="px-3 py-2">Status</th>
              <th scope="col" className={`px-3 py-2 ${NUMERIC_CELL}`}>Round trip</th>
              <th scope="col" className="px-3 py-2">Last seen</th>
              <th scope="col" className="px-3 py-2">Last sent</th>
              <th scope="col" className="px-3 py-2">SDK version</th>
              <th scope="col" className="px-3 py-2">Included</th>
            </tr>
          </thead>
          <tbody>
            {(q.data?.endpoints ?? []).map((e) => (
              <tr key={e.endpointId} className="border-t border-slate-100" data-endpoint={e.endpointId}>
                <td className="px-3 py-2 font-medium">{e.endpointId}</td>
                <td className="px-3 py-2">
                  <Status s={e.status} />{' '}
                  {e.probeInFlight && e.status !== 'Pending' && !e.busy && !e.evidenceUnknown && <span className="text-xs text-sky-700">probe in flight</span>}
                  {e.busy && <Busy e={e} now={now} />}
                  {e.evidenceUnknown && <EvidenceUnknown />}
                </td>
                <td className={`px-3 py-2 ${NUMERIC_CELL}`}>
                  {e.roundTripMs == null ? '—' : formatMs(e.roundTripMs)}
                  {e.answeredLate && (
                    <span className="block text-xs text-amber-800" data-heartbeat-late>
                      answered late
                    </span>
                  )}
                </td>
                <td className="px-3 py-2">
                  <Ago at={e.lastSeenAt} now={now} />
                </td>
                <td className="px-3 py-2">
                  <Ago at={e.lastSentAt} now={now} />
                </td>
                <td className="px-3 py-2">{e.sdkVersion ?? (e.status === 'Unsupported' ? <span className="text-xs text-slate-500">pre-heartbeat SDK</span> : '—')}</td>
                <td className="px-3 py-2">
                  <input
                    type="checkbox"
                    aria-label={`Include ${e.endpointId} in heartbeats`}
                    checked={e.included}
                    disabled={toggle.isPending || !can('heartbeat.settings', e.endpointId)}
                    onChange={(ev) => toggle.mutate({ endpointId: e.endpointId, included: ev.target.checked })}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
