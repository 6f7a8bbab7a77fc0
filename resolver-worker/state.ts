// The Resolvers running in this process, for readiness. The embedded launcher runs the Resolver in the console's
// process; the console's /api/ready (server/ready.ts) reads this registry through the same global symbol, without
// importing the worker (server/ does not depend on resolver-worker/). A standalone Resolver's state shows in its
// log and, to the console, as a Resolver liveness probe that goes unanswered (Admin → Health).
import type { ResolverState } from './processor.ts';

/** The global key; server/ready.ts reads the same one. */
export const RESOLVER_STATES_KEY = Symbol.for('nimbus.resolver.states');

type Registry = Set<() => ResolverState>;

function registry(): Registry {
  const g = globalThis as Record<symbol, unknown>;
  return (g[RESOLVER_STATES_KEY] ??= new Set()) as Registry;
}

/** Registers a running Resolver's state; the returned function unregisters it (on stop). */
export function registerResolverState(state: () => ResolverState): () => void {
  registry().add(state);
  return () => registry().delete(state);
}
