// Evidence that an endpoint is alive while its heartbeat probe is overdue. The probe travels on the endpoint's own
// subscription (session `Heartbeat`), so a host whose sessions are all busy with a backlog reaches it only after
// the sessions that were ready before it: on a loaded box that takes longer than the timeout, and a silent probe
// alone would call a working endpoint Off. What the endpoint *answers* meanwhile is recorded by the Resolver as a
// status row written by a response (ResolutionResponse, ErrorResponse, …) — only the endpoint sends those. The
// row's `enqueuedAt` (the broker's time of that answer), not its `updatedAt`: other writers stamp response rows
// with the current time without the endpoint saying anything - the Manager's and Reconcile's restores, Reconcile's
// repair, a Resolver catching up on a backlog of old answers - and a dead endpoint would look busy after each.
// Deliberately not the counters' last change (`lastActivityAt` on /api/endpoints): requests arriving for a dead
// endpoint move its counters too, and would make it look alive.
import { RESPONSE_TYPES } from '@nimbus/sdk/contract';
import { CONTAINERS, type MessageStore } from '../../lib/store/index.ts';

const RESPONSES = [...RESPONSE_TYPES];

/**
 * When this endpoint last answered a message, as the Resolver recorded it (the broker time of the newest response
 * row), or null if it never did. `undefined` when the lookup failed (throttled, timed out): unknown, which is neither
 * evidence of life nor of death - the sweep leaves the probe for its next round rather than call a busy endpoint Off
 * when the store is overloaded (which is when endpoints are busiest). Never throws: one endpoint's failed lookup must
 * not stop the sweep or the Health page for the others.
 */
export async function lastHandledAt(
  store: MessageStore,
  endpointId: string,
  warn: (msg: string) => void = () => undefined,
): Promise<string | null | undefined> {
  try {
    return await newestAnswerAt(store, endpointId);
  } catch (err) {
    warn(`heartbeat: could not read ${endpointId}'s last answer (${(err as Error)?.message ?? String(err)}); its probe is decided next round`);
    return undefined;
  }
}

async function newestAnswerAt(store: MessageStore, endpointId: string): Promise<string | null> {
  const r = await store.database
    .container(CONTAINERS.events)
    .items.query<string>(
      {
        query: 'SELECT TOP 1 VALUE c.enqueuedAt FROM c WHERE c.endpointId = @ep AND ARRAY_CONTAINS(@types, c.messageType) ORDER BY c.enqueuedAt DESC',
        parameters: [
          { name: '@ep', value: endpointId },
          { name: '@types', value: RESPONSES },
        ],
      },
      { partitionKey: [endpointId] },
    )
    .fetchAll();
  const v = r.resources[0];
  return typeof v === 'string' ? v : null;
}

/**
 * Whether an overdue probe is explained by a busy endpoint rather than a dead one: the endpoint answered something
 * after the probe left, and recently (within one timeout of now). The second condition bounds "busy": an endpoint
 * that stops answering anything for a whole timeout is Off at the next sweep, whatever it did before. Pure.
 */
export function aliveSince(handledAt: string | null, probeSentAt: string, nowMs: number, timeoutSeconds: number): boolean {
  if (handledAt === null) return false;
  const at = Date.parse(handledAt);
  return at > Date.parse(probeSentAt) && at > nowMs - timeoutSeconds * 1000;
}
