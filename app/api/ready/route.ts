// Readiness: the configuration is valid, Cosmos answers a query and Service Bus answers an admin read.
import { getContext } from '../../../server/context.ts';
import { checkReady } from '../../../server/ready.ts';
import { errorResponse, json } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export async function GET(): Promise<Response> {
  let ctx;
  try {
    ctx = await getContext();
  } catch (err) {
    return errorResponse(err);
  }
  const r = await checkReady(ctx);
  return json(r, r.ready ? 200 : 503);
}
