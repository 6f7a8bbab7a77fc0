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
  nowMs: number = Date.now(),
): Promise<string | null | undefined> {
  try {
    const at = await newestAnswerAt(store, endpointId);
    if (at !== null) rememberAnswer(endpointId, at);
    lookupBackoff.delete(endpointId);
    return at;
  } catch (err) {
    backOff(endpointId, nowMs);
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

/** Entries kept at most in each in-process map below: one per endpoint or overdue probe, so it only matters at thousands. */
const EVIDENCE_CACHE_MAX = 1_000;

/** Sets a bounded map's entry, first dropping entries `stale` says may go, then the oldest (insertion order). */
function setBounded<V>(map: Map<string, V>, key: string, value: V, stale: (v: V) => boolean): void {
  map.delete(key);
  if (map.size >= EVIDENCE_CACHE_MAX) {
    for (const [k, v] of map) if (stale(v)) map.delete(k);
    if (map.size >= EVIDENCE_CACHE_MAX) map.delete(map.keys().next().value!);
  }
  map.set(key, value);
}

/**
 * The reads' first wait after a failed lookup: one period of the console's poll of the Health page and
 * /api/endpoints (components/queries.ts), so the first retry is the very next poll (5 s later) and only reads in
 * between (another open page) are held back; from the second failure on, polls are skipped.
 */
export const EVIDENCE_RETRY_FIRST_MS = 5_000;
/**
 * The longest wait: one sweep tick (EVIDENCE_REUSE_MS, scheduler.ts TICK_MS). The sweep asks once per tick whatever
 * the back-off says, so the reads never wait longer than it and a recovered store is seen within a tick.
 */
export const EVIDENCE_RETRY_MAX_MS = 30_000;

/**
 * Per endpoint, after a failed lookup: how many failed in a row and until when the reads do not ask again. A failure
 * is usually a throttled (429) or overloaded store, and without this every poll of every open page asked again for
 * each endpoint with an overdue probe, exactly while the store was in trouble. The wait doubles from
 * EVIDENCE_RETRY_FIRST_MS up to EVIDENCE_RETRY_MAX_MS; any successful lookup (a read's or the sweep's) ends it.
 */
const lookupBackoff = new Map<string, { failures: number; retryAt: number }>();

function backOff(endpointId: string, nowMs: number): void {
  const failures = Math.min((lookupBackoff.get(endpointId)?.failures ?? 0) + 1, 16); // 2^15 × 5 s is far past the cap
  const waitMs = Math.min(EVIDENCE_RETRY_MAX_MS, EVIDENCE_RETRY_FIRST_MS * 2 ** (failures - 1));
  // An entry a whole cap past its retry time says nothing any read is waiting on: first to go at the size bound.
  setBounded(lookupBackoff, endpointId, { failures, retryAt: nowMs + waitMs }, (v) => v.retryAt + EVIDENCE_RETRY_MAX_MS <= nowMs);
}

/** Whether the reads should not ask about this endpoint yet (a lookup failed and its back-off has not run out). */
function backingOff(endpointId: string, nowMs: number): boolean {
  const b = lookupBackoff.get(endpointId);
  return b !== undefined && nowMs < b.retryAt;
}

/**
 * The newest answer each endpoint was seen to have given, by any successful lookup in this process (the sweep's
 * and the reads'). When a later lookup fails, this is what bounds "unknown" (overdueVerdict): a busy endpoint whose
 * probe has waited minutes behind its backlog is not called Off on one throttled query, since it answered recently.
 */
const answersSeen = new Map<string, string>();

function rememberAnswer(endpointId: string, at: string): void {
  const known = answersSeen.get(endpointId);
  if (known !== undefined && Date.parse(known) >= Date.parse(at)) return;
  // Never stale: an endpoint's newest answer only moves forward, so only the size bound drops entries.
  setBounded(answersSeen, endpointId, at, () => false);
}

/** The newest answer a lookup in this process has seen from this endpoint, or null (none, or forgotten). */
export function lastAnswerSeen(endpointId: string): string | null {
  return answersSeen.get(endpointId) ?? null;
}

/**
 * How long a lookup made for the reads (the Health page, /api/endpoints) may be reused for the same probe: one
 * sweep tick (scheduler.ts TICK_MS), the pace at which the sweep itself decides overdue probes. Without it every poll
 * of /api/endpoints ran the query again for each endpoint whose probe stays overdue.
 */
export const EVIDENCE_REUSE_MS = 30_000;

const readEvidence = new Map<string, { at: string | null; until: number }>();

/**
 * lastHandledAt for the reads, reused for EVIDENCE_REUSE_MS (by the caller's clock) only where reusing cannot hide a
 * busy endpoint that a fresh lookup would show:
 *   - an answer that still makes the probe busy (aliveSince, checked again at `nowMs`): later answers only extend it.
 *     Once it has aged past the timeout it is looked up again, since the endpoint may have answered since: the Health
 *     page and the `heartbeat missing` alert read this, and a stale "not busy" would fire the alert for a busy endpoint;
 *   - with `reuseAny` (an endpoint outside the catalog: neither the Health page nor the alert reads it), any answer
 *     once the probe is overdue by more than a timeout: a stale answer then only delays /api/endpoints' busy mark by
 *     a tick, against a query on every poll for as long as nothing settles the probe. In its first timeout overdue,
 *     where busy can appear at any moment, it is looked up afresh like a catalog endpoint's.
 * A failed lookup is never kept; it returns the unexpired cached answer if there is one (known a moment ago beats
 * unknown), else undefined - and so does every read while the endpoint's lookups are backing off (lookupBackoff):
 * the verdict rules read "unknown" the same whether it was asked or not (overdueVerdict counts from the clock).
 */
export async function lastHandledAtForProbe(
  store: MessageStore,
  probe: { endpointId: string; probeId: string; sentAt: string },
  nowMs: number,
  timeoutSeconds: number,
  warn: (msg: string) => void,
  opts: { reuseAny?: boolean } = {},
): Promise<string | null | undefined> {
  const key = `${probe.endpointId}\n${probe.probeId}`;
  const cached = readEvidence.get(key);
  const hit = cached && nowMs < cached.until ? cached : undefined;
  const longOverdue = nowMs - Date.parse(probe.sentAt) > 2 * timeoutSeconds * 1000;
  if (hit && ((opts.reuseAny && longOverdue) || aliveSince(hit.at, probe.sentAt, nowMs, timeoutSeconds))) return hit.at;
  // A recent lookup failed: not asked again until its back-off runs out; meanwhile what a failure would give.
  if (backingOff(probe.endpointId, nowMs)) return hit?.at;
  const at = await lastHandledAt(store, probe.endpointId, warn, nowMs);
  if (at === undefined) return hit?.at;
  setBounded(readEvidence, key, { at, until: nowMs + EVIDENCE_REUSE_MS }, (v) => v.until <= nowMs);
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
 * for long after any real evidence could: two timeouts past the later of the deadline and the last answer seen, which at
 * the default settings (timeout 60 s, a sweep every 30 s) leaves a failing lookup about four sweeps, and scales
 * with what the operator chose as "silent".
 */
export const UNKNOWN_EVIDENCE_TIMEOUTS = 2;

/**
 * What the sweep does with an overdue probe given its endpoint's last answer (`undefined`: the lookup failed):
 * `busy` leaves it Pending (aliveSince), `off` turns it Off, `undecided` leaves it for the next sweep, and
 * `offUnknown` turns it Off because no evidence could be read for UNKNOWN_EVIDENCE_TIMEOUTS timeouts past the later
 * of its deadline and `lastSeen` (the newest answer an earlier lookup found, lastAnswerSeen). Counting from the send
 * alone was wrong for a busy endpoint: its probe stays overdue for as long as its backlog takes (minutes), so the
 * first failed lookup after that turned it Off at once although it had answered seconds before. Pure.
 */
export function overdueVerdict(
  handledAt: string | null | undefined,
  probeSentAt: string,
  nowMs: number,
  timeoutSeconds: number,
  lastSeen: string | null = null,
): 'busy' | 'off' | 'offUnknown' | 'undecided' {
  if (handledAt === undefined) {
    const deadline = Date.parse(probeSentAt) + timeoutSeconds * 1000;
    const since = lastSeen === null ? deadline : Math.max(deadline, Date.parse(lastSeen));
    return nowMs - since > UNKNOWN_EVIDENCE_TIMEOUTS * timeoutSeconds * 1000 ? 'offUnknown' : 'undecided';
  }
  return aliveSince(handledAt, probeSentAt, nowMs, timeoutSeconds) ? 'busy' : 'off';
}
