// GET /api/admin/alerts/rules: the rules with their evaluation state, and the channels (secrets shown only as
// set). Any role. POST: a new rule (Owner site-wide; audited).
import { actorOf, audited, authorize } from '../../../../../server/auth/authorize.ts';
import { getContext } from '../../../../../server/context.ts';
import { handle, json, readJsonBody } from '../../../../../server/http.ts';
import { ruleInputSchema } from '../../../../../server/alerts/model.ts';
import { createRule } from '../../../../../server/alerts/routes.ts';
import { readAlertRules } from '../../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readAlertRules(request)));
}

export function POST(request: Request): Promise<Response> {
  return handle(async () => {
    const who = await authorize(request, 'alerts.manage');
    const body = await readJsonBody(request, ruleInputSchema);
    const ctx = await getContext();
    return json(await audited(who, () => createRule(ctx, body, actorOf(who)), (r) => ({ ruleId: r.id, rule: body }), 201), 201);
  });
}
