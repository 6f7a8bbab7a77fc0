// GET /api/operations/{operationId}/outcome: what became of a bulk job's events since it ran (completed, failed
// again, still failed, in progress, skipped), from their status rows now. Read like the job itself: any role that
// may read every endpoint the job touches; anybody else gets the same 404 as for an unknown id.
import { authorize, readScope } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../server/http.ts';
import { operationIdSchema } from '../../../../../server/operations/jobs.ts';
import { operationOutcome } from '../../../../../server/operations/outcome.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request, context: RouteContext<{ operationId: string }>): Promise<Response> {
  return handle(async () => {
    const id = parseOr400(operationIdSchema, (await context.params).operationId, 'operation id');
    const who = await authorize(request, 'read');
    return json(await operationOutcome(await getContext(), id, readScope(who)));
  });
}
