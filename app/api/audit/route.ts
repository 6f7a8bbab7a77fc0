// GET /api/audit?endpointId=&eventId=&user=&action=&outcome=&from=&to=&pageSize=&continuation=: the audit log,
// newest first, one page at a time. Any role; a caller with roles on single endpoints sees only their entries.
import { queryAudit, auditQuerySchema } from '../../../server/audit/auditLog.ts';
import { authorize, readScope } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json, parseOr400 } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const q = parseOr400(auditQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'audit query');
    const who = await authorize(request, 'read', q.endpointId);
    const ctx = await getContext();
    // Entries carry payload key names (edit diffs) and event ids: only the endpoints the caller may read.
    const scope = readScope(who);
    const page = await queryAudit(ctx.store.database, q, scope.all ? undefined : scope.endpointIds);
    return json({ items: page.items, continuation: page.continuationToken ?? null });
  });
}
