// GET /api/operations: recent bulk jobs and dead-letter replays the caller may read. Any role.
// POST with `{ kind: 'resubmit' | 'skip', selection, hold? }`: freezes the selection and starts a job → 202
// `{ operationId, total, state }`. With `hold` the job is only prepared (state `prepared`, audited as
// `{kind}.prepare`): it waits, unlisted, for /resume (the operator confirmed the exact count) or /cancel, and is
// discarded if neither comes within PREPARED_TTL_MS; only its preparer may confirm or cancel it (an Owner may
// cancel it too). The held answer also names `previous`: the newest earlier job that covered the same events, or
// null (server/operations/previousJob.ts). Both answers also name the `endpoints` of the rows frozen and those
// `leftOut`. The caller needs the kind's role (Operator) on the endpoint a selection names (403 otherwise); a
// failure group's selection, which names none, acts on the endpoints where the caller has it, and the endpoints it
// may only read are left out, each with its count and why (server/operations/actableRows.ts).
import { audited, authorize, authorizeBeforeBody, authorizeEach, readScope } from '../../../server/auth/authorize.ts';
import { principalKey } from '../../../server/auth/principal.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../server/http.ts';
import { splitActable } from '../../../server/operations/actableRows.ts';
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
    // Frozen under the caller's read scope, then every endpoint it acts on authorized for the action.
    const first = await authorize(request, 'read', selection.endpointId);
    const frozen = await resolveSelection(ctx, selection, readScope(first));
    // A group's selection spans every endpoint the caller may act on: rows on endpoints it may only read are left
    // out and said so. When none is left, authorizeEach below refuses (403, audited) on the first endpoint, as an
    // endpoint the selection names is refused.
    const split = selection.endpointId === undefined ? splitActable(frozen, body.kind, first) : { rows: frozen, leftOut: [] };
    const rows = split.rows.length > 0 ? split.rows : frozen;
    const leftOut = split.rows.length > 0 ? split.leftOut : [];
    const endpoints = [...new Set(rows.map((r) => r.endpointId))].sort();
    // Every endpoint authorized, the job counted once against the rate limit.
    const who = (await authorizeEach(request, body.kind, endpoints)) ?? first;
    // A held job is prepared, not started: its entry says so, and its confirmation or cancellation follows.
    const result = await audited(
      who,
      () => createOperation(ctx, body.kind, selection, rows, { name: who.user, principalId: principalKey(who.principal) }, body.hold, readScope(first)),
      (r) => ({ operationId: r.operationId, kind: body.kind, selection, total: r.total, endpoints, leftOut, held: body.hold }),
      202,
      body.hold ? { action: `${body.kind}.prepare` } : {},
    );
    // The confirmation names the endpoints from the rows frozen, not from the page's list (which may be windowed).
    return json({ ...result, endpoints, leftOut }, 202);
  });
}
