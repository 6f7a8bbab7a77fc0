// Admin → Health: the heartbeat scheduler (flow 8; research-webapp.md §4). A tick every 30 s:
//   1. sweep: probes still Pending after the timeout turn Off (endpoints, also those since removed from the catalog,
//      and the Resolver), so an unanswered
//      probe settles within timeout + one tick even while the schedule is disabled — except an endpoint's probe
//      while the endpoint keeps answering other messages (evidence.ts): it is queued behind a backlog, and stays
//      Pending (shown as busy) until it is answered or the endpoint falls silent for a whole timeout;
//   2. the Resolver liveness probe, once per interval whatever `enabled` says (it settles itself, no bus reply);
//   3. when enabled and due, one probe per included endpoint, straight to the endpoint topic, From = Manager.
// Steps 2 and 3 are claimed first on a stored document with an etag condition, so with several console
// replicas exactly one sends per interval. A tick's failure is logged and swallowed; the next tick tries again.
import { randomUUID } from 'node:crypto';
import type { ServiceBusClient, ServiceBusMessage, ServiceBusSender } from '@azure/service-bus';
import {
  Address,
  eventBody,
  HEARTBEAT_EVENT_TYPE_ID,
  MessageType,
  Prop,
  SELF,
  Topic,
  toWireProperties,
  WellKnownSession,
  type Catalog,
} from '@nimbus/sdk/contract';
import type { HeartbeatRecord, HeartbeatSettings, MessageStore, ServiceHealth } from '../../lib/store/index.ts';
import { log as defaultLog } from '../log.ts';
import type { PlatformDocs } from './platformDocs.ts';
import { aliveSince, lastAnswerSeen, lastHandledAt, lastHandledAtForProbe, overdueVerdict, UNKNOWN_EVIDENCE_TIMEOUTS } from './evidence.ts';
import { withSendSpan } from '@nimbus/sdk';
import { boundedClose } from '@nimbus/sdk/servicebus';

export const TICK_MS = 30_000;
export const MIN_INTERVAL_SECONDS = 30;
export const MIN_TIMEOUT_SECONDS = 5;
/** Audit partition for Admin actions (they belong to no event). */
export const ADMIN_AUDIT_EVENT = '$admin';

const CLAIM_ENDPOINTS = 'heartbeat_send_claim';
const CLAIM_RESOLVER = 'heartbeat_resolver_claim';
const EXCLUDED = 'heartbeat_excluded';

type Log = Pick<typeof defaultLog, 'info' | 'warn' | 'error'>;

export interface HeartbeatDeps {
  store: MessageStore;
  client: ServiceBusClient;
  catalog: Catalog;
  docs: PlatformDocs;
  now?: () => Date;
  log?: Log;
}

/** The settings an operator may change, clamped as the specification says (interval ≥ 30, timeout in [5, interval]). */
export function clampSettings(s: { enabled: boolean; intervalSeconds: number; timeoutSeconds: number }): {
  enabled: boolean;
  intervalSeconds: number;
  timeoutSeconds: number;
} {
  const intervalSeconds = Math.max(MIN_INTERVAL_SECONDS, Math.round(s.intervalSeconds));
  const timeoutSeconds = Math.min(intervalSeconds, Math.max(MIN_TIMEOUT_SECONDS, Math.round(s.timeoutSeconds)));
  return { enabled: s.enabled, intervalSeconds, timeoutSeconds };
}

export type EndpointHealthStatus = 'On' | 'Unsupported' | 'Off' | 'Pending' | 'Unknown';

