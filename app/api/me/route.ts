// GET /api/me: who the console thinks the caller is, the roles they hold (and where each comes from) and what
// they may do, site-wide and per endpoint. The UI hides the buttons of actions not listed; the server still
// checks every call, so this is a convenience, not the guard.
import { authorize, authMode } from '../../../server/auth/authorize.ts';
import { permissions } from '../../../server/auth/roles.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    // authorize() has just worked out the caller's roles: they are the answer.
    const who = await authorize(request, 'read');
    const ctx = await getContext();
    const { kind, id, name } = who.principal;
    return json({
      principal: { kind, id, name },
      authMode: authMode(),
      roles: who.assignments,
      permissions: permissions(who.principal, who.assignments, ctx.catalog.endpoints.map((e) => e.id)),
    });
  });
}
