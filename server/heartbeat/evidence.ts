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
 * evidence of life nor of death - the sweep leaves the probe for a later round rather than call a busy endpoint Off
 * when the store is overloaded (which is when endpoints are busiest), up to a bound (overdueVerdict). Never throws: one endpoint's failed lookup must
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
    warn(`heartbeat: could not read ${endpointId}'s last answer (${(err as Error)?.message ?? String(err)}); its probe is decided at a later sweep`);
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
 * How long a lookup made for the reads (the Health page, /api/endpoints) may be reused for the same probe: one
 * sweep tick (scheduler.ts TICK_MS), the pace at which the sweep itself decides overdue probes. Without it every poll
 * of /api/endpoints ran the query again for each endpoint whose probe stays overdue - for good when the endpoint
 * has left the catalog, since the sweep (which walks the catalog) never settles its probe.
 */
export const EVIDENCE_REUSE_MS = 30_000;
/** Entries kept at most: one per overdue probe, so the bound only matters if thousands are overdue at once. */
const EVIDENCE_CACHE_MAX = 1_000;

const readEvidence = new Map<string, { at: string | null; until: number }>();

/**
 * lastHandledAt for the reads, reused for EVIDENCE_REUSE_MS (by the caller's clock) when reusing cannot hide a busy
 * endpoint that a fresh lookup would show:
 *   - an answer that still makes the probe busy (aliveSince, checked again at `nowMs`): later answers only extend it;
 *   - any answer once the probe is overdue by more than a timeout: by then the sweep has decided the probe (Off,
 *     or left Pending because busy; endpoints outside the catalog included), so what is still overdue and not busy
 *     is a probe nobody settles yet (no sweep running, a failed lookup) and asking on every poll buys nothing.
 * In the probe's first timeout overdue, a "not busy" answer is not reused: busy can appear at any moment there, and
 * the heartbeat alert reads it. A failed lookup (undefined) is never kept.
 */
export async function lastHandledAtForProbe(
  store: MessageStore,
  probe: { endpointId: string; probeId: string; sentAt: string },
  nowMs: number,
  timeoutSeconds: number,
  warn: (msg: string) => void,
): Promise<string | null | undefined> {
  const key = `${probe.endpointId}\n${probe.probeId}`;
  const hit = readEvidence.get(key);
  const longOverdue = nowMs - Date.parse(probe.sentAt) > 2 * timeoutSeconds * 1000;
  if (hit && nowMs < hit.until && (longOverdue || aliveSince(hit.at, probe.sentAt, nowMs, timeoutSeconds))) return hit.at;
  const at = await lastHandledAt(store, probe.endpointId, warn);
  if (at === undefined) return undefined;
  readEvidence.delete(key);
  if (readEvidence.size >= EVIDENCE_CACHE_MAX) {
    for (const [k, v] of readEvidence) if (v.until <= nowMs) readEvidence.delete(k);
    // Still full: the oldest entry goes (insertion order).
    if (readEvidence.size >= EVIDENCE_CACHE_MAX) readEvidence.delete(readEvidence.keys().next().value!);
  }
  readEvidence.set(key, { at, until: nowMs + EVIDENCE_REUSE_MS });
  return at;
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

/**
 * How far past its timeout a probe may stay undecided while its endpoint's last answer cannot be read, in
 * timeouts: past that the sweep turns it Off. A failed lookup is usually a throttled or overloaded store, so the
 * probe is first left for later sweeps (a busy endpoint is not called Off on no evidence). But "busy" itself only
 * lasts one timeout after the endpoint's last answer: a lookup that keeps failing must not hold a probe Pending
 * for longer than any real evidence could. Two more timeouts give a lookup failing for a tick or two its retries
 * at the default settings (timeout 60 s, a sweep every 30 s) and scale with what the operator chose as "silent".
 */
export const UNKNOWN_EVIDENCE_TIMEOUTS = 2;

/**
 * What the sweep does with an overdue probe given its endpoint's last answer (`undefined`: the lookup failed):
 * `busy` leaves it Pending (aliveSince), `off` turns it Off, `offUnknown` turns it Off because no evidence could be
 * read for UNKNOWN_EVIDENCE_TIMEOUTS timeouts past its deadline, `undecided` leaves it for the next sweep. Pure.
 */
export function overdueVerdict(
  handledAt: string | null | undefined,
  probeSentAt: string,
  nowMs: number,
  timeoutSeconds: number,
): 'busy' | 'off' | 'offUnknown' | 'undecided' {
  if (handledAt === undefined) {
    const overdueMs = nowMs - Date.parse(probeSentAt) - timeoutSeconds * 1000;
    return overdueMs > UNKNOWN_EVIDENCE_TIMEOUTS * timeoutSeconds * 1000 ? 'offUnknown' : 'undecided';
  }
  return aliveSince(handledAt, probeSentAt, nowMs, timeoutSeconds) ? 'busy' : 'off';
}
