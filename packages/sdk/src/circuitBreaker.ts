// The endpoint circuit breaker (opt-in): counts retry-disposition and transient handler outcomes; when too many
// happen within a window it opens and the host stops receiving (messages stay untouched on the subscription, so a
// downstream outage does not burn every session's retry budget). After a pause it half-opens: one delivery probes;
// success closes it, failure opens it again. It never changes how a delivery is settled.
import { Backoff } from './backoff.ts';
import { causeChain } from './errors.ts';
import type { CircuitState } from './pipeline.ts';
import type { ErrorClass } from './retryPolicies.ts';

export interface CircuitBreakerOptions {
  /** Failures within `windowMs` that open the circuit. Default 5. */
  failureThreshold?: number;
  windowMs?: number;
  /** How long the circuit stays open before a probe. Default 30 s. */
  openDurationMs?: number;
  /**
   * The first pause after a half-open probe slot is given back without an outcome (no message came), doubling on
   * each further one up to a tenth of `openDurationMs` (at least this). Default 100 ms.
   */
  probePauseMs?: number;
  /** Error types that never count (e.g. a throttled error that carries its own Retry-After). */
  exclude?: readonly ErrorClass[];
  now?: () => number;
}

export type BreakerOutcome = 'success' | 'failure' | 'ignored';

export class CircuitBreaker {
  private stateValue: CircuitState = 'Closed';
  private failures: number[] = [];
  private openedAt = 0;
  private probing = false;
  /** HalfOpen: no probe before this (epoch ms), after a probe slot was given back without an outcome. */
  private probeAfter = 0;
  private readonly probePause: Backoff;
  private readonly listeners: Array<(from: CircuitState, to: CircuitState) => void> = [];
  private readonly threshold: number;
  private readonly windowMs: number;
  private readonly openMs: number;
  private readonly now: () => number;

  private readonly options: CircuitBreakerOptions;

  constructor(options: CircuitBreakerOptions = {}) {
    this.options = options;
    this.threshold = Math.max(1, options.failureThreshold ?? 5);
    this.windowMs = options.windowMs ?? 60_000;
    this.openMs = options.openDurationMs ?? 30_000;
    this.now = options.now ?? Date.now;
    const firstPause = Math.max(1, options.probePauseMs ?? 100);
    this.probePause = new Backoff({ initialMs: firstPause, maxMs: Math.max(firstPause, this.openMs / 10) });
  }

  get state(): CircuitState {
    if (this.stateValue === 'Open' && this.now() - this.openedAt >= this.openMs) this.transition('HalfOpen');
    return this.stateValue;
  }

  onStateChange(listener: (from: CircuitState, to: CircuitState) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Whether a worker may take a delivery now. In HalfOpen only one probe at a time is allowed, and none during the
   * pause after a probe slot was given back without an outcome.
   */
  tryAcquire(): boolean {
    const s = this.state;
    if (s === 'Closed') return true;
    if (s === 'Open' || this.probing || this.now() < this.probeAfter) return false;
    this.probing = true;
    return true;
  }

  /**
   * Gives back a HalfOpen probe slot taken by tryAcquire without an outcome (e.g. no message came). The next probe
   * waits a pause that doubles with each such release until an outcome: taken again at once, the workers would
   * accept and release sessions in a tight loop while the endpoint has nothing to probe with.
   */
  release(): void {
    if (!this.probing) return;
    this.probing = false;
    if (this.stateValue === 'HalfOpen') this.probeAfter = this.now() + this.probePause.next();
  }

  /**
   * How long a worker should wait before accepting a session, since tryAcquire would refuse it until then: what is
   * left of the open pause; in HalfOpen, the pause after a released probe slot, or, while another worker holds the
   * probe, a short wait for its outcome (the first probe pause). 0 when Closed or a probe may be taken now.
   */
  get acquireWaitMs(): number {
    const s = this.state;
    if (s === 'Closed') return 0;
    if (s === 'Open') return this.remainingOpenMs;
    if (this.probing) return this.probePause.initial;
    return Math.max(0, this.probeAfter - this.now());
  }

  /** Milliseconds until the circuit may half-open (0 when it is not open). */
  get remainingOpenMs(): number {
    return this.stateValue === 'Open' ? Math.max(0, this.openMs - (this.now() - this.openedAt)) : 0;
  }

  record(outcome: BreakerOutcome, error?: unknown): void {
    if (outcome === 'ignored') return;
    if (outcome === 'failure' && error !== undefined && this.isExcluded(error)) return;
    const state = this.state;
    if (state === 'HalfOpen') {
      this.probing = false;
      this.probeAfter = 0;
      this.probePause.reset();
      if (outcome === 'success') {
        this.failures = [];
        this.transition('Closed');
      } else {
        this.open();
      }
      return;
    }
    if (outcome === 'success' || state === 'Open') return;
    const t = this.now();
    this.failures = this.failures.filter((f) => t - f < this.windowMs);
    this.failures.push(t);
    if (this.failures.length >= this.threshold) this.open();
  }

  private open(): void {
    this.openedAt = this.now();
    this.probeAfter = 0;
    this.probePause.reset();
    this.failures = [];
    this.transition('Open');
  }

  private isExcluded(error: unknown): boolean {
    const excluded = this.options.exclude ?? [];
    return causeChain(error).some((e) => excluded.some((t) => e instanceof t));
  }

  private transition(to: CircuitState): void {
    const from = this.stateValue;
    if (from === to) return;
    this.stateValue = to;
    for (const l of this.listeners) {
      try {
        l(from, to);
      } catch {
        // an observer must not break the breaker
      }
    }
  }
}
