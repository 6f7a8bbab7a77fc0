// DELETE /api/admin/grants/{grantId}: revoke a stored grant (404 when there is none). Owner site-wide; audited.
import { z } from 'zod';
import { audited, authorize } from '../../../../../server/auth/authorize.ts';
import { removeGrant } from '../../../../../server/auth/grants.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, notFound, parseOr400, type RouteContext } from '../../../../../server/http.ts';

export const dynamic = 'force-dynamic';

const params = z.object({ grantId: z.string().regex(/^[0-9a-f]{32}$/, 'a grant id') });

export function DELETE(request: Request, context: RouteContext<{ grantId: string }>): Promise<Response> {
  return handle(async () => {
    const { grantId } = parseOr400(params, await context.params, 'grant');
    const who = await authorize(request, 'grants.manage', undefined, { target: `grant ${grantId}` });
    const ctx = await getContext();
    const removed = await audited(
      who,
      async () => (await removeGrant(ctx.store.database, grantId)) ?? Promise.reject(notFound(`there is no grant ${grantId}`)),
      (g) => ({ op: 'revoke', grantId: g.id, subjectKind: g.subjectKind, subject: g.subject, role: g.role, endpointId: g.endpointId }),
    );
    return json({ revoked: removed });
  });
}
