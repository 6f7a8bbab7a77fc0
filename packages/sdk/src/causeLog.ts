// Logs a failing broker call once per cause, not once per attempt or per worker: eight workers that cannot accept a
// session because the subscription is gone print one warning with the broker's message, not eight warnings every
// backoff step. Repeats go to debug (with the backoff delay); the first success after a failure logs that it works
// again, with how many repeats were held back.
import type { Logger } from 'pino';
import { errorSummary } from './dispatcher.ts';

/**
 * An Error for pino's `err` serializer. A summary object there reads as `type: "Object"` with an empty stack, and so
 * does a broker error that is not an Error instance (an AMQP `{ condition, description }`): those become an Error
 * with the broker's name, description and condition.
 */
export function loggableError(error: unknown): Error {
  if (error instanceof Error) return error;
  const summary = errorSummary(error);
  const wrapped = new Error(summary.message);
  wrapped.name = summary.type;
  if (summary.code !== undefined) (wrapped as Error & { code?: string }).code = summary.code;
  return wrapped;
}

export class CauseLog {
  /** Causes currently failing, by operation: cause key → repeats not logged at warn. */
  private readonly active = new Map<string, Map<string, number>>();

  private readonly log: Logger;
  private readonly context: Record<string, unknown>;

  constructor(log: Logger, context: Record<string, unknown>) {
    this.log = log;
    this.context = context;
  }

  failed(operation: string, error: unknown, extra: Record<string, unknown> = {}): void {
    const err = errorSummary(error);
    const key = `${err.code ?? err.type}: ${err.message}`;
    let causes = this.active.get(operation);
    if (!causes) this.active.set(operation, (causes = new Map()));
    const repeats = causes.get(key);
    if (repeats === undefined) {
      causes.set(key, 0);
      // The error itself (pino's serializer keeps its type, code and stack); the summary only names the cause.
      this.log.warn(
        { ...this.context, ...extra, err: loggableError(error) },
        `${operation} failed: ${err.message}`,
      );
    } else {
      causes.set(key, repeats + 1);
      this.log.debug({ ...this.context, ...extra, error: err }, `${operation} failed again (same cause)`);
    }
  }

  succeeded(operation: string): void {
    const causes = this.active.get(operation);
    if (!causes) return;
    this.active.delete(operation);
    const repeats = [...causes.values()].reduce((a, b) => a + b, 0);
    this.log.info({ ...this.context, causes: [...causes.keys()], repeats }, `${operation} works again`);
  }
}
