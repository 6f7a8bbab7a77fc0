// GET /api/alerts/history?limit=: what fired, when, and when it recovered, newest first. Any role.
import { z } from 'zod';
import { authorize } from '../../../../server/auth/authorize.ts';
import { getContext } from '../../../../server/context.ts';
import { handle, json, parseOr400 } from '../../../../server/http.ts';
import { alertHistory } from '../../../../server/alerts/routes.ts';

export const dynamic = 'force-dynamic';

const querySchema = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(200) }).strict();

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const q = parseOr400(querySchema, Object.fromEntries(new URL(request.url).searchParams), 'history query');
    await authorize(request, 'read');
    return json({ alerts: await alertHistory(await getContext(), q.limit) });
  });
}
