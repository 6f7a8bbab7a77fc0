// GET /api/audit?endpointId=&eventId=&user=&action=&notAction=&outcome=&from=&to=&pageSize=&continuation=: the audit log,
// newest first, one page at a time. Any role; a caller with roles on single endpoints sees only their entries, and of
// an entry over several endpoints only their endpoints' part (server/audit/readerScope.ts).
import { handle, json } from '../../../server/http.ts';
import { readAudit } from '../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readAudit(request, Object.fromEntries(new URL(request.url).searchParams))));
}
