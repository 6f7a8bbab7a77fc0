// Error kinds an adapter author (or the SDK itself) throws to choose a failure path. The names mirror the
// specification's exception table; everything not listed here goes through the failure-disposition classifier.

/**
 * An infrastructure fault where redelivering the identical message is the right answer (a lost session lock, a
 * transient broker error). Nothing is settled and nothing reaches the Resolver: the lock expires and the broker
 * redelivers. Not the tool for downstream outages - use a typed error with a retry rule for those.
 */
export class TransientError extends Error {
  override readonly name: string = 'TransientError';
}

/** A failure that retrying cannot fix: the message is dead-lettered and the Resolver notified, never retried. */
export class PermanentFailureError extends Error {
  override readonly name: string = 'PermanentFailureError';
}

/** No handler is registered for the event type: the Resolver records Unsupported, the session is not blocked. */
export class EventHandlerNotFoundError extends Error {
  override readonly name: string = 'EventHandlerNotFoundError';
}

/**
 * Thrown by a pipeline behaviour that already dead-lettered the message itself (see ctx.deadLetter): the SDK then
 * only sends the Resolver notification and does not dead-letter a second time.
 */
export class MessageAlreadyDeadLetteredError extends Error {
  override readonly name: string = 'MessageAlreadyDeadLetteredError';
}

/** The built-in cause of a HandoffFailedRequest, carrying the text and type the external system reported. */
export class HandoffFailedError extends Error {
  override readonly name: string = 'HandoffFailedError';
  readonly errorType: string | null;
  constructor(message: string, errorType: string | null = null) {
    super(message);
    this.errorType = errorType;
  }
}

/**
 * Implemented by an error that knows how long the downstream system asked us to wait (an HTTP Retry-After). A
 * matching retry policy then waits at least this long, still capped at its MaxDelay; the policy still decides
 * whether to retry at all.
 */
export interface RetryAfterHint {
  readonly retryAfterMs: number;
}

export function isRetryAfterHint(value: unknown): value is RetryAfterHint {
  return (
    value != null &&
    typeof value === 'object' &&
    typeof (value as { retryAfterMs?: unknown }).retryAfterMs === 'number' &&
    Number.isFinite((value as { retryAfterMs: number }).retryAfterMs) &&
    (value as { retryAfterMs: number }).retryAfterMs >= 0
  );
}

/** The error and its inner causes (`cause`, then AggregateError members), outermost first; cycles are cut. */
export function causeChain(error: unknown, maxDepth = 16): unknown[] {
  const out: unknown[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0 && out.length < maxDepth) {
    const current = queue.shift();
    if (current == null || seen.has(current)) continue;
    seen.add(current);
    out.push(current);
    if (typeof current === 'object') {
      const cause = (current as { cause?: unknown }).cause;
      if (cause !== undefined) queue.push(cause);
      if (current instanceof AggregateError) queue.push(...current.errors);
    }
  }
  return out;
}

/** The longest Retry-After hint in the chain, or undefined when no error carries one. */
export function retryAfterHintMs(error: unknown): number | undefined {
  let best: number | undefined;
  for (const e of causeChain(error)) {
    if (isRetryAfterHint(e) && (best === undefined || e.retryAfterMs > best)) best = e.retryAfterMs;
  }
  return best;
}

/** Simple type name of an error as the Resolver shows it (ErrorType). */
export function errorTypeName(error: unknown): string {
  if (error instanceof Error) return error.name || error.constructor.name || 'Error';
  return typeof error;
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/**
 * Searchable text of an error for substring retry rules: every error in the chain with its name, message and
 * stack, innermost first (the reference searched the inner exception's text, then the wrapper's).
 */
export function errorSearchText(error: unknown): string {
  return causeChain(error)
    .reverse()
    .map((e) => (e instanceof Error ? `${e.name}: ${e.message}\n${e.stack ?? ''}` : errorMessage(e)))
    .join(' ');
}

/**
 * True when the error is the cancellation of the given signal (the processor stopping, or the endpoint circuit
 * opening), not an ordinary failure: the signal is aborted and its reason is the error itself (what fetch rejects
 * with) or in the error's cause chain (Node's AbortError from timers/promises, events and streams carries it as
 * `cause`). An AbortError by name alone proves nothing: a handler's own deadline (AbortSignal.timeout, its own
 * AbortController) raises one too, and that is a failure to record even while the host is stopping.
 */
export function isCancellationOf(error: unknown, signal: AbortSignal | undefined): boolean {
  if (!signal?.aborted) return false;
  const reason: unknown = signal.reason;
  if (error === reason) return true;
  if (reason === undefined || reason === null) return false;
  return causeChain(error).includes(reason);
}
