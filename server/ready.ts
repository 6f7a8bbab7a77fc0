// Readiness probe: one cheap call to each dependency, each bounded in time, reported separately.
import { Topic } from '../lib/contract/index.ts';
import type { ConsoleContext } from './context.ts';

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);

/** Same key as resolver-worker/state.ts: the Resolvers running in this process (the embedded launcher's). */
const RESOLVER_STATES_KEY = Symbol.for('nimbus.resolver.states');
type ResolverStateView = () => { receiving: boolean; halted: { reason: string; since: string } | null };

/**
 * The Resolver's word when it runs in this process: not ready while it has stopped receiving because the store
 * denies it access. Undefined when no Resolver runs here (a standalone one reports through its log and liveness).
 */
function resolverReadiness(): string | undefined {
  const states = (globalThis as Record<symbol, unknown>)[RESOLVER_STATES_KEY] as Set<ResolverStateView> | undefined;
  if (!states || states.size === 0) return undefined;
  for (const state of states) {
    const s = state();
    if (s.halted) return `not receiving since ${s.halted.since}: ${s.halted.reason}`;
  }
  return 'ok';
}

export async function checkReady(ctx: ConsoleContext): Promise<{ ready: boolean; cosmos: string; serviceBus: string; resolver?: string }> {
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
  return resolver === undefined ? { ready, cosmos, serviceBus } : { ready, cosmos, serviceBus, resolver };
}
