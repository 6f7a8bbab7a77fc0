// GET /api/operations: recent bulk jobs and dead-letter replays the caller may read. Any role.
// POST with `{ kind: 'resubmit' | 'skip', selection, hold? }`: freezes the selection and starts a job → 202
// `{ operationId, total, state }`. With `hold` the job is only prepared (state `prepared`, audited as
// `{kind}.prepare`): it waits, unlisted, for /resume (the operator confirmed the exact count) or /cancel, and is
// discarded if neither comes within PREPARED_TTL_MS; only its preparer may confirm or cancel it (an Owner may
// cancel it too). The held answer also names `previous`: the newest earlier job that covered the same events, or
// null (server/operations/previousJob.ts). The caller needs the kind's role (Operator) on every endpoint the
// selection touches.
import { audited, authorize, authorizeBeforeBody, authorizeEach, readScope } from '../../../server/auth/authorize.ts';
import { principalKey } from '../../../server/auth/principal.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../server/http.ts';
import { createOperationBody } from '../../../server/operations/jobs.ts';
import { createOperation, listOperations, parseSelection, resolveSelection } from '../../../server/operations/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'read');
    return json(await listOperations(await getContext(), readScope(who)));
  });
}

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    // Who may resubmit or skip nowhere is refused before the body (and the selection query) costs anything.
    await authorizeBeforeBody(request, 'resubmit');
    const body = await readJsonBody(request, createOperationBody);
    const selection = parseSelection(body.selection);
    const ctx = await getContext();
    // Frozen under the caller's read scope, then every endpoint it touches authorized for the action.
    const first = await authorize(request, 'read', selection.endpointId);
    const rows = await resolveSelection(ctx, selection, readScope(first));
    const endpoints = [...new Set(rows.map((r) => r.endpointId))].sort();
    // Every endpoint authorized, the job counted once against the rate limit.
    const who = (await authorizeEach(request, body.kind, endpoints)) ?? first;
    // A held job is prepared, not started: its entry says so, and its confirmation or cancellation follows.
    const result = await audited(
      who,
      () => createOperation(ctx, body.kind, selection, rows, { name: who.user, principalId: principalKey(who.principal) }, body.hold, readScope(first)),
      (r) => ({ operationId: r.operationId, kind: body.kind, selection, total: r.total, endpoints, held: body.hold }),
      202,
      body.hold ? { action: `${body.kind}.prepare` } : {},
    );
    return json(result, 202);
  });
}
