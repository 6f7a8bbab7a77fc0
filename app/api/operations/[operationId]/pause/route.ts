// POST /api/operations/{operationId}/pause: the runner applies it at its next step. Needs the job's action
// (resubmit or skip: Operator) on every endpoint the job touches; audited.
import { audited, authorize, authorizeEach, readScope } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../server/http.ts';
import { operationIdSchema } from '../../../../../server/operations/jobs.ts';
import { controlOperation, getJob } from '../../../../../server/operations/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ operationId: string }>): Promise<Response> {
  return handle(async () => {
    const id = parseOr400(operationIdSchema, (await context.params).operationId, 'operation id');
    const reader = await authorize(request, 'read');
    const ctx = await getContext();
    const job = await getJob(ctx, id, readScope(reader));
    // Every endpoint of the job authorized; the control counted once against the rate limit.
    const who = (await authorizeEach(request, job.kind, job.endpoints, { target: `operation/${id}` })) ?? reader;
    return json(await audited(who, () => controlOperation(ctx, job, 'pause', who.user), { operationId: id, control: 'pause' }));
  });
}
