// PUT /api/admin/alerts/rules/{ruleId}: replaces a rule; DELETE removes it. Owner site-wide; audited.
import { actorOf, audited, authorize } from '../../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../../server/context.ts';
import { handle, json, parseOr400, readJsonBody, type RouteContext } from '../../../../../../server/http.ts';
import { alertIdSchema, ruleInputSchema } from '../../../../../../server/alerts/model.ts';
import { deleteRule, updateRule } from '../../../../../../server/alerts/routes.ts';

export const dynamic = 'force-dynamic';

export function PUT(request: Request, { params }: RouteContext<{ ruleId: string }>): Promise<Response> {
  return handle(async () => {
    const ruleId = parseOr400(alertIdSchema, (await params).ruleId, 'rule id');
    const who = await authorize(request, 'alerts.manage', undefined, { target: `alert rule ${ruleId}` });
    const body = await readJsonBody(request, ruleInputSchema);
    const ctx = await getContext();
    return json(await audited(who, () => updateRule(ctx, ruleId, body, actorOf(who)), { ruleId, rule: body }));
  });
}

export function DELETE(request: Request, { params }: RouteContext<{ ruleId: string }>): Promise<Response> {
  return handle(async () => {
    const ruleId = parseOr400(alertIdSchema, (await params).ruleId, 'rule id');
    const who = await authorize(request, 'alerts.manage', undefined, { target: `alert rule ${ruleId}` });
    const ctx = await getContext();
    await audited(who, () => deleteRule(ctx, ruleId), { ruleId });
    return json({ deleted: ruleId });
  });
}
