// POST /api/operations/{operationId}/resume: the runner applies it at its next step. Needs the job's action
// (resubmit or skip: Operator) on every endpoint the job touches; audited, refusals before the job is read as
// `operation.resume` (server/operations/authorizeControl.ts).
import { audited } from '../../../../../server/auth/authorize.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../server/http.ts';
import { authorizeJobControl } from '../../../../../server/operations/authorizeControl.ts';
import { operationIdSchema } from '../../../../../server/operations/jobs.ts';
import { controlOperation } from '../../../../../server/operations/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ operationId: string }>): Promise<Response> {
  return handle(async () => {
    const id = parseOr400(operationIdSchema, (await context.params).operationId, 'operation id');
    const { ctx, job, who } = await authorizeJobControl(request, id, 'resume');
    // Resuming a prepared job is its confirmation: it starts (queued at once); audited as `start`.
    const control = job.state === 'prepared' ? 'start' : 'run';
    return json(await audited(who, () => controlOperation(ctx, job, 'run', who.user), { operationId: id, control }));
  });
}
