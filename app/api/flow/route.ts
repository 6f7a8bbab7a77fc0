// GET /api/flow?period=15&eventTypeId=: producers → event types → consumers with per-consumer status counts.
import { handle, json } from '../../../server/http.ts';
import { readFlow } from '../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readFlow(request, Object.fromEntries(new URL(request.url).searchParams))));
}
