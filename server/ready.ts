// Readiness probe: one cheap call to each dependency, each bounded in time, reported separately. The probe is
// unauthenticated (load balancers call it), so anyone can call it in a loop: the answer is computed at most once
// per READY_CACHE_MS per process and shared by every caller meanwhile (also while one check is running), and it
// says which dependency is not ready without its error text, since configuration errors name file paths.
import { Topic } from '@nimbus/sdk/contract';
import { DEADLINE_PASSED, raceDeadline } from '../lib/concurrency/deadline.ts';
import type { ConsoleContext } from './context.ts';
import { log } from './log.ts';

export const READY_CACHE_MS = 5_000;

export interface Readiness {
  ready: boolean;
  cosmos: string;
  serviceBus: string;
  /** When this answer was computed (answers are shared for a few seconds). */
  checkedAt: string;
  /** Present when a Resolver runs in this process: `ok`, or why it stopped receiving. */
  resolver?: string;
}

/** `p`, or a rejection when it has not settled within `ms`. Unref'd: a check in flight does not hold the process. */
async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  const answer = await raceDeadline(p, { ms, unref: true });
  if (answer === DEADLINE_PASSED) throw new Error(`no answer within ${ms} ms`);
  return answer;
}

/** Same key as resolver-worker/state.ts: the Resolvers running in this process (the embedded launcher's). */
const RESOLVER_STATES_KEY = Symbol.for('nimbus.resolver.states');
type ResolverStateView = () => {
  receiving: boolean;
  halted: { reason: string; since: string } | null;
  storeUnavailable?: { since: string } | null;
};

/**
 * The Resolver's word when it runs in this process: not ready while it has stopped receiving because the store
 * denies it access, or while the store does not answer (it takes no session until it does). Undefined when no Resolver runs here (a standalone one reports through its log and liveness).
 */
function resolverReadiness(): string | undefined {
  const states = (globalThis as Record<symbol, unknown>)[RESOLVER_STATES_KEY] as Set<ResolverStateView> | undefined;
  if (!states || states.size === 0) return undefined;
  for (const state of states) {
    const s = state();
    if (s.halted) return `not receiving since ${s.halted.since}: ${s.halted.reason}`;
    // Not "messages are held": after a release at the lock horizon, or with nothing in hand, none are.
    if (s.storeUnavailable) return `not receiving since ${s.storeUnavailable.since}: the store does not answer; no session is taken until it does`;
  }
  return 'ok';
}

export async function checkReady(ctx: ConsoleContext): Promise<Readiness> {
  const [cosmos, serviceBus] = await Promise.all([
    withTimeout(ctx.store.getAllCounts(), 5000).then(
      () => 'ok',
      (e: unknown) => `unreachable: ${e instanceof Error ? e.name : 'error'}`,
    ),
    withTimeout(ctx.serviceBus.admin.topicExists(Topic.Manager), 5000).then(
      (exists) => (exists ? 'ok' : 'the Manager topic does not exist (provision the topology)'),
      (e: unknown) => `unreachable: ${e instanceof Error ? e.name : 'error'}`,
    ),
  ]);
  const resolver = resolverReadiness();
  const ready = cosmos === 'ok' && serviceBus === 'ok' && (resolver === undefined || resolver === 'ok');
  const checkedAt = new Date().toISOString();
  return resolver === undefined ? { ready, cosmos, serviceBus, checkedAt } : { ready, cosmos, serviceBus, resolver, checkedAt };
}

/** The shared answer: in flight (no doneAt yet), or computed at doneAt. */
type Slot = { doneAt?: number; answer: Promise<Readiness> } | undefined;
const cache = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.ready')] ??= { slot: undefined as Slot }) as { slot: Slot };

/**
 * The readiness answer, from the cache when it is younger than READY_CACHE_MS. A console that cannot open its
 * connections (bad configuration, catalog missing) is not ready; the reason goes to the log, not to the caller.
 */
export function readiness(open: () => Promise<ConsoleContext>): Promise<Readiness> {
  const hit = cache.slot;
  if (hit && (hit.doneAt === undefined || Date.now() - hit.doneAt < READY_CACHE_MS)) return hit.answer;
  const answer = open().then(checkReady, (err: unknown) => {
    log.error({ err: err instanceof Error ? { name: err.name, message: err.message } : String(err) }, 'readiness: the console could not open its connections');
    const why = err instanceof Error && /Config|Catalog/.test(err.name) ? 'not configured (see the console log)' : 'unavailable (see the console log)';
    return { ready: false, cosmos: why, serviceBus: why, checkedAt: new Date().toISOString() };
  });
  const slot: NonNullable<Slot> = { answer };
  cache.slot = slot;
  void answer.then(() => (slot.doneAt = Date.now()));
  return answer;
}
