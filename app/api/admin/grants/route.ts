// GET /api/admin/grants: the stored role grants on the endpoints the caller may read (site-wide roles: all). POST with `{ subjectKind, subject, subjectName?, role,
// endpointId? }`: grant a role (idempotent). Owner site-wide; every change is audited. An endpoint the catalog does
// not list is refused (400): a mistyped id would otherwise be stored as a grant that gives nothing.
import { actorOf, audited, authorize, inScope, readScope } from '../../../../server/auth/authorize.ts';
import { addGrant, grantInputSchema, listGrants, requireGrantEndpoint } from '../../../../server/auth/grants.ts';
import { currentRoleMap, decide } from '../../../../server/auth/roles.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'read');
    const ctx = await getContext();
    const canManage = decide(who.principal, who.assignments, 'grants.manage').allowed;
    // Everyone with a role may see who holds which on the endpoints they may read (a site-wide role: every grant
    // and the claim mapping); only Owners may change them (the page hides the controls).
    const scope = readScope(who);
    const grants = (await listGrants(ctx.store.database, { fresh: true })).filter((g) => inScope(scope, g.endpointId));
    return json({ grants, roleMap: scope.all ? currentRoleMap() : { roles: {}, groups: {} }, canManage });
  });
}

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'grants.manage');
    const body = await readJsonBody(request, grantInputSchema);
    const ctx = await getContext();
    who.subject.target = `${body.subjectKind}:${body.subject}`;
    requireGrantEndpoint(ctx.catalog, body.endpointId);
    const grant = await audited(who, () => addGrant(ctx.store.database, body, actorOf(who)), (g) => ({ op: 'grant', grantId: g.id, subjectKind: g.subjectKind, subject: g.subject, role: g.role, endpointId: g.endpointId }), 201);
    return json(grant, 201);
  });
}
