// GET /api/alerts/history?limit=: what fired, when, and when it recovered, newest first. Any role.
import { handle, json } from '../../../../server/http.ts';
import { readAlertHistory } from '../../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readAlertHistory(request, Object.fromEntries(new URL(request.url).searchParams))));
}
