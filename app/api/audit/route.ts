// GET /api/audit?endpointId=&eventId=&user=&action=&outcome=&from=&to=&pageSize=&continuation=: the audit log,
// newest first, one page at a time. Filtered to one endpoint it needs a role there; unfiltered, any role.
import { queryAudit, auditQuerySchema } from '../../../server/audit/auditLog.ts';
import { authorize } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json, parseOr400 } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const q = parseOr400(auditQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'audit query');
    await authorize(request, 'read', q.endpointId);
    const ctx = await getContext();
    const page = await queryAudit(ctx.store.database, q);
    return json({ items: page.items, continuation: page.continuationToken ?? null });
  });
}
