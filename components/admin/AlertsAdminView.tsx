'use client';
// Admin → Alerts: the alert rules (with what their last evaluation said) and the notification channels. Owners
// change them (the server refuses everyone else; every change is audited); secrets are write-only: the page only
// learns that a URL or password is set, and leaving the field empty on an edit keeps the stored one - unless the
// edit moves the channel to another server or weakens an SMTP channel's TLS (secure on to off), when the save's 400
// (shown under the form) asks for it again.
import Link from '../Link.tsx';
import { useMemo, useState, type ReactNode } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Ago, ErrorBox, useNow } from '../format.tsx';
import { useCan } from '../audit/accessApi.ts';
import { alertsApi, RULE_LABELS, type ChannelView, type RuleBody, type RuleType, type RuleView } from './alertsApi.ts';
import { comparator, SortableTh, TABLE_HEAD, Th, type SortDirection } from '../table.tsx';
import { alertRulesQuery, queryKeys } from '../queries.ts';
import { alertRulesSearch, type AlertRulesSearch } from '../urlState.ts';
import { useUrlSort, useUrlState } from '../useUrlState.ts';
import { UrlFilterBox, useUrlFilter } from '../UrlFilterBox.tsx';
import { useExactIdErrors } from '../exactIdErrors.tsx';

type SortKey = AlertRulesSearch['sort'];
const byName = (a: RuleView, b: RuleView) => a.name.localeCompare(b.name);
/** 0 ok, 1 not evaluated yet, 2 cannot be evaluated, 3 firing: ascending puts the calm ones first. */
const stateRank = (r: RuleView) => (!r.state ? 1 : r.state.firing ? 3 : r.state.lastStatus === 'unavailable' ? 2 : 0);
/** Ascending orders; the headers flip them. */
const sorters: Record<SortKey, (a: RuleView, b: RuleView) => number> = {
  name: byName,
  type: (a, b) => RULE_LABELS[a.type].localeCompare(RULE_LABELS[b.type]),
  state: (a, b) => stateRank(a) - stateRank(b),
};
/** Names and rule kinds A→Z; the state with the firing ones first. */
const NATURAL: Record<SortKey, SortDirection> = { name: 'asc', type: 'asc', state: 'desc' };

const TYPES = Object.keys(RULE_LABELS) as RuleType[];
const NEEDS = {
  endpoint: new Set<RuleType>(['failureRate']),
  endpointOptional: new Set<RuleType>(['deadLetterBacklog', 'blockedSession', 'pendingHandoff', 'heartbeatMissing', 'newFailureGroup']),
  threshold: new Set<RuleType>(['failureRate', 'deadLetterBacklog']),
  duration: new Set<RuleType>(['blockedSession', 'heartbeatMissing', 'resolverLiveness']),
};

const input = 'rounded border border-slate-300 px-1.5 py-1 text-sm';
/**
 * The shell of the rule and channel forms: the fields, then Save/Add, Cancel and the save's error. A successful
 * save refreshes the rules and channels (one query) and closes the form. `check`, when given, is asked first: false
 * sends nothing (it has said why beside a box).
 */
function EditForm({ testId, submitLabel, save, check, onDone, children }: { testId: string; submitLabel: string; save: () => Promise<unknown>; check?: () => boolean; onDone: () => void; children: ReactNode }) {
  const qc = useQueryClient();
  const saving = useMutation({
    mutationFn: save,
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: queryKeys.alertRules });
      onDone();
    },
  });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (!check || check()) saving.mutate();
      }}
      className="grid gap-2 rounded border border-slate-200 bg-slate-50 p-3 text-sm md:grid-cols-3"
      data-testid={testId}
    >
      {children}
      <div className="flex items-center gap-2 md:col-span-3">
        <button type="submit" className="rounded bg-slate-800 px-3 py-1 text-white disabled:opacity-50" disabled={saving.isPending}>
          {submitLabel}
        </button>
        <button type="button" className="text-sky-700 hover:underline" onClick={onDone}>
          Cancel
        </button>
        <ErrorBox error={saving.error} />
      </div>
    </form>
  );
}

const SPAN = { 1: '', 2: ' md:col-span-2', 3: ' md:col-span-3' } as const;

/** A labelled field of those forms: the caption above the control, `span` grid columns wide. */
function Field({ label, span = 1, children }: { label: ReactNode; span?: keyof typeof SPAN; children: ReactNode }) {
  return (
    <label className={`flex flex-col gap-0.5${SPAN[span]}`}>
      <span className="text-xs text-slate-500">{label}</span>
      {children}
    </label>
  );
}

