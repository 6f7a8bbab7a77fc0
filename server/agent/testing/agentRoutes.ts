// The agent routes as an AgentClient reaches them, for the route tests of server/agent: requests signed in as a
// principal (a sealed session cookie), answered by the route handlers themselves (no HTTP server), with the client's
// retries kept and made quick; and the publish record a publish claims, read back.
import type { Database } from '@azure/cosmos';
import { deterministicMessageId } from '@nimbus/sdk';
import { AgentClient } from '../../../packages/sdk/src/agentClient.ts';
import { SESSION_COOKIE, sealSession } from '../../auth/session.ts';
import type { Principal } from '../../auth/principal.ts';
import { PUBLISH_RECORDS_CONTAINER, publishRecordId, type PublishRecord } from '../publishRecords.ts';

/** An AgentClient whose requests go to the settle and publish route handlers as `who`; `seen.requests` counts them. */
export function agentAs(secret: string, who: Principal): { client: AgentClient; seen: { requests: number } } {
  const cookie = `${SESSION_COOKIE}=${sealSession(who, { secret, maxAgeSeconds: 600 })}`;
  const seen = { requests: 0 };
  const routes = (async (input: URL, init: RequestInit) => {
    seen.requests++;
    const request = new Request(`http://127.0.0.1:3000${input.pathname}`, { ...init, headers: { ...(init.headers as Record<string, string>), host: '127.0.0.1:3000', cookie } });
    if (input.pathname.endsWith('/settle')) return (await import('../../../app/api/agent/settle/route.ts')).POST(request);
    return (await import('../../../app/api/agent/publish/route.ts')).POST(request);
  }) as typeof fetch;
  // Retries as the default client's, quicker: a 503 would be sent 4 times.
  return { client: new AgentClient({ consoleUrl: 'http://127.0.0.1:3000', fetch: routes, retry: { attempts: 4, initialMs: 10, maxMs: 10 } }), seen };
}

/** The publish record a publish of this event by `endpointId` claims (its key: the deterministic message id). */
export async function publishRecordOf(database: Database, endpointId: string, eventTypeId: string, payload: unknown): Promise<PublishRecord | undefined> {
  const id = publishRecordId(endpointId, deterministicMessageId(eventTypeId, JSON.stringify(payload)));
  const { resource } = await database.container(PUBLISH_RECORDS_CONTAINER).item(id, endpointId).read<PublishRecord>();
  return resource;
}
