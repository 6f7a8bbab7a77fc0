// What the Operations → Reconcile route handlers call: request schema and glue.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { isServiceBusError } from '@azure/service-bus';
import { holdLease, isStoreError, type LeaseStore } from '../../lib/store/index.ts';
import { log } from '../log.ts';
import { conflict } from '../http.ts';
import { leasesOf, replicaId } from '../leases.ts';
import type { ConsoleContext } from '../context.ts';
import { applyReconcile, previewReconcile } from './reconcile.ts';
import { applyStuckRepairs } from './stuck.ts';
import { findDrainingSessions, repairDrainingSessions, type DrainingScan, type DrainingScanOptions } from './draining.ts';
import { inScope, type ReadScope } from '../auth/readScope.ts';
import { endpointIdParam } from '../schemas.ts';

const rowTarget = {
  // The id rule of every endpoint the API takes: a session repair uses it as the topic and subscription names, so a
  // path ("billingendpoint/Subscriptions/x") or a padded id must be a 400, never a broker call. The route checks it
  // names a catalog endpoint.
  endpointId: endpointIdParam,
  eventId: z.string().min(1).max(128),
  sessionId: z.string().max(128),
  rowMessageId: z.string().min(1).max(128),
};

export const reconcileApplyBody = z
  .object({
    /** Stale Pending rows: re-apply the stored response. */
    targets: z.array(z.object(rowTarget).strict()).max(500).default([]),
    /** Stuck rows: re-send the command or restore the row (./stuck.ts). */
    repairs: z
      .array(z.object({ ...rowTarget, kind: z.enum(['claim', 'unanswered', 'refused', 'parked']), action: z.enum(['resend', 'restore']) }).strict())
      .max(500)
      .default([]),
    /** Sessions draining with a gap: move the replay past it (./draining.ts). */
    sessions: z
      .array(z.object({ endpointId: rowTarget.endpointId, sessionId: z.string().min(1).max(128), nextReplaySequence: z.number().int().min(0) }).strict())
      .max(100)
      .default([]),
  })
  .strict()
  .refine((b) => b.targets.length + b.repairs.length + b.sessions.length > 0, 'name at least one: targets (stale rows), repairs (stuck rows) or sessions (draining sessions)');

/** Every endpoint a request touches: each must be allowed (route handler). */
export function reconcileEndpoints(body: z.output<typeof reconcileApplyBody>): string[] {
  return [...new Set([...body.targets, ...body.repairs, ...body.sessions].map((t) => t.endpointId))];
}

/**
 * Which part of the preview a GET asks for: `rows` (stale rows, stuck rows, overdue handoffs: store reads only, quick),
 * `sessions` (the broker's session scan, bounded by its time budget) or both (no `part`: what clients from before the
 * split read). The page asks for the two apart so the rows never wait for the broker.
 */
export const reconcilePreviewQuery = z.object({ part: z.enum(['rows', 'sessions']).optional() });

const endpointsInScope = (ctx: ConsoleContext, scope: ReadScope) => ctx.catalog.endpoints.map((e) => e.id).filter((id) => inScope(scope, id));

/** The row findings of the catalog's endpoints within `scope` (an endpoint's Reader sees that endpoint's rows only). */
export function reconcileRowsPreview(ctx: ConsoleContext, scope: ReadScope = { all: true }) {
  return previewReconcile(ctx.store, endpointsInScope(ctx, scope));
}

export type DrainingPreview = DrainingScan & { error?: string };

/**
 * Why a session scan failed, in words safe to show any reader: a broker error by its code, a store error by its
 * own message (ours), anything else as unexpected. The raw message of a broker error can name the namespace's host
 * and its links; it goes to the log instead.
 */
export function scanFailure(err: unknown): string {
  if (isServiceBusError(err)) return `the broker answered ${err.code}`;
  if (isStoreError(err)) return err.message;
  return 'an unexpected error (logged on the console)';
}

// Scans running now, by scope: callers asking for the same endpoints while one runs get its answer. A scan locks
// the sessions it reads on the live subscriptions for up to its time budget; ten operators opening the page at
// once must not make ten such scans.
const scansRunning = new Map<string, Promise<{ draining: DrainingPreview; generatedAt: string }>>();

/** The session scan within `scope`; without the broker (or the store) it answers its error, never throws. */
export function reconcileSessionsPreview(ctx: ConsoleContext, scope: ReadScope = { all: true }, options?: DrainingScanOptions) {
  const endpoints = endpointsInScope(ctx, scope);
  // Options (tests' budgets) make a scan of its own.
  const key = options ? undefined : endpoints.join('\n');
  const running = key === undefined ? undefined : scansRunning.get(key);
  if (running) return running;
  const scan = scanSessions(ctx, endpoints, options);
  if (key !== undefined) {
    scansRunning.set(key, scan);
    // Removed however the scan ends (it answers its error, but a rejection must not go unhandled here either).
    const forget = () => void scansRunning.delete(key);
    scan.then(forget, forget);
  }
  return scan;
}

async function scanSessions(ctx: ConsoleContext, endpoints: string[], options?: DrainingScanOptions) {
  const started = Date.now();
  const draining: DrainingPreview = await findDrainingSessions(ctx.serviceBus.client, ctx.store, endpoints, options).catch((err: unknown) => {
    log.warn({ err: err instanceof Error ? { name: err.name, message: err.message } : String(err) }, 'reconcile: the session scan failed');
    return {
      sessions: [],
      busy: 0,
      candidates: 0,
      checked: 0,
      scanLimited: false,
      elapsedMs: Date.now() - started,
      error: `sessions could not be scanned: ${scanFailure(err)}`,
    };
  });
  return { draining, generatedAt: new Date().toISOString() };
}

