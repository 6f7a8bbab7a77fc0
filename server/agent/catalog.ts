// What an agent may see of the catalog: the endpoints it holds the Agent's rights on (roles.ts agentEndpoints),
// the event types those endpoints produce or consume, and each type's JSON schema, session key and example - what
// an agent needs to read a handed-out payload and to publish a valid one, and nothing of other endpoints.
import type { Catalog } from '@nimbus/sdk/contract';
import { agentEndpoints, type RoleAssignment } from '../auth/roles.ts';

export interface AgentCatalog {
  endpoints: Array<{ id: string; description: string | null; owner: string | null; produces: string[]; consumes: string[] }>;
  eventTypes: Array<{ id: string; description: string | null; sessionKey: string | null; schema: Record<string, unknown> | null; example: Record<string, unknown> | null }>;
}

export function agentCatalog(catalog: Catalog, assignments: readonly RoleAssignment[]): AgentCatalog {
  const scope = agentEndpoints(assignments);
  const endpoints = catalog.endpoints.filter((e) => scope.all || scope.endpointIds.includes(e.id));
  const typeIds = new Set(endpoints.flatMap((e) => [...e.produces, ...e.consumes]));
  return {
    endpoints: endpoints.map((e) => ({ id: e.id, description: e.description ?? null, owner: e.owner ?? null, produces: e.produces, consumes: e.consumes })),
    eventTypes: catalog.eventTypes
      .filter((t) => typeIds.has(t.id))
      .map((t) => ({ id: t.id, description: t.description ?? null, sessionKey: t.sessionKey ?? null, schema: t.schema ?? null, example: t.example ?? null })),
  };
}
