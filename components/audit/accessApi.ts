// The browser side of /api/me, /api/audit and /api/admin/grants, and `useCan`: what the signed-in caller may do,
// for hiding the buttons of actions the server would refuse. The server checks every call regardless.
import { useQuery } from '@tanstack/react-query';
import type { AuditRecord } from '../../server/audit/auditLog.ts';
import type { Grant } from '../../server/auth/grants.ts';
import type { Action, RoleAssignment, RoleMap } from '../../server/auth/roles.ts';
import { callApi } from '../api.ts';
import { meQuery } from '../queries.ts';

export type { AuditRecord } from '../../server/audit/auditLog.ts';
export type { Grant } from '../../server/auth/grants.ts';
export type { Action } from '../../server/auth/roles.ts';

export interface Me {
  principal: { kind: string; id: string; name: string };
  authMode: string;
  roles: RoleAssignment[];
  permissions: { site: Action[]; endpoints: Record<string, Action[]> };
}

const call = callApi;

export const accessApi = {
  me: () => call<Me>('/api/me'),
  audit: (query: URLSearchParams) => call<{ items: AuditRecord[]; continuation: string | null }>(`/api/audit?${query.toString()}`),
  grants: () => call<{ grants: Grant[]; roleMap: RoleMap; canManage: boolean }>('/api/admin/grants'),
  grant: (g: { subjectKind: Grant['subjectKind']; subject: string; subjectName?: string; role: Grant['role']; endpointId: string | null }) =>
    call<Grant>('/api/admin/grants', { method: 'POST', body: JSON.stringify(g) }),
  revoke: (id: string) => call<{ revoked: Grant }>(`/api/admin/grants/${encodeURIComponent(id)}`, { method: 'DELETE' }),
};

/** The caller's identity and permissions (cached for a minute; the server decides anyway). */
export function useMe() {
  return useQuery(meQuery());
}

/**
 * `can(action, endpointId?)`: false while /api/me is loading or failed, so a button appears only once allowed.
 */
export function useCan(): (action: Action, endpointId?: string) => boolean {
  const me = useMe().data;
  return (action, endpointId) => {
    if (!me) return false;
    if (endpointId !== undefined && me.permissions.endpoints[endpointId]) return me.permissions.endpoints[endpointId].includes(action);
    return me.permissions.site.includes(action);
  };
}