export interface EndpointHealth {
  endpointId: string;
  included: boolean;
  /** The last settled outcome; Pending only while nothing was ever settled. */
  status: EndpointHealthStatus;
  /** A probe is out and not answered yet. */
  probeInFlight: boolean;
  lastSentAt: string | null;
  lastSeenAt: string | null;
  roundTripMs: number | null;
  sdkVersion: string | null;
  /**
   * The newest probe is past the timeout, yet the endpoint answered other messages since it was sent and within
   * the last timeout: it is queued behind a backlog, not dead. `status` keeps the last settled outcome meanwhile.
   */
  busy: boolean;
  /** When the Resolver last recorded an answer from the endpoint; looked up only while the newest probe is overdue. */
  lastHandledAt: string | null;
  /** While busy: the endpoint's Pending messages (its counters), what the probe waits behind at most. Else null. */
  backlog: number | null;
  /** The last answer took longer than the timeout (it came after the probe was overdue). */
  answeredLate: boolean;
  /**
   * The newest probe is overdue and its endpoint's last answer could not be read, within the bound the sweep leaves
   * such a probe Pending (overdueVerdict 'undecided'): neither busy nor silent as far as anyone knows.
   */
  evidenceUnknown: boolean;
}

/** What endpointHealth needs beyond the records to tell busy from dead and late from prompt. */
export interface HealthContext {
  nowMs: number;
  timeoutSeconds: number;
  lastHandledAt: string | null;
  backlog: number | null;
  /** The last answer could not be read and the sweep would still leave the probe Pending (readEndpointHealth). */
  evidenceUnknown?: boolean;
}

export interface ResolverHealth {
  status: string;
  version: string | null;
  lastSeenAt: string | null;
  lastProbeSentAt: string | null;
  probeInFlight: boolean;
  roundTripMs: number | null;
}

/**
 * The version of settings never saved (the defaults). Any other version is the stored document's etag: opaque to
 * callers, who send back the one they read so a save cannot overwrite a change they have not seen.
 */
export const DEFAULT_SETTINGS_VERSION = 'defaults';

export type VersionedHeartbeatSettings = HeartbeatSettings & { version: string };

/** What an operator's save ended with: stored (the values and their new version), or refused as stale. */
export type SettingsSaveResult = { saved: VersionedHeartbeatSettings } | { stale: { version: string } };

export interface HealthOverview {
  /** `version`: send it back with a save (PUT /api/admin/heartbeat/settings). */
  settings: { enabled: boolean; intervalSeconds: number; timeoutSeconds: number; lastSentAt: string | null; version: string };
  resolver: ResolverHealth;
  endpoints: EndpointHealth[];
  generatedAt: string;
}

const SETTLED = new Set(['On', 'Unsupported', 'Off', 'Unknown']);

/**
 * The newest probe Pending past the timeout among those sent since the last settled one. Not only the newest record:
 * the scheduler sends the next probe every interval while a busy endpoint's earlier probe still waits (the sweep
 * keeps it Pending), and for a timeout after each send the newest is not overdue yet - judged by it alone, a busy
 * endpoint lost its busy mark once per interval and the heartbeat alert fired for it in that window.
 */
function overdueProbe(records: HeartbeatRecord[], nowMs: number, timeoutSeconds: number): HeartbeatRecord | undefined {
  const cutoff = nowMs - timeoutSeconds * 1000;
  for (const r of newestFirst(records)) {
    if (r.status !== 'Pending') return undefined;
    if (r.sentAt && Date.parse(r.sentAt) <= cutoff) return r;
  }
  return undefined;
}

const newestFirst = (records: HeartbeatRecord[]) =>
  [...records].sort((a, b) => (b.sentAt ?? b.updatedAt).localeCompare(a.sentAt ?? a.updatedAt));

/** One endpoint's health from its recent records (newest first). Pure. */
export function endpointHealth(endpointId: string, included: boolean, records: HeartbeatRecord[], ctx?: HealthContext): EndpointHealth {
  const byTime = newestFirst(records);
  const settled = byTime.find((r) => SETTLED.has(r.status));
  const answered = byTime.find((r) => r.status === 'On' || r.status === 'Unsupported');
  const newest = byTime[0];
  const rtt =
    answered?.sentAt && (answered.receivedAt ?? answered.answeredAt)
      ? Math.max(0, Date.parse((answered.answeredAt ?? answered.receivedAt)!) - Date.parse(answered.sentAt))
      : null;
  return {
    endpointId,
    included,
    status: (settled?.status ?? (newest ? 'Pending' : 'Unknown')) as EndpointHealthStatus,
    probeInFlight: newest?.status === 'Pending',
    lastSentAt: newest?.sentAt ?? null,
    lastSeenAt: answered?.answeredAt ?? answered?.receivedAt ?? null,
    roundTripMs: rtt,
    sdkVersion: answered?.sdkVersion ?? null,
    ...busyness(records, rtt, ctx),
  };
}

