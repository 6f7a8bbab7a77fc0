'use client';
// Admin → Access: who holds which console role. The roles from token claims (NIMBUS_AUTH_ROLE_MAP) are shown
// read-only; grants stored in the console can be added and revoked by Owners (both audited on the server).
// Everyone with a role sees the list; the form and the Revoke buttons only appear for Owners. A revoke is
// confirmed first (who loses which role where; a warning when the grant is one the caller holds) and sent once.
import { useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { ErrorBox, Timestamp } from '../format.tsx';
import { accessApi, useMe, type Grant } from './accessApi.ts';
import { TABLE_HEAD } from '../table.tsx';
import { grantsQuery, queryKeys } from '../queries.ts';
import { useExactIdErrors } from '../exactIdErrors.tsx';

// Agent: the Agent API on one endpoint only (docs/agents.md); the server refuses it without an endpoint.
const ROLES = ['Reader', 'Operator', 'Owner', 'Agent'] as const;
const KINDS = ['user', 'group', 'service'] as const;
const ID_FIELDS = ['endpointId'] as const;

export function AccessView() {
  const client = useQueryClient();
  const me = useMe();
  const q = useQuery(grantsQuery());
  const [form, setForm] = useState<{ subjectKind: Grant['subjectKind']; subject: string; subjectName: string; role: Grant['role']; endpointId: string }>({
    subjectKind: 'user',
    subject: '',
    subjectName: '',
    role: 'Reader',
    endpointId: '',
  });
  // The endpoint is taken exactly as typed, by the rule the route holds it to (exactIdErrors.tsx): it was trimmed, and
  // spaces alone became a site-wide grant.
  const idErrors = useExactIdErrors(ID_FIELDS, 'target');
  const refresh = () => {
    void client.invalidateQueries({ queryKey: queryKeys.grants });
    void client.invalidateQueries({ queryKey: queryKeys.me });
  };
  const grant = useMutation({
    mutationFn: () =>
      accessApi.grant({
        subjectKind: form.subjectKind,
        subject: form.subject.trim(),
        ...(form.subjectName.trim() ? { subjectName: form.subjectName.trim() } : {}),
        role: form.role,
        endpointId: form.endpointId || null,
      }),
    onSuccess: () => {
      setForm({ ...form, subject: '', subjectName: '' });
      refresh();
    },
  });
  // The grant being confirmed; the dialog stays open while the DELETE runs and shows its error, if any.
  const [revoking, setRevoking] = useState<Grant | null>(null);
  // Set synchronously on the first confirm: the mutation's pending state reaches the button a render later, and a
  // second click in between would send a second DELETE (which 404s although the first worked).
  const revokeSent = useRef(false);
  const revoke = useMutation({
    mutationFn: accessApi.revoke,
    onSuccess: () => {
      setRevoking(null);
      refresh();
    },
    onSettled: () => {
      revokeSent.current = false;
    },
  });
  const closeRevoke = () => {
    setRevoking(null);
    revoke.reset();
  };
  /** Whether the caller holds a role through this grant (its own id, or one of its groups). */
  const ownGrant = (g: Grant) => me.data?.roles.some((r) => r.source === `grant:${g.id}`) === true;
  const canManage = q.data?.canManage === true;
  const mapEntries = q.data ? [...Object.entries(q.data.roleMap.roles).map(([k, v]) => ['app role', k, v] as const), ...Object.entries(q.data.roleMap.groups).map(([k, v]) => ['group', k, v] as const)] : [];

  return (
    <section>
      <h1 className="mb-3 text-xl font-semibold">Admin · Access</h1>
      {me.data && (
        <p className="mb-3 text-sm text-slate-600" data-testid="me">
          Signed in as <strong>{me.data.principal.name}</strong> ({me.data.principal.kind}); roles:{' '}
          {me.data.roles.length === 0 ? 'none' : me.data.roles.map((r) => `${r.role}${r.endpointId ? ` on ${r.endpointId}` : ''} (${r.source})`).join(', ')}
        </p>
      )}
      <ErrorBox error={q.error ?? grant.error} />
      {canManage && (
        <form
          className="mb-4 flex flex-wrap items-end gap-2 rounded border border-slate-200 bg-white p-3 text-sm"
          data-testid="grant-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (idErrors.check({ endpointId: form.endpointId })) grant.mutate();
          }}
        >
          <label className="flex flex-col text-xs text-slate-600">
            Kind
            <select value={form.subjectKind} onChange={(e) => setForm({ ...form, subjectKind: e.target.value as Grant['subjectKind'] })} className="rounded border border-slate-300 px-2 py-1 text-sm">
              {KINDS.map((k) => (
                <option key={k}>{k}</option>
              ))}
            </select>
          </label>
          <label className="flex flex-col text-xs text-slate-600">
            Id (object id / subject / group id / client id)
            <input required value={form.subject} onChange={(e) => setForm({ ...form, subject: e.target.value })} className="rounded border border-slate-300 px-2 py-1 text-sm" />
          </label>
          <label className="flex flex-col text-xs text-slate-600">
            Name (optional)
            <input value={form.subjectName} onChange={(e) => setForm({ ...form, subjectName: e.target.value })} className="rounded border border-slate-300 px-2 py-1 text-sm" />
          </label>
          <label className="flex flex-col text-xs text-slate-600">
            Role
            <select value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value as Grant['role'] })} className="rounded border border-slate-300 px-2 py-1 text-sm">
              {ROLES.map((r) => (
                <option key={r}>{r}</option>
              ))}
            </select>
          </label>
          {/* The refusal is outside the label, so the box's name stays its label alone. */}
          <div className="flex flex-col">
            <label className="flex flex-col text-xs text-slate-600">
              {form.role === 'Agent' ? 'Endpoint (required for Agent)' : 'Endpoint (empty = site-wide)'}
              <input
                {...idErrors.box('endpointId')}
                required={form.role === 'Agent'}
                value={form.endpointId}
                onChange={(e) => {
                  setForm({ ...form, endpointId: e.target.value });
                  idErrors.clear('endpointId');
                }}
                className="rounded border border-slate-300 px-2 py-1 text-sm"
              />
            </label>
            {idErrors.note('endpointId')}
          </div>
          <button type="submit" disabled={grant.isPending} className="rounded bg-slate-800 px-3 py-1 text-white">
            Grant
          </button>
        </form>
      )}
      <h2 className="mb-1 font-semibold">Grants stored in the console</h2>
      <div className="overflow-x-auto">
      <table className="mb-4 w-full border-collapse bg-white text-sm">
        <thead className={TABLE_HEAD}>
          <tr>
            <th scope="col" className="p-2">Who</th>
            <th scope="col" className="p-2">Role</th>
            <th scope="col" className="p-2">Endpoint</th>
            <th scope="col" className="p-2">Granted</th>
            <th scope="col" className="p-2" />
          </tr>
        </thead>
        <tbody>
          {(q.data?.grants ?? []).map((g) => (
            <tr key={g.id} className="border-b border-slate-100" data-grant-id={g.id}>
              <td className="p-2">
                {g.subjectName ?? g.subject} <span className="text-xs text-slate-500">({g.subjectKind} {g.subject})</span>
              </td>
              <td className="p-2">{g.role}</td>
              <td className="p-2">{g.endpointId ?? 'all'}</td>
              <td className="p-2 text-xs">
                <Timestamp at={g.grantedAt} /> by {g.grantedBy}
              </td>
              <td className="p-2">
                {canManage && (
                  <button
                    type="button"
                    onClick={() => {
                      revoke.reset();
                      setRevoking(g);
                    }}
                    className="rounded border border-red-300 px-2 py-0.5 text-xs text-red-700"
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
          {q.data && q.data.grants.length === 0 && (
            <tr>
              <td colSpan={5} className="p-3 text-center text-slate-500">
                No grants stored.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      </div>
      <h2 className="mb-1 font-semibold">Roles from sign-in claims (NIMBUS_AUTH_ROLE_MAP)</h2>
      <ul className="list-disc pl-6 text-sm">
        {mapEntries.map(([kind, claim, roles]) => (
          <li key={`${kind}:${claim}`}>
            {kind} <code>{claim}</code> → {Array.isArray(roles) ? roles.join(', ') : roles}
          </li>
        ))}
      </ul>
      {revoking && (
        <ConfirmDialog
          title="Revoke this grant?"
          confirmLabel="Revoke"
          danger
          busy={revoke.isPending}
          onCancel={closeRevoke}
          onConfirm={() => {
            if (revokeSent.current) return;
            revokeSent.current = true;
            revoke.mutate(revoking.id);
          }}
        >
          <p data-testid="revoke-what">
            <strong>{revoking.subjectName ?? revoking.subject}</strong> ({revoking.subjectKind} <span className="font-mono">{revoking.subject}</span>) loses the role{' '}
            <strong>{revoking.role}</strong> {revoking.endpointId ? <>on endpoint <strong>{revoking.endpointId}</strong></> : <strong>site-wide</strong>}. Roles from sign-in claims are not affected.
          </p>
          {ownGrant(revoking) && (
            <p className="mt-2 rounded border border-amber-300 bg-amber-50 px-2 py-1 text-amber-900" data-testid="revoke-own">
              This is one of your own grants: you lose this role yourself{revoking.role === 'Owner' && !revoking.endpointId ? ', and with it the right to manage grants unless another role gives it to you' : ''}.
            </p>
          )}
          {revoke.error && (
            <div className="mt-3">
              <ErrorBox error={revoke.error} />
            </div>
          )}
        </ConfirmDialog>
      )}
    </section>
  );
}
