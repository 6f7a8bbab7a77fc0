// A broker call waited for at most a bound. When a connection drops in the middle of a call, @azure/service-bus can
// leave it unanswered for its own 60 s operation timeout and longer (a session receiver's completeMessage and close,
// an acceptSession, a send: 60-90 s measured), whatever `retryOptions.timeoutInMs` says. Most calls cannot be
// cancelled and may still finish after the bound: their value then goes to `late` (to release what it opened), and a
// late failure is dropped. The deferred processor bounds every call of a replay pass with it, the subscriber host
// every call of a delivery and the close of its session receivers.
//
// The call gets a signal that aborts when the wait is given up, for the client calls that take one (a send, the
// session state). Giving those up matters beyond the call: a send whose link was being opened when the connection
// dropped holds that link's lock on a claim request nobody answers, and the client's reconnect waits for that lock,
// so every call on the client (accepts included) waited the full 60 s. Aborted, the request is dropped at once.

/** A call that did not answer within its bound: the connection it ran on is presumably lost. */
export class OperationTimeoutError extends Error {
  override readonly name = 'OperationTimeoutError';
  readonly operation: string;
  readonly timeoutMs: number;
  constructor(operation: string, timeoutMs: number, consequence?: string) {
    super(`${operation} did not answer within ${timeoutMs} ms (connection lost?)${consequence ? `; ${consequence}` : ''}`);
    this.operation = operation;
    this.timeoutMs = timeoutMs;
  }
}

export interface BoundedCallOptions<T> {
  timeoutMs: number;
  /** What the caller does about a timeout, appended to the error's message ("the pass is given up"). */
  consequence?: string | undefined;
  /** Gives the wait up at once when aborted, rejecting with `stopMessage`. */
  signal?: AbortSignal;
  stopMessage?: string;
  /** Receives the value of a call that answered after it was given up. */
  late?: ((value: T) => void) | undefined;
}

/** The longest delay setTimeout honours (about 24.8 days); a longer one fires after 1 ms. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** `call()`, or a rejection after `timeoutMs` (OperationTimeoutError) or when `signal` aborts. */
export function boundedCall<T>(
  what: string,
  call: (abortSignal: AbortSignal) => Promise<T>,
  options: BoundedCallOptions<T>,
): Promise<T> {
  const { timeoutMs, signal } = options;
  const givenUp = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onStop);
      return true;
    };
    const giveUp = (error: Error) => {
      reject(error);
      givenUp.abort(error);
    };
    // Clamped: Node runs a delay above 2^31-1 ms (or Infinity) after 1 ms, so a bound meant as "very long" gave up at once.
    const timer = setTimeout(() => {
      if (finish()) giveUp(new OperationTimeoutError(what, timeoutMs, options.consequence));
    }, Math.min(timeoutMs, MAX_TIMER_DELAY_MS));
    const onStop = () => {
      if (finish()) giveUp(new Error(`${what} given up: ${options.stopMessage ?? 'stopping'}`));
    };
    signal?.addEventListener('abort', onStop, { once: true });
    if (signal?.aborted) onStop();
    let pending: Promise<T>;
    try {
      pending = call(givenUp.signal);
    } catch (error) {
      // A call that throws synchronously (a closed receiver) fails like one that rejects.
      pending = Promise.reject(error);
    }
    pending.then(
      (value) => {
        if (finish()) resolve(value);
        else options.late?.(value);
      },
      (error: unknown) => {
        if (finish()) reject(error);
      },
    );
  });
}

/**
 * Bounds the calls made over one link (a session receiver and the sender its deliveries answer through). After one
 * call has timed out the link is taken for lost and later calls fail at once instead of each waiting out the bound:
 * a delivery whose completion met a dropped connection would otherwise wait once more for every step after it.
 * When `attemptAfterLoss` answers true for the call that timed out, later calls are still made, each with its own
 * bound: for a delivery whose later steps matter more than the time they may cost (the last one the budget allows,
 * whose dead-letter notification tells the Resolver). Once `stopSignal` aborts, a call not yet started is refused at
 * once (one already running keeps its bound): for the calls whose wait a stop must not add to (the subscriber host's
 * walk behind a call given up, where each would otherwise wait out its bound on a silent connection). With
 * `stopRefuses: 'lostBeforeStop'` only a link lost to a call started before the stop is refused so: a link that was
 * silent already when the stop came (its call in flight then timed out), whose later calls would each wait out their
 * bound too; a healthy link - or one lost only to a call the stop itself started - keeps making its calls.
 */
export class BoundedLink {
  private timedOut: OperationTimeoutError | undefined;
  /** Whether the call that timed out first was started before the stop signal aborted. */
  private timedOutBeforeStop = false;
  private readonly timeoutMs: number;
  private readonly consequence: string | undefined;
  private readonly attemptAfterLoss: (lostTo: OperationTimeoutError) => boolean;
  private readonly stopSignal: AbortSignal | undefined;
  private readonly stopRefuses: 'all' | 'lostBeforeStop';

  constructor(
    timeoutMs: number,
    consequence?: string,
    options: {
      attemptAfterLoss?: (lostTo: OperationTimeoutError) => boolean;
      stopSignal?: AbortSignal | undefined;
      /** Which calls an aborted stopSignal refuses: every one (the default), or only a link's lost before the stop. */
      stopRefuses?: 'all' | 'lostBeforeStop';
    } = {},
  ) {
    this.timeoutMs = timeoutMs;
    this.consequence = consequence;
    this.attemptAfterLoss = options.attemptAfterLoss ?? (() => false);
    this.stopSignal = options.stopSignal;
    this.stopRefuses = options.stopRefuses ?? 'all';
  }

  /** True once a call over this link has timed out. */
  get lost(): boolean {
    return this.timedOut !== undefined;
  }

  /** The first call over this link that timed out. */
  get lostTo(): OperationTimeoutError | undefined {
    return this.timedOut;
  }

  /**
   * True once a call over this link timed out that was started before the stop signal aborted (or with no stop
   * signal): the link was lost before any stop, not by a call the stop's own work made.
   */
  get lostBeforeStop(): boolean {
    return this.timedOutBeforeStop;
  }

  run<T>(what: string, call: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.stopSignal?.aborted && (this.stopRefuses === 'all' || this.timedOutBeforeStop)) {
      const reason: unknown = this.stopSignal.reason;
      return Promise.reject(
        new Error(`${what} not attempted: ${reason instanceof Error ? reason.message : 'stopping'}`, { cause: reason }),
      );
    }
    const lostTo = this.timedOut;
    if (lostTo && !this.attemptAfterLoss(lostTo))
      return Promise.reject(new Error(`${what} not attempted: ${lostTo.message}`, { cause: lostTo }));
    const startedBeforeStop = this.stopSignal?.aborted !== true;
    return boundedCall(what, call, { timeoutMs: this.timeoutMs, consequence: this.consequence }).catch(
      (error: unknown) => {
        if (error instanceof OperationTimeoutError && this.timedOut === undefined) {
          this.timedOut = error;
          this.timedOutBeforeStop = startedBeforeStop;
        }
        throw error;
      },
    );
  }
}
