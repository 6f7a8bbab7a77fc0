// GET /api/operations/reconcile: the preview (stale Pending rows with evidence, overdue handoffs, stuck rows, draining
// sessions) of the endpoints the caller may read. Any role. `?part=rows` answers the row findings alone (store reads,
// quick), `?part=sessions` the broker's session scan alone (bounded by its time budget): the page asks for both apart
// so the rows never wait for the broker. Without `part`, both in one answer.
// POST with `{ targets, repairs }`: re-applies the stored outcome of each stale row, through the guarded write, and
// re-sends or restores each stuck row. Operator: site-wide, or of every endpoint the request names; each a catalog
// endpoint (404 otherwise, nothing applied).
import { audited, authorize, authorizeBeforeBody, authorizeEach, limitRate, readScope, type Authorized } from '../../../../server/auth/authorize.ts';
import { requireEndpoint } from '../../../../server/api.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody } from '../../../../server/http.ts';
import {
  reconcileApply,
  reconcileApplyBody,
  reconcileEndpoints,
  reconcileOutcomes,
  reconcileOutcomesByEndpoint,
  reconcilePreview,
  reconcilePreviewQuery,
  reconcileRowsPreview,
  reconcileSessionsPreview,
} from '../../../../server/reconcile/routes.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const query = new URL(request.url).searchParams;
    // The session scan locks sessions on the live subscriptions (up to its time budget) and counts against the
    // caller's rate limit as the dead-letter replay preview does: a GET with effects, so from our own origin only
    // (a page on another site must not spend the operator's budget). The rows alone are a plain read.
    const who = await authorize(request, 'read', undefined, {}, { effects: query.get('part') !== 'rows' });
    const { part } = parseOr400(reconcilePreviewQuery, Object.fromEntries(query), 'reconcile query');
    const ctx = await getContext();
    const scope = readScope(who);
    if (part === 'rows') return json(await reconcileRowsPreview(ctx, scope));
    await limitRate(who);
    if (part === 'sessions') return json(await reconcileSessionsPreview(ctx, scope));
    return json(await reconcilePreview(ctx, scope));
  });
}

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    // The targets name the endpoints: who may reconcile nowhere is refused before the body is parsed.
    await authorizeBeforeBody(request, 'reconcile');
    const body = await readJsonBody(request, reconcileApplyBody);
    const endpoints = reconcileEndpoints(body);
    // Every endpoint named must be the catalog's, before anything is applied: the platform's own subscriptions
    // ("Resolver") and names of nothing are refused whole, not met part-way through the body as a broker error.
    const ctx = await getContext();
    for (const endpointId of endpoints) requireEndpoint(ctx, endpointId);
    // One endpoint: its Operator may; several: each must be allowed (a site-wide Operator always is).
    // Counted once against the rate limit, however many endpoints it names.
    const who: Authorized | undefined = await authorizeEach(request, 'reconcile', endpoints);
    const details = { targets: body.targets.length, repairs: body.repairs.length, sessions: body.sessions.length, endpoints };
    // Counts per outcome, not the per-target results: those grew past the entry's size cap with a few dozen
    // targets, and the whole of the details was dropped with them. Over several endpoints, each one's part too: a
    // reader of one of them is shown theirs alone.
    return json(await audited(who!, () => reconcileApply(ctx, body, who!.user), (r) => ({ ...details, ...reconcileOutcomes(r), ...reconcileOutcomesByEndpoint(body, r) })));
  });
}