function busyness(records: HeartbeatRecord[], rtt: number | null, ctx: HealthContext | undefined): Pick<EndpointHealth, 'busy' | 'lastHandledAt' | 'backlog' | 'answeredLate' | 'evidenceUnknown'> {
  if (!ctx) return { busy: false, lastHandledAt: null, backlog: null, answeredLate: false, evidenceUnknown: false };
  const overdue = overdueProbe(records, ctx.nowMs, ctx.timeoutSeconds);
  const busy = overdue !== undefined && aliveSince(ctx.lastHandledAt, overdue.sentAt!, ctx.nowMs, ctx.timeoutSeconds);
  return {
    busy,
    lastHandledAt: ctx.lastHandledAt,
    backlog: busy ? ctx.backlog : null,
    answeredLate: rtt !== null && rtt > ctx.timeoutSeconds * 1000,
    evidenceUnknown: ctx.evidenceUnknown ?? false,
  };
}

/** What the Health page reads beside the records to judge one endpoint: the clock, the timeout, where the backlog is. */
export interface HealthReadContext {
  nowMs: number;
  timeoutSeconds: number;
  /** The endpoint's Pending count; asked only while its newest probe is overdue. */
  backlog: () => Promise<number | null>;
  warn: (msg: string) => void;
  /** Reuse any cached evidence for its window: only for an endpoint no page or alert judges (evidence.ts). */
  reuseAnyEvidence?: boolean;
}

/**
 * One endpoint's health read the way Admin → Health reads it: its recent probe records, and only while the newest
 * probe is overdue its last answer (reused for a sweep tick where that cannot hide a busy endpoint, evidence.ts
 * lastHandledAtForProbe) and backlog. Admin → Health and the shared read model (/api/endpoints, hence the
 * Endpoints page and Monitor) both call this, so they cannot disagree on what a busy endpoint is.
 */
export async function readEndpointHealth(
  store: MessageStore,
  endpointId: string,
  included: boolean,
  c: HealthReadContext,
): Promise<{ health: EndpointHealth; records: HeartbeatRecord[] }> {
  const records = await store.listHeartbeats(endpointId, 20);
  const overdue = overdueProbe(records, c.nowMs, c.timeoutSeconds);
  const probe = overdue && { endpointId, probeId: overdue.probeId, sentAt: overdue.sentAt! };
  const [handled, backlog] = probe
    ? await Promise.all([lastHandledAtForProbe(store, probe, c.nowMs, c.timeoutSeconds, c.warn, { reuseAny: c.reuseAnyEvidence ?? false }), c.backlog()])
    : [null, null];
  // Unknown as the sweep judges it: a failed lookup within the bound leaves the probe Pending, so the reads (and the
  // heartbeat alert) must not call the endpoint silent meanwhile either.
  const evidenceUnknown =
    probe !== undefined && handled === undefined && overdueVerdict(undefined, probe.sentAt, c.nowMs, c.timeoutSeconds, lastAnswerSeen(endpointId)) === 'undecided';
  const health = endpointHealth(endpointId, included, records, { nowMs: c.nowMs, timeoutSeconds: c.timeoutSeconds, lastHandledAt: handled ?? null, backlog, evidenceUnknown });
  return { health, records };
}

export class HeartbeatService {
  readonly #d: Required<Omit<HeartbeatDeps, 'log'>> & { log: Log };
  readonly #warn: (msg: string) => void;
  readonly #senders = new Map<string, ServiceBusSender>();

