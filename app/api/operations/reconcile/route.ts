// GET /api/operations/reconcile: the preview (stale Pending rows with evidence, overdue handoffs).
// POST with `{ targets }`: re-applies the stored outcome of each, through the guarded write.
import { authorize } from '../../../../server/auth.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../server/http.ts';
import { reconcileApply, reconcileApplyBody, reconcilePreview } from '../../../../server/reconcile/routes.ts';
import { authorizeOps } from '../../../../server/subscriptions/authz.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    authorize(request, 'read');
    return json(await reconcilePreview(await getContext()));
  });
}

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const body = await readJsonBody(request, reconcileApplyBody);
    const who = authorizeOps(request, 'reconcile');
    return json(await reconcileApply(await getContext(), body, who.user));
  });
}
