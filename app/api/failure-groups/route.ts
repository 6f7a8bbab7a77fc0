// GET /api/failure-groups?endpointId=&status=&since=: failures grouped by cause (server/failures/groups.ts), with
// each group's note. Any role; only the endpoints the caller may read are counted.
import { authorize, readScope } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';
import { failureGroups, failureGroupsQuerySchema } from '../../../server/failures/groups.ts';
import { groupNotes } from '../../../server/failures/notes.ts';
import { getOpsServices } from '../../../server/heartbeat/services.ts';
import { handle, json, parseOr400 } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const query = parseOr400(failureGroupsQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'filter');
    const who = await authorize(request, 'read');
    const ctx = await getContext();
    const [view, notes] = await Promise.all([
      failureGroups(ctx.store, query, readScope(who)),
      groupNotes(getOpsServices(ctx).docs),
    ]);
    return json({ ...view, groups: view.groups.map((g) => ({ ...g, note: notes.get(g.groupId) ?? null })) });
  });
}
