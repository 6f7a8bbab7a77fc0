// The console's page reads, each as one function of the calling Request: authorize with the caller's roles and
// read scope, then query. The GET routes answer with these, and the pages' server components call the same
// functions with the page's own request (components/prefetch.ts), so data put into the first HTML went through
// exactly the checks an API call would have - no HTTP call to ourselves, no second copy of the rules.
import { alertHistory, listRules } from './alerts/routes.ts';
import { z } from 'zod';
import { requireEndpoint } from './api.ts';
import { auditQuerySchema, queryAudit } from './audit/auditLog.ts';
import { entryForReader } from './audit/readerScope.ts';
import { authMode, authorize, readScope } from './auth/authorize.ts';
import { permissions } from './auth/roles.ts';
import { getContext } from './context.ts';
import { flowQuerySchema, flowSnapshot } from './flow.ts';
import { healthOverview } from './heartbeat/routes.ts';
import { endpointEventsPage } from './heldBack.ts';
import { parseOr400 } from './http.ts';
import { endpointSummary, endpointsOverview, eventDetails, eventListQuerySchema } from './queries.ts';
import { endpointParams, eventParams } from './schemas.ts';
import { authorizeDeadLetterRead } from './subscriptions/authz.ts';
import { deadLetterQuery, deadLetters, subscriptionParams, topologyOverview } from './subscriptions/routes.ts';

/** GET /api/endpoints. */
export async function readEndpoints(request: Request) {
  await authorize(request, 'read');
  const ctx = await getContext();
  return { endpoints: await endpointsOverview(ctx.store, ctx.catalog), generatedAt: new Date().toISOString() };
}

/**
 * GET /api/endpoints/{endpointId}: the endpoint's catalog facts and counts (what the Endpoint and Event pages show
 * of it). Authorized as GET /api/endpoints is (read with any role), since it is a part of that answer: the pages
 * show a caller exactly what they showed from the overview.
 */
export async function readEndpoint(request: Request, params: unknown) {
  const { endpointId } = parseOr400(endpointParams, params, 'endpoint');
  await authorize(request, 'read');
  const ctx = await getContext();
  requireEndpoint(ctx, endpointId);
  return { endpoint: await endpointSummary(ctx.store, ctx.catalog, endpointId), generatedAt: new Date().toISOString() };
}

/** GET /api/endpoints/{endpointId}/events: `query` is the query string's fields (filter and continuation). */
export async function readEndpointEvents(request: Request, params: unknown, query: Record<string, string>) {
  const { endpointId } = parseOr400(endpointParams, params, 'endpoint');
  const filter = parseOr400(eventListQuerySchema, query, 'filter');
  await authorize(request, 'read', endpointId);
  const ctx = await getContext();
  requireEndpoint(ctx, endpointId);
  return endpointEventsPage(ctx.store, endpointId, filter);
}

/** GET /api/endpoints/{endpointId}/events/{eventId}: only what the caller's read scope covers. */
export async function readEventDetails(request: Request, params: unknown) {
  const { endpointId, eventId } = parseOr400(eventParams, params, 'event');
  const who = await authorize(request, 'read', endpointId);
  const ctx = await getContext();
  requireEndpoint(ctx, endpointId);
  return eventDetails(ctx.store, endpointId, eventId, readScope(who));
}

/**
 * GET /api/me: the caller, their roles (with where each comes from) and what they may do, site-wide and per
 * endpoint. authorize() has just worked out the caller's roles: they are the answer. The event page puts it in
 * the first HTML, so its action buttons (and their `r` / `s` shortcuts) are there from the first render.
 */
export async function readMe(request: Request) {
  const who = await authorize(request, 'read');
  const ctx = await getContext();
  const { kind, id, name } = who.principal;
  return {
    principal: { kind, id, name },
    authMode: authMode(),
    roles: who.assignments,
    permissions: permissions(who.principal, who.assignments, ctx.catalog.endpoints.map((e) => e.id)),
  };
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

/** GET /api/topology/subscriptions/{topic}/{subscription}/deadletters: bodies included, so scoped like event details. */
export async function readDeadLetters(request: Request, params: unknown, query: Record<string, string>) {
  const p = parseOr400(subscriptionParams, params, 'subscription');
  const q = parseOr400(deadLetterQuery, query, 'query');
  await authorizeDeadLetterRead(request, p);
  return deadLetters(await getContext(), p, q);
}

/** GET /api/admin/alerts/rules: the rules with their evaluation state, and the channels (secrets only as "set"). */
export async function readAlertRules(request: Request) {
  const who = await authorize(request, 'read');
  // A rule's last detail can name another endpoint's event or session: only within the caller's read scope.
  return listRules(await getContext(), readScope(who));
}

const alertHistoryQuerySchema = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(200) }).strict();

/** GET /api/alerts/history: alerts name event ids, session ids and error texts, so within the caller's read scope. */
export async function readAlertHistory(request: Request, query: Record<string, string>) {
  const q = parseOr400(alertHistoryQuerySchema, query, 'history query');
  const who = await authorize(request, 'read');
  return { alerts: await alertHistory(await getContext(), q.limit, readScope(who)) };
}

/** GET /api/audit: a caller with roles on single endpoints sees only their entries. */
export async function readAudit(request: Request, query: Record<string, string>) {
  const q = parseOr400(auditQuerySchema, query, 'audit query');
  const who = await authorize(request, 'read', q.endpointId);
  const ctx = await getContext();
  // Entries carry payload key names (edit diffs) and event ids: only the endpoints the caller may read.
  const scope = readScope(who);
  const page = await queryAudit(ctx.store.database, q, scope.all ? undefined : scope.endpointIds);
  // An entry over several endpoints is found by each one's readers: a per-endpoint reader sees only their part of it.
  const readable = scope.all ? undefined : new Set(scope.endpointIds);
  const items = readable === undefined ? page.items : page.items.map((entry) => entryForReader(entry, readable));
  return { items, continuation: page.continuationToken ?? null };
}
