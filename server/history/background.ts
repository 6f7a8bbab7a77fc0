// The console's background duties for history and alerts, started by the launcher beside the heartbeat
// scheduler (scripts/start-stack.ts) and safe on every replica: each runs under its own lease, so one replica
// does it at a time.
//   - metrics-collector: the backlog sample of every topic once a minute; retention (roll-up and deletion) every
//     tenth sample;
//   - alerts-evaluator: the alert rules every 30 s.
// Settings (validated; errors name the variable): NIMBUS_ALERTS_TICK_MS, NIMBUS_METRICS_SAMPLE_MS,
// NIMBUS_CONSOLE_URL (links in notices), NIMBUS_ALERTS_KEY (channel secrets, read when needed).
import { z } from 'zod';
import { FAILURE_STATUSES, LeaseStore } from '../../lib/store/index.ts';
import { AlertStore } from '../alerts/alertStore.ts';
import { startAlertEvaluator, DEFAULT_TICK_MS } from '../alerts/evaluator.ts';
import { alertSources } from '../alerts/sources.ts';
import type { FailureGroupSource } from '../alerts/conditions.ts';
import type { ConsoleContext } from '../context.ts';
import type { HealthOverview } from '../heartbeat/scheduler.ts';
import { log as defaultLog } from '../log.ts';
import { collectBacklog } from './backlog.ts';
import { startLeaderLoop, type LeaderLoop } from './leader.ts';
import { consoleTimeSeries } from './metrics.ts';

export const METRICS_LEASE = 'metrics-collector';

const envSchema = z.object({
  NIMBUS_ALERTS_TICK_MS: z.coerce.number().int().min(200).max(3_600_000).default(DEFAULT_TICK_MS),
  NIMBUS_METRICS_SAMPLE_MS: z.coerce.number().int().min(200).max(3_600_000).default(60_000),
  NIMBUS_CONSOLE_URL: z.url().optional(),
  PORT: z.coerce.number().int().optional(),
});

export interface BackgroundSettings {
  alertsTickMs: number;
  metricsSampleMs: number;
  consoleUrl: string;
}

export function readBackgroundSettings(env: Record<string, string | undefined> = process.env): BackgroundSettings {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([k, v]) => k in envSchema.shape && v !== undefined && v !== ''));
  const r = envSchema.safeParse(cleaned);
  if (!r.success) throw new Error(`invalid settings: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return {
    alertsTickMs: r.data.NIMBUS_ALERTS_TICK_MS,
    metricsSampleMs: r.data.NIMBUS_METRICS_SAMPLE_MS,
    consoleUrl: r.data.NIMBUS_CONSOLE_URL ?? `http://127.0.0.1:${r.data.PORT ?? 3000}`,
  };
}

export interface ConsoleBackground {
  metrics: LeaderLoop;
  alerts: LeaderLoop;
  stop(): Promise<void>;
}

/**
 * Heartbeat overview in the shape the alert sources read, from the console's heartbeat service. Exported so the
 * heartbeat rules are tested through this exact mapping (server/alerts/heartbeatRules.test.ts).
 */
export async function heartbeatsOf(ctx: ConsoleContext) {
  const { getOpsServices } = await import('../heartbeat/services.ts');
  return heartbeatsFromOverview(await getOpsServices(ctx).heartbeat.overview());
}

/**
 * The mapping itself, for tests that drive a heartbeat service of their own (an injected clock). An endpoint whose
 * evidence is unknown (its last answer could not be read, and the sweep still leaves its probe Pending) is marked
 * `unknown`: it may be busy, so "heartbeat missing" would be a guess, but it may as well be dead, so the rule must
 * not read it as fine either (left out, a firing alert recovered and its next firing could fall in the cooldown).
 * Once the sweep's bound passes it counts again.
 */
export function heartbeatsFromOverview(o: HealthOverview) {
  return {
    enabled: o.settings.enabled,
    endpoints: o.endpoints.map((e) => ({ endpointId: e.endpointId, included: e.included, lastSeenAt: e.lastSeenAt, busy: e.busy, unknown: e.evidenceUnknown === true })),
    resolverLastSeen: o.resolver.lastSeenAt,
  };
}

export function startBackground(
  ctx: ConsoleContext,
  settings: BackgroundSettings,
  options: { owner?: string; failureGroups?: FailureGroupSource; env?: Record<string, string | undefined>; log?: typeof defaultLog } = {},
): ConsoleBackground {
  const log = options.log ?? defaultLog;
  const leases = new LeaseStore(ctx.store.database);
  const series = consoleTimeSeries(ctx);
  let samples = 0;
  const metrics = startLeaderLoop({
    leases,
    name: METRICS_LEASE,
    everyMs: settings.metricsSampleMs,
    ...(options.owner ? { owner: options.owner } : {}),
    log,
    work: async (signal) => {
      await collectBacklog(ctx.serviceBus.admin, series, new Date());
      if (samples++ % 10 === 0 && !signal.aborted) {
        const r = await series.maintain();
        if (r.rolledUp + r.deleted > 0) log.info({ ...r }, 'metrics retention: rolled up and deleted old buckets');
      }
    },
  });
  const alerts = startAlertEvaluator({
    leases,
    everyMs: settings.alertsTickMs,
    ...(options.owner ? { owner: options.owner } : {}),
    alerts: new AlertStore(ctx.store.database, options.env ?? process.env),
    sources: alertSources({
      database: ctx.store.database,
      series,
      admin: ctx.serviceBus.admin,
      heartbeats: () => heartbeatsOf(ctx),
      ...(options.failureGroups ? { failureGroups: options.failureGroups } : {}),
    }),
    consoleUrl: settings.consoleUrl,
    env: options.env ?? process.env,
    log,
  });
  return {
    metrics,
    alerts,
    stop: async () => {
      await Promise.all([metrics.stop(), alerts.stop()]);
    },
  };
}

/** The launcher's entry: the console's own context and the environment's settings. */
export async function startConsoleBackground(env: Record<string, string | undefined> = process.env): Promise<ConsoleBackground> {
  const { getContext } = await import('../context.ts');
  const ctx = await getContext(env);
  return startBackground(ctx, readBackgroundSettings(env), { env, failureGroups: storeFailureGroups(ctx) });
}

/** The "new failure group" rule's view of the failure groups (server/failures/groups.ts): one entry per group and endpoint. */
export function storeFailureGroups(ctx: ConsoleContext): FailureGroupSource {
  return {
    available: true,
    async list(endpointId) {
      const { failureGroups } = await import('../failures/groups.ts');
      const view = await failureGroups(ctx.store, {
        ...(endpointId ? { endpointId } : {}),
        status: [...FAILURE_STATUSES],
      });
      return view.groups.flatMap((g) =>
        g.endpoints
          .filter((e) => endpointId === null || e.endpointId === endpointId)
          .map((e) => ({ fingerprint: g.groupId, endpointId: e.endpointId, count: e.count, label: `${g.errorType}: ${g.title}`.slice(0, 200) })),
      );
    },
  };
}
