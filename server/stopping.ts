// The process-wide "the console is stopping" signal. Next's stop (server/shutdown.ts) closes its HTTP server and
// waits for every request in flight; a long-poll (the Agent API's receive, up to 30 s) would hold that wait past the
// stop's grace, so the process would exit 1 with its clients never closed. The stop aborts this signal first thing,
// and long waits end on it as they do when their time runs out.
//
// On globalThis, like shutdown.ts's own state: Next bundles its own copy of the modules into the instrumentation
// hook (where the stop is installed) apart from the route handlers' copy, and both must see one signal.
const KEY = Symbol.for('nimbus.console.stopping');
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as { controller?: AbortController };

/** Aborted once the console has begun to stop (never, in a process that is not stopping). */
export function stoppingSignal(): AbortSignal {
  return (slot.controller ??= new AbortController()).signal;
}

/** The stop's first step (server/shutdown.ts): every long wait that listens ends now. */
export function markStopping(): void {
  (slot.controller ??= new AbortController()).abort(new Error('the console is stopping'));
}