const ID_FIELDS = ['endpointId'] as const;
const emptyRule: RuleBody = { name: '', type: 'failureRate', endpointId: null, threshold: 5, durationSeconds: null, cooldownSeconds: 900, channelIds: [], enabled: true };

function RuleForm({ initial, channels, onDone }: { initial: RuleView | null; channels: ChannelView[]; onDone: () => void }) {
  const [r, setR] = useState<RuleBody>(initial ? { name: initial.name, type: initial.type, endpointId: initial.endpointId, threshold: initial.threshold, durationSeconds: initial.durationSeconds, cooldownSeconds: initial.cooldownSeconds, channelIds: initial.channelIds, enabled: initial.enabled } : emptyRule);
  const num = (v: string) => (v.trim() === '' ? null : Number(v));
  // The endpoint is taken exactly as typed, by the rule the route holds it to (exactIdErrors.tsx): it was trimmed,
  // so " billingendpoint" was saved as billingendpoint. A rule type without the box sends none: a leftover there
  // would be refused where it cannot be seen.
  const idErrors = useExactIdErrors(ID_FIELDS, 'target');
  const takesEndpoint = NEEDS.endpoint.has(r.type) || NEEDS.endpointOptional.has(r.type);
  const body = (): RuleBody => ({ ...r, endpointId: takesEndpoint ? r.endpointId : null });
  return (
    <EditForm
      testId="rule-form"
      submitLabel={initial ? 'Save rule' : 'Add rule'}
      check={() => !takesEndpoint || idErrors.check({ endpointId: r.endpointId ?? '' })}
      save={() => (initial ? alertsApi.updateRule(initial.id, body()) : alertsApi.createRule(body()))}
      onDone={onDone}
    >
      <Field label="Name">
        <input className={input} value={r.name} onChange={(e) => setR({ ...r, name: e.target.value })} required />
      </Field>
      <Field label="Rule" span={2}>
        <select className={input} value={r.type} onChange={(e) => setR({ ...r, type: e.target.value as RuleType })}>
          {TYPES.map((t) => (
            <option key={t} value={t}>
              {RULE_LABELS[t]}
            </option>
          ))}
        </select>
      </Field>
      {takesEndpoint ? (
        // The refusal is outside the label, so the box's name stays its label alone.
        <div className="flex flex-col gap-0.5">
          <Field label={<>Endpoint{NEEDS.endpoint.has(r.type) ? '' : ' (empty: all)'}</>}>
            <input
              {...idErrors.box('endpointId')}
              className={input}
              value={r.endpointId ?? ''}
              onChange={(e) => {
                setR({ ...r, endpointId: e.target.value || null });
                idErrors.clear('endpointId');
              }}
              required={NEEDS.endpoint.has(r.type)}
            />
          </Field>
          {idErrors.note('endpointId')}
        </div>
      ) : null}
      {NEEDS.threshold.has(r.type) ? (
        <Field label={r.type === 'failureRate' ? 'Failures per minute above' : 'Dead letters above'}>
          <input className={input} type="number" min={0} value={r.threshold ?? ''} onChange={(e) => setR({ ...r, threshold: num(e.target.value) })} required />
        </Field>
      ) : null}
      {NEEDS.duration.has(r.type) ? (
        <Field label={<>Longer than (seconds){r.type === 'resolverLiveness' ? ', default 120' : ''}</>}>
          <input className={input} type="number" min={10} value={r.durationSeconds ?? ''} onChange={(e) => setR({ ...r, durationSeconds: num(e.target.value) })} required={r.type !== 'resolverLiveness'} />
        </Field>
      ) : null}
      <Field label="Cool-down (seconds)">
        <input className={input} type="number" min={0} value={r.cooldownSeconds} onChange={(e) => setR({ ...r, cooldownSeconds: Number(e.target.value) })} />
      </Field>
      <fieldset className="flex flex-col gap-0.5 md:col-span-2">
        <legend className="text-xs text-slate-500">Channels</legend>
        <div className="flex flex-wrap gap-3">
          {channels.length === 0 ? <span className="text-xs text-slate-500">no channels yet</span> : null}
          {channels.map((c) => (
            <label key={c.id} className="flex items-center gap-1">
              <input type="checkbox" checked={r.channelIds.includes(c.id)} onChange={(e) => setR({ ...r, channelIds: e.target.checked ? [...r.channelIds, c.id] : r.channelIds.filter((x) => x !== c.id) })} />
              {c.name} <span className="text-xs text-slate-500">({c.type})</span>
            </label>
          ))}
        </div>
      </fieldset>
      <label className="flex items-center gap-1">
        <input type="checkbox" checked={r.enabled} onChange={(e) => setR({ ...r, enabled: e.target.checked })} /> enabled
      </label>
    </EditForm>
  );
}

