// The console's page reads, each as one function of the calling Request: authorize with the caller's roles and
// read scope, then query. The GET routes answer with these, and the pages' server components call the same
// functions with the page's own request (components/prefetch.ts), so data put into the first HTML went through
// exactly the checks an API call would have - no HTTP call to ourselves, no second copy of the rules.
import { requireEndpoint } from './api.ts';
import { authorize, readScope } from './auth/authorize.ts';
import { getContext } from './context.ts';
import { flowQuerySchema, flowSnapshot } from './flow.ts';
import { healthOverview } from './heartbeat/routes.ts';
import { parseOr400 } from './http.ts';
import { endpointsOverview, eventDetails, eventListQuerySchema, listEndpointEvents } from './queries.ts';
import { endpointParams, eventParams } from './schemas.ts';
import { topologyOverview } from './subscriptions/routes.ts';

/** GET /api/endpoints. */
export async function readEndpoints(request: Request) {
  await authorize(request, 'read');
  const ctx = await getContext();
  return { endpoints: await endpointsOverview(ctx.store, ctx.catalog), generatedAt: new Date().toISOString() };
}

/** GET /api/endpoints/{endpointId}/events: `query` is the query string's fields (filter and continuation). */
export async function readEndpointEvents(request: Request, params: unknown, query: Record<string, string>) {
  const { endpointId } = parseOr400(endpointParams, params, 'endpoint');
  const filter = parseOr400(eventListQuerySchema, query, 'filter');
  await authorize(request, 'read', endpointId);
  const ctx = await getContext();
  requireEndpoint(ctx, endpointId);
  return listEndpointEvents(ctx.store, endpointId, filter);
}

/** GET /api/endpoints/{endpointId}/events/{eventId}: only what the caller's read scope covers. */
export async function readEventDetails(request: Request, params: unknown) {
  const { endpointId, eventId } = parseOr400(eventParams, params, 'event');
  const who = await authorize(request, 'read', endpointId);
  const ctx = await getContext();
  requireEndpoint(ctx, endpointId);
  return eventDetails(ctx.store, endpointId, eventId, readScope(who));
}

/** GET /api/topology/subscriptions. */
export async function readTopology(request: Request) {
  await authorize(request, 'read');
  return topologyOverview(await getContext());
}

/** GET /api/admin/health. */
export async function readHealth(request: Request) {
  await authorize(request, 'read');
  return healthOverview(await getContext());
}

/** GET /api/flow. */
export async function readFlow(request: Request, query: Record<string, string>) {
  const q = parseOr400(flowQuerySchema, query, 'flow query');
  await authorize(request, 'read');
  const ctx = await getContext();
  return flowSnapshot(ctx.store, ctx.catalog, q);
}
