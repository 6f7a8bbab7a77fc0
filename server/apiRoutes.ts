// Every API route and its methods, for the proxy (proxy.ts) to answer what Next.js itself would answer with an
// HTML page or an empty body: an unknown /api/... path gets a JSON 404, a known path called with a method it does
// not have gets a JSON 405 with an Allow header. API clients then always read `{ error, detail }`.
// Kept by hand next to app/api: server/apiRoutes.test.ts walks app/api/**/route.ts and fails when this list and
// the route files disagree (a new route or method must be added here).

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

/** Path patterns as in app/api (`[name]` is one segment), each with the methods its route.ts exports. */
export const API_ROUTES: ReadonlyArray<readonly [pattern: string, methods: readonly Method[]]> = [
  ['/api/admin/alerts/channels/[channelId]', ['PUT', 'DELETE']],
  ['/api/admin/alerts/channels/[channelId]/test', ['POST']],
  ['/api/admin/alerts/channels', ['POST']],
  ['/api/admin/alerts/rules/[ruleId]', ['PUT', 'DELETE']],
  ['/api/admin/alerts/rules', ['GET', 'POST']],
  ['/api/admin/grants/[grantId]', ['DELETE']],
  ['/api/admin/grants', ['GET', 'POST']],
  ['/api/admin/health', ['GET']],
  ['/api/admin/heartbeat/endpoints/[endpointId]', ['PUT']],
  ['/api/admin/heartbeat/send-now', ['POST']],
  ['/api/admin/heartbeat/settings', ['PUT']],
  ['/api/agent/catalog', ['GET']],
  ['/api/agent/publish', ['POST']],
  ['/api/agent/receive', ['GET']],
  ['/api/agent/settle', ['POST']],
  ['/api/alerts/history', ['GET']],
  ['/api/audit', ['GET']],
  ['/api/endpoints/[endpointId]/events/[eventId]', ['GET']],
  ['/api/endpoints/[endpointId]/events/export', ['GET']],
  ['/api/endpoints/[endpointId]/events', ['GET']],
  ['/api/endpoints/[endpointId]', ['GET']],
  ['/api/endpoints', ['GET']],
  ['/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]', ['POST']],
  ['/api/event/handoff/fail/[endpointId]/[eventId]/[messageId]', ['POST']],
  ['/api/event/resubmit/[endpointId]/[eventId]', ['POST']],
  ['/api/event/resubmit', ['POST']],
  ['/api/event/skip/[endpointId]/[eventId]', ['POST']],
  ['/api/event/skip', ['POST']],
  ['/api/failure-groups/[groupId]/note', ['PUT']],
  ['/api/failure-groups', ['GET']],
  ['/api/catalog/event-types', ['GET']],
  ['/api/flow', ['GET']],
  ['/api/health', ['GET']],
  ['/api/mcp', ['POST']],
  ['/api/me', ['GET']],
  ['/api/metrics', ['GET']],
  ['/api/operations/[operationId]/cancel', ['POST']],
  ['/api/operations/[operationId]/outcome', ['GET']],
  ['/api/operations/[operationId]/pause', ['POST']],
  ['/api/operations/[operationId]/resume', ['POST']],
  ['/api/operations/[operationId]', ['GET']],
  ['/api/operations/reconcile', ['GET', 'POST']],
  ['/api/operations', ['GET', 'POST']],
  ['/api/ready', ['GET']],
  ['/api/search', ['GET']],
  ['/api/topology/operations/[operationId]', ['GET']],
  ['/api/topology/subscriptions/[topic]/[subscription]/actions', ['POST']],
  ['/api/topology/subscriptions/[topic]/[subscription]/deadletters', ['GET']],
  ['/api/topology/subscriptions/[topic]/[subscription]/replay/preview', ['POST']],
  ['/api/topology/subscriptions/[topic]/[subscription]/replay', ['POST']],
  ['/api/topology/subscriptions', ['GET']],
];

export type RouteMatch = { kind: 'found' } | { kind: 'unknown' } | { kind: 'method'; allow: string[] };

const compiled = API_ROUTES.map(([pattern, methods]) => ({ segments: pattern.split('/').filter(Boolean), methods }));

/**
 * What Next would do with a request to `pathname` (an /api/ path): route it, find no route, or find the route
 * without this method. Static segments win over `[param]` ones, as in Next's router. HEAD follows GET and OPTIONS
 * is always answered (Next does both itself).
 */
export function matchApiRoute(pathname: string, method: string): RouteMatch {
  const parts = pathname.split('/').filter(Boolean);
  const candidates = compiled.filter(
    (r) => r.segments.length === parts.length && r.segments.every((s, i) => s.startsWith('[') || s === parts[i]),
  );
  if (candidates.length === 0) return { kind: 'unknown' };
  // The most specific: compared segment by segment, a static segment beats a parameter.
  const rank = (r: (typeof compiled)[number]) => r.segments.map((s) => (s.startsWith('[') ? '1' : '0')).join('');
  const route = candidates.sort((a, b) => rank(a).localeCompare(rank(b)))[0]!;
  const m = method.toUpperCase();
  if (m === 'OPTIONS' || (route.methods as readonly string[]).includes(m) || (m === 'HEAD' && route.methods.includes('GET')))
    return { kind: 'found' };
  const allow: string[] = [...route.methods];
  if (allow.includes('GET')) allow.push('HEAD');
  allow.push('OPTIONS');
  return { kind: 'method', allow };
}
