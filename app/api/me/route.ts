// GET /api/me: who the console thinks the caller is, the roles they hold (and where each comes from) and what
// they may do, site-wide and per endpoint. The UI hides the buttons of actions not listed; the server still
// checks every call, so this is a convenience, not the guard.
import { handle, json } from '../../../server/http.ts';
import { readMe } from '../../../server/reads.ts';

export const dynamic = 'force-dynamic';

export function GET(request: Request): Promise<Response> {
  return handle(async () => json(await readMe(request)));
}
