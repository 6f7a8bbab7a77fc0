// A short-lived signal per broker call, linked to a long-lived stop signal. @azure/service-bus leaves an abort
// listener behind on the signal of some calls (receiveMessages' drain path), so handing the host's stop signal to
// every call grew its listener list without bound and made Node print MaxListenersExceededWarning. With one child
// per call the stop signal carries only our own listener for the duration of the call, and whatever the client
// leaves on the child is collected with it. The Resolver's processor (resolver-worker/processor.ts) uses the same
// helper for its accepts, sessions and receives; this module imports nothing, so it costs that worker nothing.

/**
 * Runs `call` with a fresh signal that aborts (with the same reason) when `parent` aborts, or when the first of
 * several parents does (the host's stop signal and its circuit signal, for a delivery).
 */
export async function withLinkedSignal<T>(
  parent: AbortSignal | readonly AbortSignal[],
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const parents: readonly AbortSignal[] = Array.isArray(parent) ? parent : [parent as AbortSignal];
  const child = new AbortController();
  const already = parents.find((p) => p.aborted);
  if (already) child.abort(already.reason);
  const relays = parents.map((p) => {
    const relay = () => child.abort(p.reason);
    p.addEventListener('abort', relay, { once: true });
    return () => p.removeEventListener('abort', relay);
  });
  try {
    return await call(child.signal);
  } finally {
    for (const remove of relays) remove();
  }
}