type ChannelDraft = { type: string; name: string; url: string; headers: string; host: string; port: string; secure: boolean; username: string; password: string; from: string; to: string };

function ChannelForm({ initial, onDone }: { initial: ChannelView | null; onDone: () => void }) {
  const s = (initial?.settings ?? {}) as Record<string, unknown>;
  const [c, setC] = useState<ChannelDraft>({
    type: initial?.type ?? 'webhook',
    name: initial?.name ?? '',
    url: '',
    headers: '',
    host: String(s.host ?? ''),
    port: String(s.port ?? 587),
    secure: Boolean(s.secure),
    username: String(s.username ?? ''),
    password: '',
    from: String(s.from ?? ''),
    to: Array.isArray(s.to) ? (s.to as string[]).join(', ') : '',
  });
  const body = (): Record<string, unknown> => {
    if (c.type === 'email')
      return {
        type: 'email',
        name: c.name,
        host: c.host,
        port: Number(c.port),
        secure: c.secure,
        ...(c.username ? { username: c.username } : {}),
        ...(c.password ? { password: c.password } : {}),
        from: c.from,
        to: c.to.split(',').map((x) => x.trim()).filter(Boolean),
      };
    const b: Record<string, unknown> = { type: c.type, name: c.name, ...(c.url ? { url: c.url } : {}) };
    if (c.type === 'webhook' && c.headers.trim()) b.headers = JSON.parse(c.headers) as unknown;
    return b;
  };
  const secretHint = (k: string) => (initial?.secrets[k]?.set ? 'stored; leave empty to keep' : '');
  return (
    <EditForm
      testId="channel-form"
      submitLabel={initial ? 'Save channel' : 'Add channel'}
      save={() => (initial ? alertsApi.updateChannel(initial.id, body()) : alertsApi.createChannel(body()))}
      onDone={onDone}
    >
      <Field label="Type">
        <select className={input} value={c.type} disabled={initial !== null} onChange={(e) => setC({ ...c, type: e.target.value })}>
          <option value="webhook">Generic webhook (JSON)</option>
          <option value="teams">Microsoft Teams</option>
          <option value="slack">Slack</option>
          <option value="email">E-mail (SMTP)</option>
        </select>
      </Field>
      <Field label="Name" span={2}>
        <input className={input} value={c.name} onChange={(e) => setC({ ...c, name: e.target.value })} required />
      </Field>
      {c.type !== 'email' ? (
        <Field label="Webhook URL (secret)" span={3}>
          <input className={input} type="password" autoComplete="off" placeholder={secretHint('url')} value={c.url} onChange={(e) => setC({ ...c, url: e.target.value })} required={!initial} />
        </Field>
      ) : null}
      {c.type === 'webhook' ? (
        <Field label={<>Extra headers as JSON, e.g. {'{"Authorization":"Bearer …"}'} (secret)</>} span={3}>
          <input className={input} type="password" autoComplete="off" placeholder={secretHint('headers')} value={c.headers} onChange={(e) => setC({ ...c, headers: e.target.value })} />
        </Field>
      ) : null}
      {c.type === 'email' ? (
        <>
          <Field label="SMTP host">
            <input className={input} value={c.host} onChange={(e) => setC({ ...c, host: e.target.value })} required />
          </Field>
          <Field label="Port">
            <input className={input} type="number" value={c.port} onChange={(e) => setC({ ...c, port: e.target.value })} />
          </Field>
          <label className="flex items-center gap-1">
            <input type="checkbox" checked={c.secure} onChange={(e) => setC({ ...c, secure: e.target.checked })} /> TLS from the start (465)
          </label>
          <Field label="User name">
            <input className={input} value={c.username} onChange={(e) => setC({ ...c, username: e.target.value })} />
          </Field>
          <Field label="Password (secret)">
            <input className={input} type="password" autoComplete="off" placeholder={secretHint('password')} value={c.password} onChange={(e) => setC({ ...c, password: e.target.value })} />
          </Field>
          <Field label="From">
            <input className={input} value={c.from} onChange={(e) => setC({ ...c, from: e.target.value })} required />
          </Field>
          <Field label="To (comma-separated)" span={3}>
            <input className={input} value={c.to} onChange={(e) => setC({ ...c, to: e.target.value })} required />
          </Field>
        </>
      ) : null}
    </EditForm>
  );
}

