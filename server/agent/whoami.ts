// The endpoint an agent publishes as when its request does not name one: the one endpoint it holds the Agent's
// rights on. With several (or a site-wide Operator's all), the request must say which (400).
import { authorize } from '../auth/authorize.ts';
import { agentEndpoints } from '../auth/roles.ts';
import { badRequest } from '../http.ts';

export async function agentEndpointOf(request: Request): Promise<string> {
  const who = await authorize(request, 'agent.catalog');
  const scope = agentEndpoints(who.assignments);
  if (!scope.all && scope.endpointIds.length === 1) return scope.endpointIds[0]!;
  throw badRequest(
    scope.all
      ? 'name endpointId: your role allows publishing as any endpoint'
      : `name endpointId: you may publish as ${scope.endpointIds.join(', ')}`,
  );
}
