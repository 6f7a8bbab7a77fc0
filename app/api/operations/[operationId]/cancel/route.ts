// POST /api/operations/{operationId}/cancel: the runner applies it at its next step; a prepared job (never
// confirmed) is discarded at once and audited with the outcome `cancelled`. Needs the job's action
// (resubmit or skip: Operator) on every endpoint the job touches; audited, refusals before the job is read as
// `operation.cancel` (server/operations/authorizeControl.ts).
import { audited } from '../../../../../server/auth/authorize.ts';
import { handle, json, parseOr400, type RouteContext } from '../../../../../server/http.ts';
import { authorizeJobControl } from '../../../../../server/operations/authorizeControl.ts';
import { operationIdSchema } from '../../../../../server/operations/jobs.ts';
import { controlOperation } from '../../../../../server/operations/routes.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request, context: RouteContext<{ operationId: string }>): Promise<Response> {
  return handle(async () => {
    const id = parseOr400(operationIdSchema, (await context.params).operationId, 'operation id');
    const { ctx, job, who } = await authorizeJobControl(request, id, 'cancel');
    // Cancelling a prepared job (the confirmation's Cancel) discards it: recorded as cancelled, with what it would
    // have acted on, not as a success of the job's kind.
    const prepared = job.state === 'prepared';
    return json(
      await audited(
        who,
        () => controlOperation(ctx, job, 'cancel', who.user),
        // A job over several endpoints keeps each one's part (server/audit/readerScope.ts).
        (v) => ({
          operationId: id,
          control: 'cancel',
          ...(prepared ? { prepared: true, total: job.total, selection: job.selection, state: v.state } : {}),
          ...(prepared && job.byEndpoint ? { byEndpoint: job.byEndpoint } : {}),
        }),
        200,
        { outcomeOf: (v) => (v.state === 'discarded' ? 'cancelled' : 'succeeded') },
      ),
    );
  });
}