function ruleCondition(r: RuleView): string {
  const parts: string[] = [];
  if (r.endpointId) parts.push(`on ${r.endpointId}`);
  if (r.threshold !== null) parts.push(`above ${r.threshold}`);
  if (r.durationSeconds !== null) parts.push(`longer than ${r.durationSeconds} s`);
  parts.push(`cool-down ${r.cooldownSeconds} s`);
  return parts.join(', ');
}

export function AlertsAdminView() {
  const now = useNow(5000);
  const can = useCan();
  const owner = can('alerts.manage');
  const qc = useQueryClient();
  const q = useQuery(alertRulesQuery());
  const [editRule, setEditRule] = useState<RuleView | 'new' | null>(null);
  const [editChannel, setEditChannel] = useState<ChannelView | 'new' | null>(null);
  const [tested, setTested] = useState<Record<string, string>>({});
  const remove = useMutation({
    mutationFn: (x: { kind: 'rule' | 'channel'; id: string }) => (x.kind === 'rule' ? alertsApi.deleteRule(x.id) : alertsApi.deleteChannel(x.id)),
    onSuccess: () => void qc.invalidateQueries({ queryKey: queryKeys.alertRules }),
  });
  const test = useMutation({
    mutationFn: (id: string) => alertsApi.testChannel(id),
    onSuccess: (r, id) => setTested((t) => ({ ...t, [id]: r.ok ? 'delivered' : `not delivered: ${r.error ?? ''}` })),
  });
  // Filter, rule kind, "only firing" and sort live in the URL (alertRulesSearch): kept on reload, Back undoes.
  const { search, update } = useUrlState(alertRulesSearch);
  const filter = useUrlFilter(search.q, update);
  const { sort, onSort } = useUrlSort(search, NATURAL, update);
  const allRules = q.data?.rules;
  const rules = useMemo(() => {
    const f = filter.text.trim().toLowerCase();
    return (allRules ?? [])
      .filter((r) => !f || r.name.toLowerCase().includes(f) || (r.endpointId ?? '').toLowerCase().includes(f))
      .filter((r) => search.type === '' || r.type === search.type)
      .filter((r) => !search.firing || r.state?.firing === true)
      .sort(comparator(sorters, sort, byName));
  }, [allRules, filter.text, search.type, search.firing, sort]);
  const header = (key: SortKey, label: string, className = '') => <SortableTh label={label} sortKey={key} sort={sort} onSort={onSort} className={className} />;
  const channels = q.data?.channels ?? [];
  const channelName = (id: string) => channels.find((c) => c.id === id)?.name ?? id;
  return (
    <section>
      <div className="mb-3 flex items-baseline gap-3">
        <h1 className="text-xl font-semibold">Admin · Alerts</h1>
        <Link href="/alerts" className="text-sm text-sky-700 hover:underline">
          alert history
        </Link>
        <Link href="/admin/health" className="text-sm text-sky-700 hover:underline">
          health
        </Link>
      </div>
      {!owner ? <p className="mb-2 text-sm text-slate-500">Read-only: changing alerts needs the Owner role.</p> : null}
      <ErrorBox error={q.error ?? remove.error ?? test.error} />

      <h2 className="mt-3 mb-1 text-sm font-semibold uppercase tracking-wide text-slate-600">Rules</h2>
      <div className="mb-2 flex flex-wrap items-center gap-3">
        <UrlFilterBox filter={filter} label="Filter rules" placeholder="Filter by name or endpoint" />
        <label className="flex items-center gap-1 text-sm text-slate-600">
          Kind
          <select value={search.type} onChange={(e) => update({ type: e.target.value as AlertRulesSearch['type'] })} className={input}>
            <option value="">all</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {RULE_LABELS[t]}
              </option>
            ))}
          </select>
        </label>
        <label className="flex items-center gap-1 text-sm text-slate-600">
          <input type="checkbox" checked={search.firing} onChange={(e) => update({ firing: e.target.checked })} />
          Only firing
        </label>
      </div>
      <div className="overflow-x-auto">
      <table className="w-full border-collapse text-sm" data-testid="alert-rules">
        <thead className={TABLE_HEAD}>
          <tr>
            {header('name', 'Name', 'py-1')}
            {header('type', 'Rule')}
            <Th>Condition</Th>
            <Th>Channels</Th>
            {header('state', 'Last evaluation')}
            <th scope="col" />
          </tr>
        </thead>
        <tbody>
          {rules.map((r) => (
            <tr key={r.id} className="border-t border-slate-100 align-top" data-rule={r.name}>
              <td className="py-1 font-medium">
                {r.name}
                {!r.enabled ? <span className="ml-1 text-xs text-slate-500">(disabled)</span> : null}
              </td>
              <td>{RULE_LABELS[r.type]}</td>
              <td className="text-xs">{ruleCondition(r)}</td>
              <td className="text-xs">{r.channelIds.map(channelName).join(', ') || '—'}</td>
              <td className="text-xs">
                {r.state ? (
                  <>
                    <span className={r.state.firing ? 'font-semibold text-red-700' : r.state.lastStatus === 'unavailable' ? 'text-amber-700' : 'text-emerald-700'}>
                      {r.state.firing ? 'FIRING' : r.state.lastStatus === 'unavailable' ? 'cannot be evaluated' : 'ok'}
                    </span>{' '}
                    <Ago at={r.state.evaluatedAt} now={now} />
                    {r.state.lastDetail ? <div className="text-slate-500">{r.state.lastDetail}</div> : null}
                    {r.state.suppressed > 0 ? <div className="text-slate-500">{r.state.suppressed} fire(s) held by the cool-down</div> : null}
                  </>
                ) : (
                  <span className="text-slate-500">not evaluated yet</span>
                )}
              </td>
              <td className="whitespace-nowrap text-right text-xs">
                {owner ? (
                  <>
                    <button type="button" className="text-sky-700 hover:underline" onClick={() => setEditRule(r)}>
                      edit
                    </button>{' '}
                    <button type="button" className="text-red-700 hover:underline" onClick={() => window.confirm(`Delete the rule ${r.name}?`) && remove.mutate({ kind: 'rule', id: r.id })}>
                      delete
                    </button>
                  </>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
      {owner && editRule === null ? (
        <button type="button" className="mt-2 rounded bg-slate-800 px-3 py-1 text-sm text-white" onClick={() => setEditRule('new')}>
          New rule
        </button>
      ) : null}
      {editRule !== null ? <div className="mt-2"><RuleForm key={editRule === 'new' ? 'new' : editRule.id} initial={editRule === 'new' ? null : editRule} channels={channels} onDone={() => setEditRule(null)} /></div> : null}

      <h2 className="mt-6 mb-1 text-sm font-semibold uppercase tracking-wide text-slate-600">Channels</h2>
      <div className="overflow-x-auto">
      <table className="w-full border-collapse text-sm" data-testid="alert-channels">
        <thead className={TABLE_HEAD}>
          <tr>
            <th scope="col" className="py-1">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Settings</th>
            <th scope="col">Secrets</th>
            <th scope="col" />
          </tr>
        </thead>
        <tbody>
          {channels.map((c) => (
            <tr key={c.id} className="border-t border-slate-100 align-top">
              <td className="py-1 font-medium">
                {c.name}
                {/* Every send is refused for its stored target (channels.ts), so say it before an alert does: the route's
                    reason (not https; an own server's port or a platform address), else the not-https text of older answers. */}
                {c.insecureUrl ? (
                  <div className="text-xs font-normal text-red-700" data-testid="channel-insecure-url">
                    {c.insecureReason ?? 'Its stored URL is neither https nor plain http to this machine: this channel will not send until its URL is entered again as https.'}
                  </div>
                ) : null}
              </td>
              <td>{c.type}</td>
              <td className="text-xs">{c.type === 'email' ? `${String(c.settings.host)}:${String(c.settings.port)} → ${(c.settings.to as string[]).join(', ')}` : '—'}</td>
              <td className="text-xs">{Object.keys(c.secrets).map((k) => `${k} set`).join(', ') || '—'}</td>
              <td className="whitespace-nowrap text-right text-xs">
                {owner ? (
                  <>
                    <button type="button" className="text-sky-700 hover:underline" onClick={() => test.mutate(c.id)}>
                      send test
                    </button>{' '}
                    <button type="button" className="text-sky-700 hover:underline" onClick={() => setEditChannel(c)}>
                      edit
                    </button>{' '}
                    <button type="button" className="text-red-700 hover:underline" onClick={() => window.confirm(`Delete the channel ${c.name}?`) && remove.mutate({ kind: 'channel', id: c.id })}>
                      delete
                    </button>
                  </>
                ) : null}
                {tested[c.id] ? <div className="text-slate-500">{tested[c.id]}</div> : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
      {owner && editChannel === null ? (
        <button type="button" className="mt-2 rounded bg-slate-800 px-3 py-1 text-sm text-white" onClick={() => setEditChannel('new')}>
          New channel
        </button>
      ) : null}
      {editChannel !== null ? <div className="mt-2"><ChannelForm key={editChannel === 'new' ? 'new' : editChannel.id} initial={editChannel === 'new' ? null : editChannel} onDone={() => setEditChannel(null)} /></div> : null}
    </section>
  );
}