  constructor(deps: HeartbeatDeps) {
    this.#d = { now: () => new Date(), log: defaultLog, ...deps };
    this.#warn = (msg) => this.#d.log.warn(msg);
  }

  get endpointIds(): string[] {
    return this.#d.catalog.endpoints.map((e) => e.id);
  }

  async close(): Promise<void> {
    const senders = [...this.#senders.values()];
    this.#senders.clear();
    // Bounded (30 s each): a close met by a dropped connection never ends (boundedClose), and shutdown waits for this.
    await Promise.all(
      senders.map((s) => boundedClose('closing a heartbeat sender', () => s.close(), { logger: this.#d.log }).catch(() => undefined)),
    );
  }

  async settings(): Promise<HeartbeatSettings> {
    return (await this.#d.store.getHeartbeatSettings()).settings;
  }

  /** The settings with the version a save must name. */
  async versionedSettings(): Promise<VersionedHeartbeatSettings> {
    const { settings, etag } = await this.#d.store.getHeartbeatSettings();
    return { ...settings, version: etag ?? DEFAULT_SETTINGS_VERSION };
  }

  /**
   * An operator's save, applied only if the stored settings are still at `expectedVersion` (optimistic concurrency):
   * two Owners saving from the same read cannot both win, the second learns the settings moved and nothing of its
   * save is applied. The condition is the store's own (etag / create-if-absent), so a save racing this one between
   * the check and the write is refused too.
   */
  async updateSettings(
    patch: Partial<{ enabled: boolean; intervalSeconds: number; timeoutSeconds: number }>,
    expectedVersion: string,
    auditor: string,
  ): Promise<SettingsSaveResult> {
    const { settings: current, etag } = await this.#d.store.getHeartbeatSettings();
    const version = etag ?? DEFAULT_SETTINGS_VERSION;
    if (version !== expectedVersion) return { stale: { version } };
    const next = clampSettings({ ...current, ...patch });
    // Fields only: the store keeps lastSentAt as it is (a settings save never resets the schedule).
    if (!(await this.#d.store.saveHeartbeatSettings(next, etag ?? null))) return { stale: { version: (await this.versionedSettings()).version } };
    await this.#audit('UpdateHeartbeatSettings', auditor, next);
    return { saved: await this.versionedSettings() };
  }

  async excluded(): Promise<Set<string>> {
    const doc = await this.#d.docs.read<{ endpoints: string[] }>(EXCLUDED);
    return new Set(doc?.value.endpoints ?? []);
  }

  /** Includes or excludes one endpoint from the scheduled probes (opt-out list, etag-guarded read-modify-write). */
  async setIncluded(endpointId: string, included: boolean, auditor: string): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const doc = await this.#d.docs.read<{ endpoints: string[] }>(EXCLUDED);
      const set = new Set(doc?.value.endpoints ?? []);
      if (included) set.delete(endpointId);
      else set.add(endpointId);
      if (await this.#d.docs.write(EXCLUDED, { endpoints: [...set].sort() }, doc ? doc.etag : null)) {
        await this.#audit(included ? 'EnableEndpointHeartbeat' : 'DisableEndpointHeartbeat', auditor, { endpointId });
        return;
      }
    }
    throw new Error('the heartbeat opt-out list kept changing; try again');
  }

  /** One tick: sweep, Resolver probe, scheduled fan-out. Never throws. */
  async tick(): Promise<{ swept: number; resolverProbed: boolean; sent: number }> {
    const out = { swept: 0, resolverProbed: false, sent: 0 };
    try {
      const settings = await this.settings();
      out.swept = await this.sweep(settings);
      out.resolverProbed = await this.#probeResolver(settings);
      if (settings.enabled && (await this.#claim(CLAIM_ENDPOINTS, settings.intervalSeconds))) {
        out.sent = await this.#fanOut(settings);
      }
    } catch (err) {
      this.#d.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'heartbeat tick failed');
    }
    return out;
  }

  /** "Send now": one probe per included endpoint, whatever the schedule says. */
  async sendNow(auditor: string): Promise<{ count: number }> {
    const settings = await this.settings();
    const count = await this.#fanOut(settings);
    // The scheduled send counts from now, so it does not follow right behind.
    const claim = await this.#d.docs.read<{ lastSentAt: string }>(CLAIM_ENDPOINTS);
    await this.#d.docs.write(CLAIM_ENDPOINTS, { lastSentAt: this.#d.now().toISOString() }, claim ? claim.etag : null);
    await this.#audit('SendHeartbeatNow', auditor, { count });
    return { count };
  }

  /**
   * Pending probes older than the timeout turn Off, unless the endpoint is answering other messages (busy: the
   * probe is queued behind them; see evidence.ts) or its last answer could not be read (left for a later sweep, at
   * most UNKNOWN_EVIDENCE_TIMEOUTS timeouts past the later of the deadline and the last answer seen: then Off, with a
   * warning). Catalog endpoints, and then any endpoint no longer in the catalog with an overdue Pending probe (sent
   * before it left): nothing else would ever settle that probe, and /api/endpoints shows such an endpoint. Returns
   * how many turned Off.
   */
  async sweep(settings?: HeartbeatSettings): Promise<number> {
    const s = settings ?? (await this.settings());
    const nowMs = this.#d.now().getTime();
    const cutoff = nowMs - s.timeoutSeconds * 1000;
    let swept = 0;
    for (const endpointId of this.endpointIds) swept += await this.#sweepEndpoint(endpointId, s, nowMs, cutoff);
    for (const endpointId of await this.#retiredWithOverdueProbes(cutoff)) swept += await this.#sweepEndpoint(endpointId, s, nowMs, cutoff);
    const resolver = await this.#d.store.getServiceHealth(Address.Resolver);
    if (resolver?.lastProbeMessageId && resolver.lastProbeSentAt && Date.parse(resolver.lastProbeSentAt) <= cutoff) {
      // Conditional on the probe still being unanswered: the Resolver's answer may land after the read above.
      if (await this.#d.store.turnServiceProbeOff(Address.Resolver, resolver.lastProbeMessageId)) swept++;
    }
    return swept;
  }

  /** Endpoints outside the catalog with a Pending probe sent before the cutoff; a failed read is logged and skipped. */
  async #retiredWithOverdueProbes(cutoff: number): Promise<string[]> {
    const inCatalog = new Set(this.endpointIds);
    try {
      const ids = await this.#d.store.listOverduePendingHeartbeatEndpoints(new Date(cutoff).toISOString());
      return ids.filter((id) => !inCatalog.has(id));
    } catch (err) {
      this.#warn(`heartbeat: could not list overdue probes of endpoints outside the catalog (${err instanceof Error ? err.message : String(err)}); left for a later sweep`);
      return [];
    }
  }

  /** One endpoint's overdue Pending probes turned Off where the evidence says so; returns how many. */
  async #sweepEndpoint(endpointId: string, s: HeartbeatSettings, nowMs: number, cutoff: number): Promise<number> {
    let swept = 0;
    const records = await this.#d.store.listHeartbeats(endpointId, 20);
    let handled: Promise<string | null | undefined> | undefined; // looked up once, and only when a probe is overdue
    for (const r of records) {
      if (r.status !== 'Pending' || !r.sentAt || Date.parse(r.sentAt) > cutoff) continue;
      // Always asked, whatever the reads' back-off says: once per tick is already the back-off's cap, and the
      // sweep is what decides the probe (its answer, or failure, updates the back-off for the reads).
      handled ??= lastHandledAt(this.#d.store, endpointId, this.#warn, nowMs);
      // Unknown (the lookup failed): left for a later sweep, not turned Off on no evidence - up to a bound counted
      // from the newest answer an earlier lookup saw (a busy endpoint's probe may have been overdue for minutes).
      const verdict = overdueVerdict(await handled, r.sentAt, nowMs, s.timeoutSeconds, lastAnswerSeen(endpointId));
      if (verdict === 'busy' || verdict === 'undecided') continue;
      // Re-read before writing: a reply may have landed since the list (the reply then wins). One landing after this
      // read is caught by the write itself, which turns the probe Off only while it is still Pending (etag-checked).
      const fresh = (await this.#d.store.listHeartbeats(endpointId, 20)).find((x) => x.probeId === r.probeId);
      if (fresh && fresh.status !== 'Pending') continue;
      if (!(await this.#d.store.turnPendingHeartbeatOff(endpointId, r.probeId))) continue;
      if (verdict === 'offUnknown')
        this.#d.log.warn(
          { endpointId, probeId: r.probeId, sentAt: r.sentAt },
          `heartbeat: probe turned Off without evidence: its endpoint's last answer could not be read for ${UNKNOWN_EVIDENCE_TIMEOUTS} timeouts past its deadline and its last answer seen`,
        );
      swept++;
    }
    return swept;
  }

  async overview(): Promise<HealthOverview> {
    const [settings, excluded, resolver, claim] = await Promise.all([
      this.versionedSettings(),
      this.excluded(),
      this.#d.store.getServiceHealth(Address.Resolver),
      this.#d.docs.read<{ lastSentAt: string }>(CLAIM_ENDPOINTS),
    ]);
    const nowMs = this.#d.now().getTime();
    const { timeoutSeconds } = settings;
    // The counters are read once, and only if some endpoint's probe is overdue (the backlog it may be queued behind).
    let counts: Promise<Map<string, number>> | undefined;
    const pendingOf = async (id: string) => {
      // A failed read of the counters leaves the backlog unknown (null); it never fails the Health page.
      counts ??= this.#d.store
        .getAllCounts()
        .then((c) => new Map(c.endpoints.map((e) => [e.endpointId, e.pending])))
        .catch((err: unknown) => {
          this.#warn(`heartbeat: could not read the endpoints' counters (${(err as Error)?.message ?? String(err)}); backlog unknown`);
          return new Map<string, number>();
        });
      return (await counts).get(id) ?? null;
    };
    const endpoints = await Promise.all(
      this.endpointIds.map(
        async (id) =>
          (await readEndpointHealth(this.#d.store, id, !excluded.has(id), { nowMs, timeoutSeconds, backlog: () => pendingOf(id), warn: this.#warn })).health,
      ),
    );
    return {
      settings: {
        enabled: settings.enabled,
        intervalSeconds: settings.intervalSeconds,
        timeoutSeconds: settings.timeoutSeconds,
        lastSentAt: claim?.value.lastSentAt ?? null,
        version: settings.version,
      },
      resolver: resolverHealth(resolver),
      endpoints,
      generatedAt: this.#d.now().toISOString(),
    };
  }

  /**
   * Claims the send for this interval: the claim document's lastSentAt is moved to now with If-Match on the
   * version read (or created if absent). Only one replica's conditional write can succeed per interval.
   */
  async #claim(name: string, intervalSeconds: number): Promise<boolean> {
    const now = this.#d.now();
    const doc = await this.#d.docs.read<{ lastSentAt: string }>(name);
    if (doc && Date.parse(doc.value.lastSentAt) > now.getTime() - intervalSeconds * 1000) return false;
    return this.#d.docs.write(name, { lastSentAt: now.toISOString() }, doc ? doc.etag : null);
  }

  async #probeResolver(settings: HeartbeatSettings): Promise<boolean> {
    if (!(await this.#claim(CLAIM_RESOLVER, settings.intervalSeconds))) return false;
    const now = this.#d.now().toISOString();
    const probeId = randomUUID();
    const previous = await this.#d.store.getServiceHealth(Address.Resolver);
    // "In flight" is recorded before the send: the Resolver clears it when it settles the probe.
    await this.#d.store.setServiceHealth({
      ...(previous ?? { serviceId: Address.Resolver, status: 'Unknown' }),
      lastProbeSentAt: now,
      lastProbeMessageId: probeId,
    });
    await this.#send(Topic.Resolver, {
      messageId: probeId,
      sessionId: WellKnownSession.ResolverHeartbeat,
      to: Address.Resolver,
      sentAt: now,
    });
    return true;
  }

  async #fanOut(settings: HeartbeatSettings): Promise<number> {
    const excluded = await this.excluded();
    let sent = 0;
    for (const endpointId of this.endpointIds) {
      if (excluded.has(endpointId)) continue;
      const probeId = randomUUID();
      const now = this.#d.now().toISOString();
      // The Pending record first: a reply can never arrive before the record it updates is expected.
      await this.#d.store.recordHeartbeat({ endpointId, probeId, status: 'Pending', sentAt: now, intervalSeconds: settings.intervalSeconds });
      try {
        await this.#send(endpointId, { messageId: probeId, sessionId: WellKnownSession.Heartbeat, to: endpointId, sentAt: now });
        sent++;
      } catch (err) {
        // Left Pending: the sweep turns it Off after the timeout, which is what the operator should see.
        this.#d.log.warn({ endpointId, err: err instanceof Error ? err.message : String(err) }, 'heartbeat probe not sent');
      }
    }
    return sent;
  }

  async #send(topic: string, p: { messageId: string; sessionId: string; to: string; sentAt: string }): Promise<void> {
    let sender = this.#senders.get(topic);
    if (!sender) {
      sender = this.#d.client.createSender(topic);
      this.#senders.set(topic, sender);
    }
    const probe: ServiceBusMessage = {
      messageId: p.messageId,
      correlationId: p.messageId,
      sessionId: p.sessionId,
      contentType: 'application/json',
      body: Buffer.from(eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: p.sentAt }), 'utf8'),
      applicationProperties: toWireProperties({
        [Prop.To]: p.to,
        // Straight to the topic, not through the Manager topic's rule: the scheduler stamps From itself.
        [Prop.From]: Address.Manager,
        [Prop.MessageType]: MessageType.EventRequest,
        [Prop.EventId]: p.messageId,
        [Prop.EventTypeId]: HEARTBEAT_EVENT_TYPE_ID,
        [Prop.OriginatingFrom]: Address.Manager,
        [Prop.OriginatingMessageId]: SELF,
        [Prop.ParentMessageId]: SELF,
        [Prop.RetryCount]: 0,
      }),
    };
    const s = sender;
    await withSendSpan(topic, probe, () => s.sendMessages(probe));
  }

  async #audit(type: string, auditor: string, data: Record<string, unknown>): Promise<void> {
    await this.#d.store.recordAudit({ eventId: ADMIN_AUDIT_EVENT, type, auditor, data: JSON.stringify(data).slice(0, 4096) });
  }
}

export function resolverHealth(h: ServiceHealth | null): ResolverHealth {
  if (!h) return { status: 'Unknown', version: null, lastSeenAt: null, lastProbeSentAt: null, probeInFlight: false, roundTripMs: null };
  return {
    status: h.status,
    version: h.version,
    lastSeenAt: h.lastSeenAt,
    lastProbeSentAt: h.lastProbeSentAt,
    probeInFlight: h.lastProbeMessageId != null,
    roundTripMs: h.roundTripMs,
  };
}

export interface HeartbeatSchedulerOptions extends HeartbeatDeps {
  /** Default 30 s. */
  tickMs?: number;
  /** Run the first tick at once (default true). */
  immediate?: boolean;
}

export interface HeartbeatScheduler {
  service: HeartbeatService;
  /** Stops the timer, waits for a running tick, closes the senders. */
  stop(): Promise<void>;
}

/** Runs the tick on a timer until stop(). Ticks never overlap. */
export function startHeartbeatScheduler(options: HeartbeatSchedulerOptions): HeartbeatScheduler {
  const service = new HeartbeatService(options);
  const tickMs = options.tickMs ?? TICK_MS;
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = service.tick().finally(() => schedule(tickMs));
    }, ms);
    timer.unref?.();
  };
  schedule(options.immediate === false ? tickMs : 0);
  return {
    service,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running.catch(() => undefined);
      await service.close();
    },
  };
}
