// Who is calling: the one seam between authentication (sign-in, session cookie, bearer tokens) and
// authorization (roles, grants, audit). Authentication resolves a request to a Principal; authorization decides
// what that principal may do. Neither side needs to know how the other works.

export type PrincipalKind = 'user' | 'service' | 'anonymous';

export interface Principal {
  kind: PrincipalKind;
  /** Stable identifier: the token's `oid` (Entra) or `sub` (OIDC); for a service principal its app/client id. */
  id: string;
  /** Shown in the UI and recorded as the actor in the audit log (email / preferred_username / name). */
  name: string;
  /** App-role claims from the token (`roles`), verbatim. Mapped to console roles by authorization. */
  roles: string[];
  /** Group claims from the token (`groups`), verbatim. Mapped to console roles by authorization. */
  groups: string[];
}

/** The caller while NIMBUS_AUTH=off (loopback only): recorded as `anonymous`, allowed everything. */
export const ANONYMOUS: Principal = { kind: 'anonymous', id: 'anonymous', name: 'anonymous', roles: [], groups: [] };

/** One principal as one string (`user:oid`): its kind and id, never its display name, which two people may share. */
export const principalKey = (p: Pick<Principal, 'kind' | 'id'>): string => `${p.kind}:${p.id}`;