/**
 * The whole preview, for clients that ask for both parts in one answer. The two parts run side by side; the answer
 * still waits for the session scan, at most its time budget (`draining.scanLimited` then says it was cut short).
 */
export async function reconcilePreview(ctx: ConsoleContext, scope: ReadScope = { all: true }) {
  const [rows, { draining }] = await Promise.all([reconcileRowsPreview(ctx, scope), reconcileSessionsPreview(ctx, scope)]);
  return { ...rows, draining };
}

/** One reconcile at a time across all console replicas: the apply holds this lease while it writes. */
export const RECONCILE_LEASE = 'reconcile';
export const RECONCILE_LEASE_TTL_MS = 30_000;

/**
 * Runs `work` holding the reconcile lease; a 409 when another replica (or another request here) is reconciling.
 * Two applies at once would not corrupt rows (every repair is conditional), but they would race on the same
 * findings and report each other's repairs as "unchanged"; one at a time keeps the operator's result true.
 */
export async function withReconcileLease<T>(leases: LeaseStore, owner: string, work: (signal: AbortSignal) => Promise<T>, ttlMs = RECONCILE_LEASE_TTL_MS): Promise<T> {
  const held = await holdLease(leases, RECONCILE_LEASE, owner, { ttlMs });
  if (!held) {
    const holder = await leases.holder(RECONCILE_LEASE).catch(() => undefined);
    throw conflict(
      `another reconcile is running${holder ? ` (until ${new Date(holder.expiresAt).toISOString()} at the latest unless renewed)` : ''}; try again when it has finished`,
    );
  }
  try {
    return await work(held.signal);
  } finally {
    await held.release();
  }
}

export function reconcileApply(ctx: ConsoleContext, body: z.output<typeof reconcileApplyBody>, auditor: string) {
  // The owner is unique per request, so two requests to one replica exclude each other too.
  return withReconcileLease(leasesOf(ctx.store), `${replicaId()}:${randomUUID().slice(0, 8)}`, () => reconcileApplyNow(ctx, body, auditor));
}

type Outcomes = { repaired: number; unchanged: number };
const outcomesOf = (results: readonly { outcome: 'repaired' | 'unchanged' }[]): Outcomes => ({
  repaired: results.filter((r) => r.outcome === 'repaired').length,
  unchanged: results.filter((r) => r.outcome === 'unchanged').length,
});

/** What a reconcile's audit entry keeps of its answer: how many of each kind were repaired or left unchanged. */
export function reconcileOutcomes(r: Awaited<ReturnType<typeof reconcileApplyNow>>): Outcomes & { stale: Outcomes; stuck: Outcomes; draining: Outcomes } {
  return { repaired: r.repaired, unchanged: r.unchanged, stale: outcomesOf(r.results), stuck: outcomesOf(r.repairs), draining: outcomesOf(r.sessions) };
}

/**
 * A reconcile over several endpoints: each one's part of the counts its entry keeps (targets, repairs and sessions
 * named, and outcomes), for a reader of one of them (server/audit/readerScope.ts). Empty for one endpoint.
 */
export function reconcileOutcomesByEndpoint(body: z.output<typeof reconcileApplyBody>, r: Awaited<ReturnType<typeof reconcileApplyNow>>) {
  const endpoints = reconcileEndpoints(body);
  if (endpoints.length < 2) return {};
  const partOf = (endpointId: string) => {
    const on = <T extends { endpointId: string }>(list: readonly T[]) => list.filter((t) => t.endpointId === endpointId);
    const answersOn = <T extends { target: { endpointId: string } }>(list: readonly T[]) => list.filter((a) => a.target.endpointId === endpointId);
    const [results, repairs, sessions] = [answersOn(r.results), answersOn(r.repairs), answersOn(r.sessions)];
    const counts = { targets: on(body.targets).length, repairs: on(body.repairs).length, sessions: on(body.sessions).length };
    return { ...counts, ...reconcileOutcomes({ ...outcomesOf([...results, ...repairs, ...sessions]), results, repairs, sessions }) };
  };
  return { byEndpoint: Object.fromEntries(endpoints.map((e) => [e, partOf(e)])) };
}

async function reconcileApplyNow(ctx: ConsoleContext, body: z.output<typeof reconcileApplyBody>, auditor: string) {
  const stale = body.targets.length > 0 ? await applyReconcile(ctx.store, body.targets, auditor) : { repaired: 0, unchanged: 0, results: [] };
  const repairs = await applyStuckRepairs({ store: ctx.store, manager: ctx.manager }, body.repairs, auditor, { now: new Date() });
  const sessions = body.sessions.length > 0 ? await repairDrainingSessions(ctx.serviceBus.client, ctx.store, body.sessions, auditor) : [];
  const repaired = [...repairs, ...sessions].filter((r) => r.outcome === 'repaired').length;
  return {
    repaired: stale.repaired + repaired,
    unchanged: stale.unchanged + repairs.length + sessions.length - repaired,
    results: stale.results,
    repairs,
    sessions,
  };
}
