// GET /api/search?q=: events whose event id or session id starts with q (case-insensitive), across the endpoints
// the caller may read.
import { z } from 'zod';
import { authorize, readScope } from '../../../server/auth/authorize.ts';
import { getContext } from '../../../server/context.ts';
import { handle, json, parseOr400 } from '../../../server/http.ts';
import { search } from '../../../server/queries.ts';

export const dynamic = 'force-dynamic';

const querySchema = z.object({ q: z.string().trim().min(1, 'q is required').max(128) });

export function GET(request: Request): Promise<Response> {
  return handle(async () => {
    const { q } = parseOr400(querySchema, Object.fromEntries(new URL(request.url).searchParams), 'search');
    const who = await authorize(request, 'read');
    const ctx = await getContext();
    return json(await search(ctx.store, q, readScope(who)));
  });
}
