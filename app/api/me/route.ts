// GET /api/me: who the console thinks the caller is, the roles they hold (and where each comes from) and what
// they may do, site-wide and per endpoint. The UI hides the buttons of actions not listed; the server still
// checks every call, so this is a convenience, not the guard.
import { authorize, authMode, rolesOf } from '../../../server/auth/authorize.ts';
import { permissions } from '../../../server/auth/roles.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'read');
    const ctx = await getContext();
    const assignments = await rolesOf(who.principal, ctx);
    const { kind, id, name } = who.principal;
    return json({
      principal: { kind, id, name },
      authMode: authMode(),
      roles: assignments,
      permissions: permissions(who.principal, assignments, ctx.catalog.endpoints.map((e) => e.id)),
    });
  });
}
