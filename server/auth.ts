// Authorization of every console request. One function so that the coming sign-in issue (Entra / OIDC, roles
// per endpoint) changes this file only. Today only NIMBUS_AUTH=off is implemented: it allows everything and
// names the caller 'anonymous' in the audit trail; the other modes refuse until they are built, rather than
// silently running open.
import { HttpError } from './http.ts';

export type Action = 'read' | 'resubmit' | 'skip' | 'handoff';

export interface Principal {
  /** Recorded as the auditor of every command. */
  user: string;
}

export function authMode(env: Record<string, string | undefined> = process.env): string {
  return env.NIMBUS_AUTH == null || env.NIMBUS_AUTH === '' ? 'off' : env.NIMBUS_AUTH;
}

export function authorize(
  _request: Request,
  _action: Action,
  _endpointId?: string,
  mode: string = authMode(),
): Principal {
  if (mode === 'off') return { user: 'anonymous' };
  throw new HttpError(403, 'forbidden', `authentication mode '${mode}' is not available in this version of the console`);
}
