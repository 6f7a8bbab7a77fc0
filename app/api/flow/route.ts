// GET /api/flow?period=15&eventTypeId=: producers → event types → consumers with per-consumer status counts.
import { authorize } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';
import { flowQuerySchema, flowSnapshot } from '../../../server/flow.ts';
import { handle, json, parseOr400 } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const q = parseOr400(flowQuerySchema, Object.fromEntries(new URL(request.url).searchParams), 'flow query');
    await authorize(request, 'read');
    const ctx = await getContext();
    return json(await flowSnapshot(ctx.store, ctx.catalog, q));
  });
}
