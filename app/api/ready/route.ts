// Readiness: the configuration is valid, Cosmos answers a query and Service Bus answers an admin read. Shared by
// every caller for a few seconds and free of error texts (server/ready.ts): it needs no sign-in.
import { getContext } from '../../../server/context.ts';
import { readiness } from '../../../server/ready.ts';
import { json } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export async function GET(): Promise<Response> {
  const r = await readiness(() => getContext());
  return json(r, r.ready ? 200 : 503);
}
